"""The parts of one call's send and read that the sync and async pipelines share: the attempt
loop's decisions (:class:`Attempts`), the raw-response wrapper, and the small pure helpers
they call. The pipelines themselves are ``llmclient/_async/pipeline.py`` (written once, async)
and its generated twin ``llmclient/_sync/pipeline.py``; the client mixes them in.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ..features.admit import retry_budget as _budget
from ..features.admit.priority import refused as refused_priority
from ..features.route.attempt import Routed, model_not_found
from ..features.route.cache_key import refused as refused_cache_key
from ..wire.codec import JSON_CODEC, Codec, has_token
from .retry import is_retryable_status

if TYPE_CHECKING:
    from .._client import BaseClient
    from .call import Call, CallOptions

__all__ = ["Attempts", "Port", "RawResponse", "async_sleep", "first_token_probe", "has_image_part", "off_loop",
           "response_coding", "start_task", "sync_sleep"]


@dataclass(frozen=True, slots=True)
class Port:
    """What a feature may do with the client it is attached to, and nothing more: features
    (``_features``: speculation today) get a Port, never the client.

    ``build`` makes a :class:`~llmclient.pipeline.call.Call` as the client makes one (its base URL,
    headers, credential scope, timeout and retries); ``request`` runs one through the whole
    pipeline (``request(call, make, raw=False, stream_make=None)``; the async client's returns a
    coroutine); ``lookup`` is the cache stage alone (a handle or None; a coroutine for the async
    client) and ``cache_for`` the client's response cache for a call, or None.
    """

    build: Callable[..., Call]
    request: Callable[..., Any]
    lookup: Callable[[Call], Any]
    cache_for: Callable[[Call], Any]
    defaults: CallOptions  # the client's own options (wire, images, prefetch, hedge)
    has_cache: bool  # whether the client has a response cache of its own
    is_async: bool


class RawResponse:
    """``.with_raw_response`` result: the HTTP response plus ``parse()`` for the usual object."""

    def __init__(self, http_response: httpx.Response, parsed: Any) -> None:
        self.http_response = http_response
        self._parsed = parsed

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def request_id(self) -> str | None:
        return self.http_response.headers.get("x-request-id")

    @property
    def http_version(self) -> str:
        return self.http_response.http_version

    @property
    def http_request(self) -> httpx.Request:
        return self.http_response.request

    @property
    def url(self) -> httpx.URL:
        return self.http_response.request.url

    @property
    def method(self) -> str:
        return self.http_response.request.method

    @property
    def is_closed(self) -> bool:
        return self.http_response.is_closed

    @property
    def retries_taken(self) -> int:
        record = getattr(self._parsed, "timings", None)
        return int(getattr(record, "retries", 0) or 0)

    @property
    def elapsed(self) -> datetime.timedelta:
        """Request sent to the last byte read (to the headers while a stream is unread), as the
        official client's ``http_response.elapsed``."""
        record = getattr(self._parsed, "timings", None)
        ms = getattr(record, "total_ms", None) or getattr(record, "first_byte_ms", None) or 0.0
        return datetime.timedelta(milliseconds=ms)

    @property
    def content(self) -> bytes:
        return self.http_response.content

    @property
    def text(self) -> str:
        return self.http_response.text

    def parse(self) -> Any:
        return self._parsed




def first_token_probe(response: httpx.Response, codec: Codec) -> Any:
    """``enough(piece)`` for read_until: True once the body so far holds a chunk with a token
    (decoded by a throwaway decoder; the stream's own decoder reads the same bytes again), or
    is not a stream we can read (the stream's own decoder then reports it)."""
    try:
        decoder = codec.stream_decoder(response.headers.get("content-type", ""))
    except Exception:
        return lambda piece: True

    def enough(piece: bytes) -> bool:
        try:
            return any(has_token(obj) for obj in decoder.feed(piece)) or decoder.done
        except Exception:
            return True

    return enough




def response_coding(response: httpx.Response) -> str | None:
    """The response's Content-Encoding when it is one we undo ourselves (under a cap)."""
    value = response.headers.get("content-encoding")
    if value is None:
        return None
    coding = value.strip().lower()
    return coding if coding in ("zstd", "gzip") else None




def has_image_part(body: dict[str, Any]) -> bool:
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    return True
    return False


