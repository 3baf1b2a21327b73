"""Raw ASGI helpers: bodies, responses, OpenAI-shaped errors, Server-Timing, request context.

No web framework: each request costs a dict lookup for routing and a handful of awaits, since
the server's own CPU per request is noise in every client benchmark.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import orjson

__all__ = [
    "REQUEST_ID",
    "SSE_KEEPALIVE",
    "TRACEPARENT",
    "Abort",
    "BodyTimeout",
    "BodyTooLarge",
    "Cut",
    "Delivery",
    "Receive",
    "Scope",
    "Send",
    "cancel_on_disconnect",
    "close_quietly",
    "configure_logging",
    "error_body",
    "header",
    "read_body",
    "send_bytes",
    "server_timing",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]



class Abort(Exception):
    """Raised inside the app to abort the response (fault ``reset``): the server resets the
    HTTP/2 stream (RST_STREAM) or closes the HTTP/1.1 connection mid-body."""


class Cut(Exception):
    """Fault ``cut_after``: end the stream here, without finish_reason or [DONE]."""


# An SSE comment: what a stream without a ping event of its own sends to keep a connection
# alive (WHATWG HTML, "Server-sent events": lines starting with a colon are ignored).
SSE_KEEPALIVE = b": ping\n\n"


class Delivery:
    """Sends a stream's chunks (encoded bytes), applying the stream faults of ``fault``
    (a :class:`~benchmarks.server.faults.FaultSpec` or None) as it goes: ``cut_after`` raises
    :class:`Cut` before chunk N, ``reset_after`` raises :class:`Abort` before chunk N,
    ``stall_after`` goes silent before chunk N until the request is cancelled (the client left),
    or for ``resume_ms``, ``pings_after`` sends only ``keepalive`` every ``ping_ms`` instead
    (as long), ``error_after`` sends ``error`` (the route's error event) and raises :class:`Cut`
    (without one: just the cut), ``malformed_sse`` cuts the second chunk's JSON short."""

    def __init__(self, send: Send, fault: Any, keepalive: bytes = SSE_KEEPALIVE,
                 error: bytes | None = None) -> None:
        self._send = send
        self._fault = fault
        self._keepalive = keepalive
        self._error = error
        self.sent = 0

    async def __call__(self, data: bytes) -> None:
        fault = self._fault
        if fault is not None:
            if fault.cut_after is not None and self.sent >= fault.cut_after:
                raise Cut
            if fault.reset_after is not None and self.sent >= fault.reset_after:
                raise Abort(f"injected reset after {self.sent} chunks")
            if fault.error_after is not None and self.sent >= fault.error_after:
                if self._error is not None:
                    await self._send({"type": "http.response.body", "body": self._error, "more_body": True})
                raise Cut
            if fault.stall_after is not None and self.sent == fault.stall_after:
                logging.getLogger("benchmarks.server.app").info("fault: stall after %d chunks", self.sent)
                await _silence(fault.resume_ms)
            if fault.pings_after is not None and self.sent == fault.pings_after:
                logging.getLogger("benchmarks.server.app").info("fault: pings only after %d chunks", self.sent)
                await self._pings(fault.ping_ms, fault.resume_ms)
            if fault.malformed_sse and self.sent == 1:
                data = data[: len(data) // 2] + b"\n\n"
        await self._send({"type": "http.response.body", "body": data, "more_body": True})
        self.sent += 1

    async def _pings(self, every_ms: int, for_ms: int | None) -> None:
        """Keep-alives and nothing else, until the client leaves (or ``for_ms`` has passed)."""
        loop = asyncio.get_running_loop()
        end = None if for_ms is None else loop.time() + for_ms / 1000
        while end is None or loop.time() < end:
            wait = every_ms / 1000 if end is None else min(every_ms / 1000, end - loop.time())
            await asyncio.sleep(max(0.0, wait))
            if end is None or loop.time() < end:
                await self._send({"type": "http.response.body", "body": self._keepalive, "more_body": True})


async def _silence(resume_ms: int | None) -> None:
    if resume_ms is not None:
        await asyncio.sleep(resume_ms / 1000)  # a pause: then the stream goes on
    else:
        await asyncio.Event().wait()  # until cancelled: the client went away


async def cancel_on_disconnect(receive: Receive, task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (a request's handler) when its client disconnects."""
    message = await receive()
    if message["type"] == "http.disconnect" and task is not None:
        logging.getLogger("benchmarks.server.app").info("client disconnected; cancelling the request")
        task.cancel()


async def close_quietly(it: Any) -> None:
    """Close an engine's token stream (an async generator), logging what closing raises."""
    aclose = getattr(it, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            logging.getLogger("benchmarks.server.app").debug("closing an engine stream failed", exc_info=True)


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
TRACEPARENT: contextvars.ContextVar[str] = contextvars.ContextVar("traceparent", default="-")

# OpenAI's error "type" per status (API reference, "Error codes"); 4xx are the caller's fault.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}
# Server-Timing metric order (W3C Server Timing): the stages of one request.
TIMING_ORDER = ("queue", "prefill", "decode", "image", "serialize", "total")


class BodyTooLarge(ValueError):
    pass


class BodyTimeout(TimeoutError):
    """The request body did not arrive in time (HTTP 408)."""


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (names are lower-case in ASGI)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def read_body(receive: Receive, limit: int, timeout_s: float | None = None) -> bytes:
    """The whole request body: BodyTooLarge past ``limit`` bytes, BodyTimeout when it has not
    all arrived ``timeout_s`` after the call (a client that stops sending mid-body)."""
    if timeout_s is None:
        return await _read_body(receive, limit)
    task = asyncio.current_task()
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    # call_later + cancel, not wait_for: no extra task per request on the hot path.
    timer = asyncio.get_running_loop().call_later(timeout_s, expire)
    try:
        return await _read_body(receive, limit)
    except asyncio.CancelledError:
        if not expired:
            raise
        if hasattr(task, "uncancel"):  # 3.11+: this cancellation was ours, and is handled
            task.uncancel()
        raise BodyTimeout(f"the request body did not arrive within {timeout_s:g} s") from None
    finally:
        timer.cancel()


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("client disconnected while sending the body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def error_body(status: int, message: str, param: str | None = None,
               code: str | None = None, type_: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""
    kind = type_ or ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def server_timing(timings: dict[str, float]) -> str:
    """``queue;dur=1.2, prefill;dur=3.4`` (W3C Server Timing, ``dur`` in milliseconds)."""
    keys = [k for k in TIMING_ORDER if k in timings] + sorted(set(timings) - set(TIMING_ORDER))
    return ", ".join(f"{k};dur={_ms(timings[k])}" for k in keys)


def _ms(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"


async def send_bytes(send: Send, status: int, body: bytes, content_type: str,
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", content_type.encode()),
                    (b"content-length", str(len(body)).encode()), *headers],
    })
    await send({"type": "http.response.body", "body": body})


def json_bytes(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


class _ContextFilter(logging.Filter):
    """Stamps every log record with the current request's id and incoming traceparent."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        record.traceparent = TRACEPARENT.get()
        return True


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()  # stderr: stdout carries only the READY line
    handler.addFilter(_ContextFilter())
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s request_id=%(request_id)s "
        "traceparent=%(traceparent)s %(message)s"))
    root = logging.getLogger("benchmarks.server")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
