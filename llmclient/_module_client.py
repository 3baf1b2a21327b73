"""The module-level client: ``llmclient.api_key = ...; llmclient.chat.completions.create(...)``.

As in the official package (openai/_module_client.py), ``llmclient.chat``, ``.completions``,
``.embeddings`` and ``.models`` stand for the same resources of a client built from the module's
settings (``api_key``, ``organization``, ``project``, ``base_url``, ``timeout``,
``max_retries``, ``default_headers``, ``default_query``, ``http_client``; unset ones come from
the environment as usual). The client is built on first use and again whenever a setting
changes.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ._client import OpenAI
from .pipeline.call import NOT_GIVEN

__all__ = ["SETTINGS", "load_client", "resource_proxy"]

SETTINGS = ("api_key", "organization", "project", "base_url", "timeout", "max_retries",
            "default_headers", "default_query", "http_client")
_lock = threading.Lock()
_state: dict[str, Any] = {"client": None, "settings": None}


def _current() -> list[Any]:
    module = sys.modules["llmclient"]
    return [getattr(module, name, None) for name in SETTINGS]


def load_client() -> Any:
    """The module's client for its current settings (built again after a setting changed)."""
    settings = _current()
    with _lock:
        client = _state["client"]
        if client is None or _state["settings"] != settings:
            kwargs = {name: value for name, value in zip(SETTINGS, settings, strict=True)
                      if value is not None}
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = NOT_GIVEN
            client = _state["client"] = OpenAI(**kwargs)
            _state["settings"] = settings
        return client


class _ResourceProxy:
    """``llmclient.chat`` and the like: every attribute read goes to the current client's."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(getattr(load_client(), self._name), attr)

    def __repr__(self) -> str:
        return f"<llmclient module-level {self._name}>"


def resource_proxy(name: str) -> _ResourceProxy:
    return _ResourceProxy(name)
