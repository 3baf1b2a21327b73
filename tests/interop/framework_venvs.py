"""A virtual environment per framework, for frameworks that pin other versions of ``openai`` (or
of its dependencies) than the main test environment has: instructor pins ``jiter`` and an
older ``openai``, pydantic-ai another, llama-index-llms-openai wants ``openai<3``. Each is created once under a cache directory
(``$LLMCLIENT_INTEROP_CACHE``, else ``~/.cache/llmclient-interop``), named by a hash of what
it holds, and filled from PyPI with the framework and llmclient's runtime dependencies;
llmclient itself is this checkout (``PYTHONPATH``), so the test runs the code under test.
The scenarios run there as scripts (``frameworks/``) against the session's reference server
and print one JSON object."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "frameworks"
INSTALL_TIMEOUT_S = 900


def cache_dir() -> Path:
    return Path(os.environ.get("LLMCLIENT_INTEROP_CACHE") or Path.home() / ".cache" / "llmclient-interop")


def runtime_dependencies() -> list[str]:
    """llmclient's own ``[project] dependencies`` (pyproject.toml)."""
    import tomllib  # Python 3.11+ (the interop suite's)

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def framework_python(name: str, requirements: list[str]) -> Path:
    """The Python of the venv for ``name`` with ``requirements`` (created on first use)."""
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


def run_scenarios(python: Path, script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """``frameworks/<script>`` in that venv, llmclient from this checkout; its JSON output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("ANTHROPIC_BASE_URL", None)
    out = subprocess.run([str(python), str(SCRIPTS / script), *args], capture_output=True, text=True,
                         timeout=timeout, env=env, cwd=str(ROOT), check=False)
    if out.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)} failed:\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
