"""What every framework scenario script shares (each runs in its framework's own venv, with this
folder first on its path): which client package a run hands the framework, how a failed
scenario is reported, and how an error that a framework let out is described for the comparison
with the official client's run."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["attempt", "client_module", "failure", "official_error"]


def client_module(kind: str, official: str) -> Any:
    """The package whose client a run hands the framework: ``llmclient`` for the ``llmclient``
    run, else the official one (``openai`` or ``anthropic``)."""
    return importlib.import_module("llmclient" if kind == "llmclient" else official)


def failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error": f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:400]}


def attempt(run: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = run()
    except Exception as exc:  # reported, and compared with the official client's run
        return failure(exc)
    return result


def official_error(exc: BaseException, expected: str) -> dict[str, Any]:
    """The error as the framework let it out: whether it is the official class expected, its
    official classes (most derived first), its status code and llmclient's trace id on it."""
    import openai

    return {"ok": isinstance(exc, getattr(openai, expected)),
            "error": [k.__name__ for k in type(exc).__mro__ if k.__module__.split(".")[0] == "openai"],
            "status_code": getattr(exc, "status_code", None),
            "trace_id": bool(getattr(exc, "trace_id", None))}
