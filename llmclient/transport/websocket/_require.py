"""The ``ws`` extra's guard: the ``websockets`` package (13 or later), or an ImportError that
says how to install it. Imported first by the package, before anything that needs it."""

from __future__ import annotations

__all__ = ["EXTRA", "require_websockets"]

EXTRA = "pip install 'llmclient[ws]'"
MIN_MAJOR = 13  # the sans-I/O ClientProtocol API this transport uses


def require_websockets() -> None:
    try:
        from websockets.version import version  # an optional dependency: the ws extra
    except ImportError as exc:
        raise ImportError("llmclient's WebSocket transport needs the websockets package "
                          f"({MIN_MAJOR} or later): {EXTRA}") from exc
    if int(version.split(".", 1)[0]) < MIN_MAJOR:
        raise ImportError(f"llmclient's WebSocket transport needs websockets {MIN_MAJOR} or "
                          f"later, found {version}: {EXTRA}")
