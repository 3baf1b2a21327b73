"""Run one snippet with a given SDK module and reduce what happened to comparable data: its
result (ids and timestamps replaced), or the exception it raised (class and status), and the
requests it put on the wire."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from .wire import WireProxy

MODEL = "gpt-4o-mini"
SNIPPETS: dict[str, Callable[..., Any]] = {}
_ID_KEYS = frozenset({"id", "created", "created_at", "tool_call_id", "_request_id", "request_id",
                      "system_fingerprint"})
_ID_RE = re.compile(r"\b(chatcmpl|cmpl|call|req|resp|msg|srv)[-_][A-Za-z0-9_-]+")


def snippet(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register a snippet: ``fn(sdk, env)`` (or ``async def``) returning plain data."""
    SNIPPETS[fn.__name__] = fn
    return fn


@dataclass
class Env:
    """What a snippet may use besides the SDK module: the server behind the recording proxy."""

    base_url: str
    origin: str
    model: str = MODEL
    patch: Any = None  # monkeypatch.setattr, undone after the snippet (module-level settings)


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<id>" if k in _ID_KEYS and v is not None else normalise(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return _ID_RE.sub(r"\1-<id>", value)
    return value


def run(sdk_name: str, fn: Callable[..., Any], proxy: WireProxy, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    sdk = importlib.import_module(sdk_name)
    with monkeypatch.context() as m:
        env = Env(base_url=proxy.url + "/v1", origin=proxy.url, patch=m.setattr)
        m.setenv("OPENAI_BASE_URL", env.base_url)
        m.setenv("OPENAI_API_KEY", "sk-dropin")
        for name in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "AZURE_OPENAI_API_KEY",
                     "AZURE_OPENAI_AD_TOKEN", "OPENAI_API_VERSION", "AZURE_OPENAI_ENDPOINT"):
            m.delenv(name, raising=False)
        proxy.recorder.take()
        try:
            result = fn(sdk, env)
            if inspect.iscoroutine(result):
                result = asyncio.run(result)
            outcome: dict[str, Any] = {"result": normalise(result)}
        except Exception as exc:  # the comparison is the point: both must raise the same
            outcome = {"raised": type(exc).__name__, "status": getattr(exc, "status_code", None)}
    outcome["wire"] = normalise([r.comparable() for r in proxy.recorder.take()])
    return outcome
