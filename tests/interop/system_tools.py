"""System programs the interop tests run (nginx, tinyproxy), as scripts/ensure-system-deps.sh
installs them: a test that needs one skips where it is missing, and fails in CI, whose set-up
installs them, so that CI never passes by skipping."""

from __future__ import annotations

import os
import shutil

import pytest


def need(tool: str) -> None:
    """Skip the test (fail it in CI) when ``tool`` is not on PATH."""
    if shutil.which(tool) is None:
        why = f"{tool} is not installed: scripts/ensure-system-deps.sh installs it (as root)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
