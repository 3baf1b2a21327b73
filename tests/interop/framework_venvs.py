"""A virtual environment per framework, for frameworks that pin other versions of ``openai`` (or
of its dependencies) than the main test environment has: instructor pins ``jiter`` and an
older ``openai``, pydantic-ai another, llama-index-llms-openai wants ``openai<3``. Each is created once under a cache directory
(``$LLMCLIENT_INTEROP_CACHE``, else ``~/.cache/llmclient-interop``), named by a hash of what
it holds, and filled from PyPI with the framework and llmclient's runtime dependencies;
llmclient itself is this checkout (``PYTHONPATH``), so the test runs the code under test.
(The venvs are ``benchmarks/harness/venvs.py``'s, shared with the agents benchmark.) The scenarios run there as scripts (``frameworks/``) against the session's reference server
and print one JSON object."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.harness.venvs import framework_python

__all__ = ["framework_python", "run_scenarios"]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "frameworks"


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