class Attempts:
    """Where one call stands among its attempts: every decision between two attempts (retry
    or raise, how long to wait, resend plainer), shared by the sync and async send loops, which
    only do the I/O (send, read, close, sleep)."""

    __slots__ = ("attempt", "call", "client", "codec", "content", "failover", "free", "free_used", "resent",
                 "route")  # failover: the next attempt counts as none (another replica; a key refused)

    def _budget_refuses(self, retryable_failure: bool, wants_retry: bool) -> _budget.OriginBudget | None:
        """The attempt's outcome into its origin's retry budget (features/admit/retry_budget);
        the budget when it refuses the retry the policy wants."""
        policy = self.client._retry_budget
        if policy is None:
            return None
        budget = policy.for_url(self.call.base_url, self.client._redis)
        return budget if _budget.outcome(budget, retryable_failure, wants_retry) else None

    def __init__(self, client: BaseClient, call: Call, content: bytes | None, codec: Codec) -> None:
        self.client, self.call, self.content, self.codec = client, call, content, codec
        self.attempt = self.free_used = 0
        self.free = self.resent = self.failover = False
        call.record.begin()
        # several replicas (base_url=[...]): each attempt goes where the route stage says
        router = client._router
        self.route = Routed(router, call) if router is not None else None

    def request(self, on_trace: Any) -> httpx.Request:
        if self.route is not None:
            self.route.begin(self.call)
        return self.client._build_request(self.call, self.content, self.codec, on_trace)

    def after_exception(self, exc: Exception, request: httpx.Request) -> float:
        """The delay before the next attempt, or raises the public error (the original
        exception when it is not a transport error)."""
        call, client = self.call, self.client
        route = self.route
        if route is not None and route.failed(exc):  # nothing sent: the next replica, at once
            client._log_attempt(call, self.attempt, f"{call.base_url} unreachable, next replica", 0.0)
            self.failover = True
            return 0.0
        delay, self.free = client._error_retry(call, exc, self.attempt, self.free_used)
        if not isinstance(exc, httpx.TransportError):
            raise exc
        spent = None if self.free else self._budget_refuses(not isinstance(exc, httpx.UnsupportedProtocol),
                                                             delay is not None)
        err = client._connection_error(call, exc, request)
        if route is not None and delay is None:
            err.message = f"{err.message}; replicas tried: {route.describe()}"
            err.args = (err.message,)
        if spent is not None:
            raise _budget.mark_refused(err, spent) from exc
        if delay is None:
            raise err from exc
        client._log_attempt(call, self.attempt, str(err), delay)
        return delay

    def after_headers(self, response: httpx.Response) -> Literal["ok", "resend", "error"]:
        """``ok``: hand the response on; ``resend``: the origin refused our wire or coding,
        send the body once more in a plainer form (the response must be closed unread);
        ``error``: read the body and call :meth:`after_status`."""
        call = self.call
        resend = self.client._on_headers(call, response)
        if response.status_code < 400:
            if self.route is not None:
                self.route.answered(response, call.record)
            if self.client._retry_budget is not None:
                self._budget_refuses(False, False)  # a success puts a share of a token back
            return "ok"
        if resend and not self.resent:
            if self.route is not None:
                self.route.resent()
            self.resent = True
            if call.record.wire == "json":
                self.codec = JSON_CODEC
            self.content = self.client._encode(call, self.codec)
            call.record.new_attempt()
            return "resend"
        return "error"

    def after_status(self, response: httpx.Response, raw: bytes) -> float:
        """The delay before retrying an error status, or raises its public error."""
        call, client = self.call, self.client
        call.record.bytes_received += response.num_bytes_downloaded
        # A field llmclient added on its own (a derived prompt_cache_key; vLLM's priority, which
        # its default fcfs policy refuses) that the origin does not take: remembered per origin,
        # and the call sent once more without it (a 400 or 422 proves the request was not run).
        for added, refused, forget, name in (
                (call.record.cache_key, refused_cache_key, client._cache_key_refused, "prompt_cache_key"),
                (call.record.priority_field, refused_priority, client._priority_field_refused, "priority field")):
            if added is not None and refused(response.status_code, raw):
                forget(call)
                client._log_attempt(call, self.attempt, f"{name} refused, sent without it", 0.0)
                self.content = client._encode(call, self.codec)
                self.failover = True
                return 0.0
        if self.route is not None and model_not_found(response.status_code, raw) and self.route.missing_model():
            # this replica has no such model (nothing was run): the next one, now
            client._log_attempt(call, self.attempt, "404 model_not_found, trying the next replica", 0.0)
            self.failover = True
            return 0.0
        if self.route is not None:
            self.route.status(response.status_code)
        delay = client._status_retry_delay(call, response, self.attempt)
        spent = self._budget_refuses(is_retryable_status(response.status_code, response.headers), delay is not None)
        if delay is None or spent is not None:
            call.record.finish()
            err = client._status_error(call, response, raw)
            raise err if spent is None else _budget.mark_refused(err, spent)
        client._log_attempt(call, self.attempt, f"HTTP {response.status_code}", delay)
        self.free = False
        return delay

    def next(self) -> None:
        """Start the next attempt (after the caller slept the delay). A free retry (the
        request never reached the server) does not count against ``max_retries``."""
        if self.failover:  # another replica, nothing having been sent: counts as no attempt
            self.failover = False
        elif self.free:
            self.free_used += 1
        else:
            self.attempt += 1
        self.call.record.retries += 1
        self.call.record.new_attempt()


def sync_sleep(delay: float) -> None:
    """The sync pipeline's wait between attempts, the twin of :func:`async_sleep`."""
    time.sleep(delay)


async def async_sleep(delay: float) -> None:
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    await asyncio.sleep(delay)


async def off_loop(fn: Any, arg: Any) -> Any:
    """``fn(arg)`` in a worker thread (asyncio is imported here, on first use: ``import
    llmclient`` does not load it)."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    return await asyncio.to_thread(fn, arg)


def start_task(coro_fn: Callable[[], Any]) -> Any:
    """A task running ``coro_fn()`` on the running event loop, or None when no loop runs (then
    nothing is started)."""
    import asyncio  # asyncio is heavy: the async client's first use loads it, not `import llmclient`

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.create_task(coro_fn())
