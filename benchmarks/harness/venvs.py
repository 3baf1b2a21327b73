"""A virtual environment per framework, for frameworks that pin other versions of ``openai`` (or
of its dependencies) than the suite's environment has: openai-agents pins its own ``openai``,
instructor ``jiter``, llama-index-llms-openai wants ``openai<3``. Each is created once under a
cache directory (``$LLMCLIENT_INTEROP_CACHE``, else ``~/.cache/llmclient-interop``), named by a
hash of what it holds, and filled from PyPI with the framework and llmclient's runtime
dependencies. llmclient itself is never installed there: a script run in it gets this
llmclient on ``PYTHONPATH`` (:func:`llmclient_path`), so it runs the code under test. The
interop tests (``tests/interop/framework_venvs.py``) and the agents benchmark's Runner arms
(``benchmarks/agents.py``) share the venvs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

__all__ = ["OPENAI_AGENTS", "cache_dir", "framework_python", "llmclient_path", "runtime_dependencies"]

INSTALL_TIMEOUT_S = 900
# openai-agents as the interop tests and the agents benchmark run it (pinned: a run is comparable
# with the last one; it brings the openai it wants).
OPENAI_AGENTS = ["openai-agents==0.24.0"]


def cache_dir() -> Path:
    return Path(os.environ.get("LLMCLIENT_INTEROP_CACHE") or Path.home() / ".cache" / "llmclient-interop")


def _llmclient_dir() -> Path:
    import llmclient

    return Path(llmclient.__file__).resolve().parent


def runtime_dependencies() -> list[str]:
    """llmclient's own ``[project] dependencies``: from the checkout's pyproject.toml, else from
    the installed distribution's metadata (its requirements without extras)."""
    pyproject = _llmclient_dir().parent / "pyproject.toml"
    if pyproject.exists():
        import tomllib  # Python 3.11+

        return list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])
    return [r for r in metadata.requires("llmclient") or () if "extra ==" not in r]


def framework_python(name: str, requirements: list[str]) -> Path:
    """The Python of the venv for ``name`` with ``requirements`` (created on first use, from
    PyPI: minutes the first time)."""
    wanted = sorted(requirements) + sorted(runtime_dependencies())
    key = hashlib.sha256(json.dumps([name, wanted, sys.version]).encode()).hexdigest()[:12]
    venv = cache_dir() / f"{name}-{key}"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *wanted],
                   check=True, timeout=INSTALL_TIMEOUT_S)
    stamp.write_text(json.dumps(wanted))
    return python


@functools.cache
def llmclient_path() -> str:
    """A folder that holds this llmclient and nothing else (a link to its package), for a venv's
    ``PYTHONPATH``: the folder llmclient is installed in also holds this environment's
    ``openai``, which would shadow the venv's own. One per process (a temporary folder)."""
    folder = Path(tempfile.mkdtemp(prefix="llmclient-path-"))
    (folder / "llmclient").symlink_to(_llmclient_dir(), target_is_directory=True)
    return str(folder)
