"""The official client's errors as llmclient's, for what is passed through to it
(``api/passthrough.py``): the class of the same name, the same attributes, the trace id; the
``openai`` package's and, for the Anthropic face, the ``anthropic`` package's."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import httpx

from .. import _errors
from ..pipeline.tracing import parse_traceparent

__all__ = ["httpx2_errors", "translate", "translated"]


_made: dict[type[BaseException], type[_errors.OpenAIError]] = {}


def _our_class(official: type[BaseException]) -> type[_errors.OpenAIError]:
    """llmclient's class of the same name, else a subclass of the nearest one with that name
    (``InvalidWebhookSignatureError`` under our ``OpenAIError``)."""
    cls = _made.get(official)
    if cls is not None:
        return cls
    for klass in official.__mro__:
        ours = getattr(_errors, klass.__name__, None)
        if isinstance(ours, type) and issubclass(ours, _errors.OpenAIError):
            break
    else:
        ours = _errors.OpenAIError
    if ours.__name__ != official.__name__:
        ours = type(official.__name__, (ours,), {"__module__": "llmclient", "__doc__": official.__doc__})
    _made[official] = ours
    return ours


def translate(exc: BaseException) -> BaseException | None:
    """llmclient's error for an official one (same attributes, plus trace_id), else None."""
    # the official packages' own bases (whichever are imported: a face's pass-through imports its own)
    bases = tuple(base for module, name in (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))
                  if (base := getattr(sys.modules.get(module), name, None)) is not None)
    if not bases or not isinstance(exc, bases):
        return None
    cls = _our_class(type(exc))
    ours = cls.__new__(cls)
    ours.__dict__.update(vars(exc))
    ours.args = exc.args
    if isinstance(ours, _errors.APIError):
        request = ours.__dict__.get("request")
        parent = parse_traceparent(request.headers.get("traceparent", "")) if request is not None else None
        ours.trace_id = parent[0] if parent else None
        ours.timings = None
        response = ours.__dict__.get("response")
        ours.__dict__.setdefault("request_id", response.headers.get("x-request-id") if response is not None
                                 else None)
    return ours


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The official client's errors raised inside come out as llmclient's."""
    try:
        yield
    except Exception as exc:
        ours = translate(exc)
        if ours is None:
            raise
        raise ours from exc


class httpx2_errors:
    """httpx's transport errors raised as ``httpx2``'s class of the same name (``ReadTimeout``,
    ``ConnectError`` ...), so the official client's retry and error mapping read them as its own."""

    __slots__ = ("_httpx2", "_request")

    def __init__(self, httpx2: Any, request: Any) -> None:
        self._httpx2, self._request = httpx2, request

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, httpx.TransportError):
            cls = getattr(self._httpx2, type(exc).__name__, None)
            if not (isinstance(cls, type) and issubclass(cls, self._httpx2.TransportError)):
                cls = self._httpx2.TransportError
            raise cls(str(exc), request=self._request) if self._request is not None else cls(str(exc)) from exc
