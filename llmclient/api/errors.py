"""What an error status or a failed send becomes on the OpenAI face: the official client's error
classes (``_errors.py``), with the call's trace id, timings and the request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import orjson

from .._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    describe_error_body,
    describe_transport_error,
    status_error_class,
)

if TYPE_CHECKING:
    from ..pipeline.call import Call

__all__ = ["OPENAI_ERRORS", "OpenAIErrors"]

_PHASES = {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write", "PoolTimeout": "pool"}


class OpenAIErrors:
    """The OpenAI face's :class:`~llmclient.layers.context.Errors`."""

    @staticmethod
    def status_error(call: Call, response: httpx.Response, raw: bytes) -> APIStatusError:
        ctype = response.headers.get("content-type", "")
        body: object
        try:
            body = orjson.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace") if raw else None
        message = describe_error_body(response.status_code, body, raw, ctype)
        cls = status_error_class(response.status_code)
        err_body = body.get("error", body) if isinstance(body, dict) else body
        return cls(message, response=response, body=err_body, trace_id=call.trace.trace_id, timings=call.record)

    @staticmethod
    def connection_error(call: Call, exc: Exception, request: httpx.Request | None) -> APIConnectionError:
        kw: dict[str, Any] = {"trace_id": call.trace.trace_id, "timings": call.record}
        where = f"{call.method} {call.url}"
        if isinstance(exc, httpx.TimeoutException):
            phase = _PHASES.get(type(exc).__name__, "request")
            return APITimeoutError(f"Request timed out ({phase} phase) for {where}", request, **kw)
        return APIConnectionError(f"Connection error for {where}: {describe_transport_error(exc, call.url)}", request, **kw)


OPENAI_ERRORS = OpenAIErrors()
