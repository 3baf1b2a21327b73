"""``DefaultHttpxClient`` / ``DefaultAsyncHttpxClient``: httpx clients with the official
client's defaults (timeout, connection limits, redirects followed), for ``http_client=``
when a proxy or custom transport is needed. A client passed as ``http_client`` sends every
request (llmclient's own HTTP/2 connections are then not used)."""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["DefaultAsyncHttpxClient", "DefaultHttpxClient"]

# openai/_constants.py: DEFAULT_TIMEOUT and DEFAULT_CONNECTION_LIMITS.
DEFAULT_TIMEOUT = httpx.Timeout(timeout=600.0, connect=5.0)
DEFAULT_CONNECTION_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def _defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("timeout", DEFAULT_TIMEOUT)
    kwargs.setdefault("limits", DEFAULT_CONNECTION_LIMITS)
    kwargs.setdefault("follow_redirects", True)
    return kwargs


class DefaultHttpxClient(httpx.Client):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_defaults(kwargs))


class DefaultAsyncHttpxClient(httpx.AsyncClient):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_defaults(kwargs))
