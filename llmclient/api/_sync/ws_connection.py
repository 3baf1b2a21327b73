# Generated from llmclient/api/_async/ws_connection.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""``client.responses.connect()``: the Responses API's WebSocket mode on llmclient's own WebSocket
transport (``transport/websocket``), with the official client's API (openai 3.63,
``resources/responses/responses.py``): the connection manager (``send`` before the socket opens,
``on``/``off``/``once``, ``enter``/``__enter__``), the connection (``response.create(...)``,
iteration over typed server events, ``send``/``send_raw``/``recv``/``recv_bytes``/
``parse_event``/``dispatch_events``/``close``), ``on_reconnecting`` with ``max_retries``/
``initial_delay``/``max_delay``, ``max_queue_size``, ``websocket_connection_options`` and the
client's ``websocket_base_url``.

What llmclient adds (the decisions are ``layers/ws_mode.py``'s, pure):

- the client's connection set-up on the socket: its TLS verification, proxies (a CONNECT
  tunnel), TCP keepalive; a ``traceparent`` and ``X-Request-ID`` on the handshake, and a trace
  id of its own per response (a child of the connection's trace);
- ``warm=True`` starts the handshake when ``connect()`` is called, so it runs while the app
  gets ready; the socket pings on silence (the transport's heartbeat);
- one warm socket per handshake shared by the client's conversations: a conversation that
  ends (its ``with`` block, or ``close()`` with the default code) with nothing in flight leaves
  its socket to the client's next ``connect()`` with the same URL and headers (the
  credentials among them), which then starts without the TCP, TLS and upgrade round trips
  (``connection.reused``); ``ws_mode.Park`` decides, ``reuse=False`` opts out, the client's
  ``close()`` closes it;
- the client's ``stream_idle_timeout`` while a response is in flight: a stalled socket raises
  :class:`~llmclient.APITimeoutError` with ``.partial`` instead of waiting for ever;
- a socket lost mid-response loses no work the API can give back: a response whose
  ``response.created`` never arrived is sent again on a new socket; one that started and is
  stored (``store`` not False) is fetched by its id through the client's chain and finished
  from there; anything else raises :class:`~llmclient.IncompleteStreamError` with ``.partial``.
  No response is sent twice once it started;
- ``connection.timings``: per response, time to ``response.created``, to the first token, total;
- with OpenTelemetry configured, a span for the socket and a CLIENT span per response linked to
  it (``features/otel.py``: ``ws_connection_span``, ``ws_response_start``), whose context is
  the response's trace;
- errors that name the URL, the status or close code and what to do (a refused handshake is the
  official status error class: 401 ``AuthenticationError``, 404 ``NotFoundError`` ...).

Written once, as coroutines; ``scripts/unasync.py`` writes the blocking twin
(``api/_sync/ws_connection.py``), which runs on the sync driver.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import httpx
import orjson

from ..._errors import (
    APIConnectionError,
    APITimeoutError,
    IncompleteStreamError,
    MalformedResponseError,
    OpenAIError,
    status_error_class,
)
from ..._logging import logger
from ..._redact import redact_url
from ..._synchronization import Background, Event, sleep
from ...features import otel as _otel
from ...layers import ws_mode
from ...layers.ws_mode import Demux, Park, Pending, ReconnectingEvent, ResponseTimings
from ...pipeline.partial import PartialTracker
from ...pipeline.tracing import TraceContext, new_trace_context
from ..models import ResponseStreamEvent, _UnionFactory
from ..models import response as response_object

if TYPE_CHECKING:
    from ..._client_sync import OpenAI
    from ...transport.websocket import SyncWebSocket

__all__ = [
    "ResponsesConnection",
    "ResponsesConnectionManager",
    "ResponsesResponseResource",
    "WebSocketQueueFullError",
]

# The server events as the official client types them (``ResponsesServerEvent``: the stream
# events plus ``error`` and the steering events); ours without ``openai``.
server_event = _UnionFactory("openai.types.responses:ResponsesServerEvent", ResponseStreamEvent)
_NO_SOCKET = object()


class _Opened(NamedTuple):
    ws: SyncWebSocket
    key: tuple[Any, ...] | None  # its handshake's ws_mode.park_key (None: never parked)
    reused: bool  # taken from the client's park, not opened now


def _park(client: Any) -> Park[SyncWebSocket]:
    """The client's kept sockets (made on its first conversation's end or start)."""
    park: Park[SyncWebSocket] = client.__dict__.setdefault("_ws_park", Park())
    return park


def _close_all(sockets: list[SyncWebSocket]) -> None:
    for ws in sockets:
        try:
            ws.close()
        except Exception as exc:  # an idle socket the server already dropped: nothing to save
            logger.debug("websocket %s: closing a kept socket failed: %s", ws.url, exc)


class WebSocketQueueFullError(OpenAIError):
    """More than ``max_queue_size`` bytes of messages wait for a socket that is not open (the
    official client's ``WebSocketQueueFullError``)."""


def _is_omitted(value: Any) -> bool:
    return type(value).__name__ in ("NotGiven", "Omit")


def _dumps(event: Any) -> bytes:
    if hasattr(event, "to_json") and hasattr(event, "model_dump"):  # an official model
        return orjson.dumps(event.model_dump(by_alias=True, exclude_unset=True, mode="json"))
    if not isinstance(event, Mapping):
        raise TypeError(f"a client event is a dict or an official event model, got {type(event).__name__}")
    return orjson.dumps({k: v for k, v in event.items() if not _is_omitted(v)})


class _Handlers:
    """``on``/``off``/``once``: the handlers of each event type (``"event"``: every event)."""

    def __init__(self) -> None:
        self.by_type: dict[str, list[tuple[Callable[..., Any], bool]]] = {}

    def add(self, kind: str, fn: Callable[..., Any], once: bool = False) -> None:
        self.by_type.setdefault(kind, []).append((fn, once))

    def remove(self, kind: str, fn: Callable[..., Any]) -> None:
        found = self.by_type.get(kind, [])
        for i, (f, _) in enumerate(found):
            if f == fn:
                del found[i]
                return

    def take(self, kind: str) -> list[Callable[..., Any]]:
        found = self.by_type.get(kind)
        if not found:
            return []
        self.by_type[kind] = [(f, once) for f, once in found if not once]
        return [f for f, _ in found]

    def merge_into(self, other: _Handlers) -> None:
        for kind, found in self.by_type.items():
            other.by_type.setdefault(kind, []).extend(found)


def _register(handlers: _Handlers, owner: Any, kind: str, fn: Any, once: bool) -> Any:
    if fn is not None:
        handlers.add(kind, fn, once)
        return owner

    def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
        handlers.add(kind, f, once)
        return f

    return decorator


class _Turn:
    """One response of the connection: its trace, tracker and timings, and its OpenTelemetry
    span when the app configured a tracer or meter (``features/otel.py``)."""

    __slots__ = ("created_at", "sent_at", "span", "timings", "trace", "tracker")

    def __init__(self, trace: TraceContext, lane: str | None, span: _otel.WsResponseSpan | None = None) -> None:
        self.trace = trace
        self.span = span
        self.tracker = PartialTracker()
        self.timings = ResponseTimings(trace.trace_id, stream_id=lane)
        self.sent_at = time.perf_counter()
        self.created_at: float | None = None


class ResponsesConnectionManager:
    """What ``client.responses.connect(...)`` returns: ``with`` it (or call
    ``.enter()``) for an :class:`ResponsesConnection`; closed on exit."""

    def __init__(self, client: OpenAI, *, extra_query: Mapping[str, Any],
                 extra_headers: Mapping[str, Any], websocket_connection_options: Mapping[str, Any],
                 on_reconnecting: Callable[[ReconnectingEvent], Any] | None, max_retries: int,
                 initial_delay: float, max_delay: float, max_queue_size: int,
                 warm: bool = False, reuse: bool = True) -> None:
        if max_retries < 0 or initial_delay < 0 or max_delay < 0:
            raise ValueError("max_retries, initial_delay and max_delay must not be negative, got "
                             f"{max_retries!r}, {initial_delay!r}, {max_delay!r}")
        if max_queue_size < 0:
            raise ValueError(f"max_queue_size must not be negative, got {max_queue_size!r}")
        self._client = client
        self.extra_query = dict(extra_query)
        self.extra_headers = dict(extra_headers)
        self._settings = ws_mode.connection_settings(websocket_connection_options)  # fails fast
        self.on_reconnecting = on_reconnecting
        self.max_retries, self.initial_delay, self.max_delay = max_retries, initial_delay, max_delay
        self.max_queue_size = max_queue_size
        self.reuse = reuse
        self.trace = new_trace_context(_header(extra_headers, "traceparent"))
        self._queue: list[bytes] = []
        self._handlers = _Handlers()
        self._connection: ResponsesConnection | None = None
        self._warm: Background | None = None
        self._warm_done: Event | None = None
        self._warm_result: Any = _NO_SOCKET
        if warm:
            self._warm_done = Event()
            self._warm = Background(self._open_warm, name="llmclient-ws-warm")

    # -- before the socket opens (the official manager's) ----------------------------------
    def send(self, event: Any) -> None:
        """Queue a client event, sent once the socket is open."""
        _enqueue(self._queue, _dumps(event), self.max_queue_size)

    def on(self, event_type: str, handler: Callable[..., Any] | None = None) -> Any:
        return _register(self._handlers, self, event_type, handler, False)

    def off(self, event_type: str, handler: Callable[..., Any]) -> ResponsesConnectionManager:
        self._handlers.remove(event_type, handler)
        return self

    def once(self, event_type: str, handler: Callable[..., Any] | None = None) -> Any:
        return _register(self._handlers, self, event_type, handler, True)

    # -- the socket -------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """``warm=True``: whether the socket opened already (``enter`` then takes it at once)."""
        return self._warm_done is not None and self._warm_done.is_set() and not isinstance(
            self._warm_result, BaseException)

    @property
    def url(self) -> str:
        return self._url(self.extra_query)

    def _url(self, extra_query: Mapping[str, Any]) -> str:
        client = self._client
        base = _official_setting(client, "websocket_base_url")
        query = {**client.default_query, **extra_query}
        return ws_mode.socket_url(str(client.base_url), base, query)

    def _options(self, extra_headers: Mapping[str, Any]) -> Any:
        from ...transport.websocket import WebSocketOptions  # the ws extra, named if missing

        client = self._client
        headers: dict[str, str] = {}
        for name, value in {**client.default_headers, **extra_headers}.items():
            if value is None or _is_omitted(value) or name.lower() in _NOT_ON_HANDSHAKE:
                continue
            headers[name.lower()] = str(value)
        for name, value in self.trace.headers().items():
            headers.setdefault(name, value)
        timeout = client.timeout
        connect = timeout.connect if isinstance(timeout, httpx.Timeout) else timeout
        settings = client._transport_settings
        return WebSocketOptions(headers=tuple(headers.items()), verify=settings.verify,
                                proxies=settings.proxies, connect_timeout=connect,
                                open_timeout=connect, **self._settings)

    def _open(self, extra_query: Mapping[str, Any], extra_headers: Mapping[str, Any]) -> _Opened:
        """The socket the client kept for this handshake, else a new one; or the face's error
        naming the URL and what to do."""
        # the ws extra (websockets): loaded with the first socket
        from ...transport.websocket import connect_sync

        url = self._url(extra_query)
        options = self._options(extra_headers)
        key = ws_mode.park_key(url, options.headers) if self.reuse else None
        if key is not None:
            kept, stale = _park(self._client).take(key, time.monotonic(), _reusable)
            _close_all(stale)
            if kept is not None:
                logger.debug("websocket %s: the client's kept socket, no new handshake", redact_url(url))
                return _Opened(kept, key, True)
        try:
            return _Opened(connect_sync(url, options), key, False)
        except Exception as exc:
            raise _open_error(url, exc, self.trace) from exc

    def _open_warm(self) -> None:
        try:
            self._warm_result = self._open(self.extra_query, self.extra_headers)
        except BaseException as exc:  # handed to __enter__, which raises it
            self._warm_result = exc
        finally:
            assert self._warm_done is not None
            self._warm_done.set()

    def __enter__(self) -> ResponsesConnection:
        if self._warm_done is not None:
            self._warm_done.wait()
            found, self._warm_result, self._warm_done = self._warm_result, _NO_SOCKET, None
            if isinstance(found, BaseException):
                raise found
            opened = found
        else:
            opened = self._open(self.extra_query, self.extra_headers)
        connection = ResponsesConnection(self, opened)
        self._handlers.merge_into(connection._handlers)
        self._connection = connection
        try:
            queued, self._queue = self._queue, []
            for data in queued:
                connection.send_raw(data)
        except BaseException:
            self._connection = None
            connection.close()
            raise
        return connection

    enter = __enter__

    def __exit__(self, *exc: Any) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:
                if exc[0] is None:
                    raise


# Not sent on the handshake: a GET upgrade has no body.
_NOT_ON_HANDSHAKE = frozenset({"content-type", "content-length", "accept-encoding", "connection",
                               "upgrade"})


def _reusable(ws: SyncWebSocket) -> bool:
    return ws.reusable()


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for k, v in headers.items():
        if k.lower() == name and isinstance(v, str):
            return v
    return None


def _official_setting(client: Any, name: str) -> Any:
    config = getattr(client, "_config", None)
    official = getattr(config, "official", None) or {}
    return official.get(name)


def _enqueue(queue: list[bytes], data: bytes, limit: int) -> None:
    size = sum(len(d) for d in queue) + len(data)
    if size > limit:
        raise WebSocketQueueFullError(
            f"{size} bytes would wait for the WebSocket to open, more than max_queue_size="
            f"{limit}: wait for the connection, or pass a larger max_queue_size to connect()")
    queue.append(data)


def _open_error(url: str, exc: Exception, trace: TraceContext) -> Exception:
    """The face's error for a socket that did not open."""
    # the ws extra (websockets): loaded with the first socket
    from ...transport.websocket import HandshakeError, WebSocketTimeout

    kw: dict[str, Any] = {"trace_id": trace.trace_id}
    if isinstance(exc, HandshakeError):
        http_url = "http" + url[2:] if url.startswith("ws") else url
        request = httpx.Request("GET", http_url)
        response = httpx.Response(exc.status, headers=exc.headers, content=exc.body, request=request)
        try:
            body: Any = orjson.loads(exc.body) if exc.body else None
        except orjson.JSONDecodeError:
            body = exc.body.decode("utf-8", "replace")
        err_body = body.get("error", body) if isinstance(body, dict) else body
        return status_error_class(exc.status)(str(exc), response=response, body=err_body, **kw)
    where = redact_url(url)
    if isinstance(exc, (WebSocketTimeout, httpx.TimeoutException)):
        return APITimeoutError(f"the WebSocket to {where} did not open in time: {exc}", **kw)
    if isinstance(exc, (ValueError, TypeError)):
        return exc
    return APIConnectionError(f"the WebSocket to {where} did not open: {exc}", **kw)


class ResponsesConnection:
    """One live Responses WebSocket (the official ``ResponsesConnection``'s API)."""

    response: ResponsesResponseResource

    def __init__(self, manager: ResponsesConnectionManager, opened: _Opened) -> None:
        self._manager = manager
        self._ws: SyncWebSocket | None = opened.ws
        self._key = opened.key  # the live socket's handshake, for the client's park
        # whether the socket was the client's kept one (no handshake for this conversation)
        self.reused = opened.reused
        self._demux = Demux()
        self._ready: deque[tuple[bytes, dict[str, Any]] | BaseException] = deque()
        self._handlers = _Handlers()
        self._lock = threading.Lock()  # the demux and queue (the sync twin's senders and reader)
        self._queue: list[bytes] = []  # sent while a new socket is being opened
        self._reconnecting = False
        self._closed = False
        self._last_close: int | None = None
        self._extra_query, self._extra_headers = manager.extra_query, manager.extra_headers
        self.timings: dict[str, ResponseTimings] = {}  # by response id
        self.last_timings: ResponseTimings | None = None
        self.url = manager.url
        self.response = ResponsesResponseResource(self)
        self._span = _otel.ws_connection_span(self.url, self.reused)  # None unless OpenTelemetry is configured
        self._responses = 0  # sent: on the connection's span at its end

    # -- sending ----------------------------------------------------------------------------
    def send(self, event: Any) -> None:
        """Send a client event (a dict or an official event model)."""
        self.send_raw(_dumps(event))

    def send_raw(self, data: bytes | str) -> None:
        """Send a message as it is; a ``response.create`` among them still gets its place in its
        lane (its events, timings and recovery)."""
        raw = data.encode() if isinstance(data, str) else data
        pending = None
        if ws_mode.event_kind(raw) == "response.create":
            body = orjson.loads(raw)
            lane = body.get("stream_id")
            pending = Pending(lane if isinstance(lane, str) else None, raw,
                              store=body.get("store") is not False)
        self._send(raw, pending)

    def _create(self, body: dict[str, Any]) -> None:
        problem = ws_mode.check_create(body)
        if problem is not None:
            raise ValueError(problem)
        pending = Pending.for_body(body)
        self._send(pending.message, pending)

    def _send(self, raw: bytes, pending: Pending | None) -> None:
        if self._closed:
            raise APIConnectionError(f"cannot send: the WebSocket to {redact_url(self.url)} was "
                                     "closed by the app (connection.close() or the end of its "
                                     "with block): open a new one with client.responses.connect()")
        if pending is not None:
            # A trace of its own per response (its logs, its errors), a child of the caller's
            # traceparent when the connect() headers gave one.
            trace = new_trace_context(_header(self._extra_headers, "traceparent"))
            started = _otel.ws_response_start(self._span, self.url, pending.message, trace)
            if started is None:
                pending.owner = _Turn(trace, pending.lane)
            else:  # the response's trace context is its span's
                pending.owner = _Turn(started[1], pending.lane, started[0])
            self._responses += 1
        with self._lock:
            if self._reconnecting or self._ws is None:
                _enqueue(self._queue, raw, self._manager.max_queue_size)
                if pending is not None:
                    self._demux.add(pending)
                queued = True
            else:
                queued = False
                if pending is not None:
                    pending.sent += 1
                    self._demux.add(pending)
        if queued:
            if self._ws is None and not self._reconnecting:
                self._recover_socket()  # a socket lost between responses: a new one now
            return
        ws = self._ws
        assert ws is not None
        try:
            ws.send_text(raw)
        except Exception as exc:
            # the ws extra (websockets): loaded with the first socket
            from ...transport.websocket import WebSocketError

            if not isinstance(exc, WebSocketError):
                raise
            # The socket went away under the send: the message never went out whole. The
            # reader finds the loss; this create is re-sent with the others that never started.
            logger.debug("websocket %s: send failed (%s); kept for the next socket", self.url, exc)
            if pending is None:
                with self._lock:
                    _enqueue(self._queue, raw, self._manager.max_queue_size)

    # -- receiving --------------------------------------------------------------------------
    def recv_bytes(self) -> bytes:
        """The next server event's bytes."""
        data, _ = self._next()
        return data

    def recv(self) -> Any:
        """The next server event, typed (the official ``ResponsesServerEvent`` union)."""
        _, obj = self._next()
        return server_event(obj)

    def parse_event(self, data: str | bytes) -> Any:
        return server_event(orjson.loads(data))

    def __iter__(self) -> Iterator[Any]:
        return self._events()

    def _events(self) -> Iterator[Any]:
        """Events until the server closes the socket normally; a lost one raises (see the module
        docstring for what is recovered first)."""
        while True:
            try:
                yield self.recv()
            except _Ended:
                return

    def _next(self) -> tuple[bytes, dict[str, Any]]:
        while True:
            if self._ready:
                item = self._ready.popleft()
                if isinstance(item, BaseException):
                    raise item
                return item
            ws = self._ws
            if ws is None:
                if self._closed:
                    raise self._ended()
                raise self._closed_error(self._last_close)
            try:
                data = ws.recv(self._idle_timeout())
            except Exception as exc:  # the transport's errors are told apart off the hot path
                self._recv_failed(ws, exc)
                continue
            return data, self._note(data)

    def _recv_failed(self, ws: SyncWebSocket, exc: Exception) -> None:
        """What a failed ``recv`` means for the responses in flight; re-raises anything that is
        not the transport's."""
        # the ws extra (websockets): loaded with the first socket. Imported here, not in _next:
        # an import statement there cost about 1 us on every event (measured with cProfile).
        from ...transport.websocket import WebSocketClosed, WebSocketError, WebSocketTimeout

        if isinstance(exc, WebSocketTimeout):
            # recv's own limit leaves the socket open (a stall); a ping never answered has
            # failed it (a dead peer or path: lost, as a 1006)
            self._lost(ws, 1006 if ws.closed else None, stalled=not ws.closed)
        elif isinstance(exc, WebSocketClosed):
            if self._closed:
                raise self._ended() from None
            self._lost(ws, exc.code, stalled=False)
        elif isinstance(exc, WebSocketError):
            self._lost(ws, 1002, stalled=False)
        else:
            raise exc

    def _idle_timeout(self) -> float | None:
        """The stall watchdog's limit while a response is in flight (none between responses:
        the socket's pings keep it open then). The demux drops a lane once it is empty, so a
        lane left means a response in flight (cheaper than counting them on every event)."""
        if not self._demux.lanes:
            return None
        return self._manager._client._options.stream_idle_timeout

    def _note(self, data: bytes) -> dict[str, Any]:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise MalformedResponseError(
                f"the server at {redact_url(self.url)} sent a message that is not a JSON event "
                f"object with a type: {data[:200]!r}")
        now = time.perf_counter()
        with self._lock:
            pending = self._demux.route(obj)
        if pending is not None and isinstance(pending.owner, _Turn):
            self._account(pending, pending.owner, obj, now)
        return obj

    def _account(self, pending: Pending, turn: _Turn, obj: dict[str, Any], now: float) -> None:
        kind = obj.get("type")
        turn.tracker.event(obj)
        t = turn.timings
        t.events += 1
        elapsed = (now - turn.sent_at) * 1000.0
        if kind == "response.created":
            t.response_id = pending.response_id
            t.first_event_ms = elapsed
        elif t.first_token_ms is None and ws_mode.is_first_token(kind if isinstance(kind, str) else None):
            t.first_token_ms = elapsed
        if pending.done:
            t.total_ms = elapsed
            t.sent = pending.sent
            self.last_timings = t
            if t.response_id is not None:
                self.timings[t.response_id] = t
            if turn.span is not None:
                turn.span.end(obj, first_token_ms=t.first_token_ms)

    # -- a lost socket ----------------------------------------------------------------------
    def _lost(self, ws: SyncWebSocket, code: int | None, stalled: bool) -> None:
        """The socket ``ws`` is gone (closed with ``code``, or stalled): each response in flight
        is re-sent, fetched or failed (``ws_mode.recovery``); a new socket is opened when one is
        needed and allowed."""
        ws.abort()
        with self._lock:
            if self._ws is ws:
                self._ws = None
            taken = self._demux.take_all()
        self._last_close = code
        may_reconnect = (not self._closed and self._manager.max_retries > 0
                         and (stalled or code in ws_mode.RECOVERABLE_CLOSES))
        resend: list[Pending] = []
        for pending in taken:
            turn = pending.owner if isinstance(pending.owner, _Turn) else None
            decision = ws_mode.recovery(pending, may_reconnect)
            if decision == "resend":
                resend.append(pending)
            elif decision == "fetch" and turn is not None:
                self._fetch(pending, turn, code, stalled)
            else:
                self._ready.append(self._cut_error(pending, turn, code, stalled))
        if resend or (not self._closed and may_reconnect and self._manager.on_reconnecting is not None):
            with self._lock:
                self._queue = [p.message for p in resend] + self._queue
                for p in resend:
                    self._demux.add(p)
            if not self._reconnect(1006 if code is None else code):
                with self._lock:
                    gone = self._demux.take_all()
                    self._queue = []
                for p in gone:
                    self._ready.append(self._cut_error(p, p.owner if isinstance(p.owner, _Turn) else None,
                                                       code, stalled, reopened=False))
        elif code in (1000, 1001) and not taken:  # a normal close between responses: the end
            self._ready.append(_Ended(f"the server closed the WebSocket to {redact_url(self.url)} "
                                      f"normally (code {code}); {ws_mode.close_advice(code)}"))

    def _reconnect(self, code: int) -> bool:
        """A new socket, at most ``max_retries`` attempts with the official backoff; the queued
        messages (the re-sent creates first) go out on it. False: none could be opened."""
        manager = self._manager
        with self._lock:
            self._reconnecting = True
        try:
            for attempt in range(1, manager.max_retries + 1):
                if self._closed:
                    return False
                delay = ws_mode.reconnect_delay(attempt, manager.initial_delay, manager.max_delay)
                if manager.on_reconnecting is not None:
                    try:
                        result = manager.on_reconnecting(ReconnectingEvent(
                            attempt, manager.max_retries, delay, code, self._extra_query,
                            self._extra_headers))
                    except Exception:
                        logger.exception("websocket %s: on_reconnecting raised; not reconnecting", self.url)
                        return False
                    if result:
                        if result.get("abort"):
                            return False
                        self._extra_query = dict(result.get("extra_query", self._extra_query))
                        self._extra_headers = dict(result.get("extra_headers", self._extra_headers))
                logger.info("websocket %s: reconnecting (attempt %d/%d) in %.2f s after close %s",
                            self.url, attempt, manager.max_retries, delay, code)
                sleep(delay)
                if self._closed:
                    return False
                try:
                    opened = manager._open(self._extra_query, self._extra_headers)
                except APIConnectionError as exc:
                    logger.info("websocket %s: attempt %d failed: %s", self.url, attempt, exc)
                    continue
                except OpenAIError:
                    return False  # a refused handshake (401, 404 ...): another try would be too
                if self._flush(opened.ws):
                    self._key = opened.key
                    return True
            return False
        finally:
            with self._lock:
                self._reconnecting = False

    def _flush(self, ws: SyncWebSocket) -> bool:
        with self._lock:
            queued, self._queue = self._queue, []
            resent = {id(p.message): p for p in self._demux.in_flight()}
        try:
            for data in queued:
                pending = resent.get(id(data))
                if pending is not None:
                    pending.sent += 1
                    if isinstance(pending.owner, _Turn):
                        pending.owner.sent_at = time.perf_counter()
                        pending.owner.timings.recovered = "resent" if pending.sent > 1 else None
                ws.send_text(data)
        except Exception as exc:
            logger.info("websocket %s: the new socket failed at once: %s", self.url, exc)
            ws.abort()
            with self._lock:
                self._queue = queued + self._queue
            return False
        with self._lock:
            self._ws = ws
        return True

    def _recover_socket(self) -> None:
        """A send found no socket (lost between responses): open one for it."""
        code = self._last_close
        if (self._manager.max_retries > 0 and (code is None or code in ws_mode.RECOVERABLE_CLOSES
                                               or code in (1000, 1001))
                and self._reconnect(1006 if code is None else code)):
            return
        with self._lock:
            gone = self._demux.take_all()
            self._queue = []
        raise self._closed_error(code, unsent=len(gone) or 1)

    def _fetch(self, pending: Pending, turn: _Turn, code: int | None, stalled: bool) -> None:
        """A stored response that started: read it back by its id, and finish it from there."""
        client = self._manager._client
        rid = pending.response_id
        assert rid is not None
        partial = turn.tracker.answer()
        try:
            call = client._build_call("GET", f"/responses/{rid}")
            found = client._request(call, response_object, False)
            data = found.model_dump(mode="json") if hasattr(found, "model_dump") else dict(found)
        except Exception as exc:
            logger.info("websocket %s: %s could not be fetched after the socket was lost: %s",
                        self.url, rid, exc)
            self._ready.append(self._cut_error(pending, turn, code, stalled, fetched=str(exc)))
            return
        events = ws_mode.recovered_events(data, partial.text, partial.last_sequence_number, pending.lane)
        if events is None:
            self._ready.append(self._cut_error(pending, turn, code, stalled,
                                               fetched=f"it is {data.get('status')!r} there"))
            return
        turn.timings.recovered = "fetched"
        now = time.perf_counter()
        for i, obj in enumerate(events):
            pending.done = i == len(events) - 1
            self._account(pending, turn, obj, now)
            self._ready.append((orjson.dumps(obj), obj))

    def _cut_error(self, pending: Pending, turn: _Turn | None, code: int | None, stalled: bool,
                   reopened: bool = True, fetched: str | None = None) -> Exception:
        # the ws extra (websockets): loaded with the first socket
        from ...transport.websocket.errors import close_meaning

        where = redact_url(self.url)
        rid = pending.response_id
        what = f"response {rid}" if rid else "a response that had not started"
        if stalled:
            why = (f"no event for {self._manager._client._options.stream_idle_timeout:g} s "
                   "(stream_idle_timeout)")
        else:
            why = f"the socket closed with code {code} ({close_meaning(code)})"
        advice = []
        if not stalled and code not in ws_mode.RECOVERABLE_CLOSES:
            advice.append(ws_mode.close_advice(code))  # what the code itself says to do
        if fetched is not None:
            advice.append(f"it was stored, but fetching it by id failed ({fetched})")
        elif rid is not None and not pending.store:
            advice.append("it had store=False, so the API keeps it nowhere else: send it again "
                          "(store=True lets llmclient fetch it after a lost socket)")
        elif not reopened:
            advice.append("no new socket could be opened: check the server and send it again")
        elif not advice:
            advice.append(ws_mode.close_advice(code))
        message = f"{what} on the WebSocket to {where} was cut: {why}; {'; '.join(advice)}"
        kw: dict[str, Any] = {"trace_id": turn.trace.trace_id} if turn is not None else {}
        err: APIConnectionError = (APITimeoutError(message, **kw) if stalled
                                   else IncompleteStreamError(message, **kw))
        err.partial = turn.tracker.answer() if turn is not None else None  # type: ignore[attr-defined]
        if turn is not None:
            turn.timings.sent = pending.sent
            self.last_timings = turn.timings
            if turn.span is not None:
                turn.span.end(None, err, first_token_ms=turn.timings.first_token_ms)
        return err

    def _ended(self) -> _Ended:
        return _Ended(f"the WebSocket to {redact_url(self.url)} was closed by the app "
                      "(connection.close() or the end of its with block)")

    def _closed_error(self, code: int | None, unsent: int = 0) -> Exception:
        # the ws extra (websockets): loaded with the first socket
        from ...transport.websocket.errors import close_meaning

        lead = f"{unsent} message(s) not sent: " if unsent else ""
        return APIConnectionError(
            f"{lead}the WebSocket to {redact_url(self.url)} is closed: code {code} "
            f"({close_meaning(code)}); {ws_mode.close_advice(code)}")

    # -- handlers (the official push API) ---------------------------------------------------
    def on(self, event_type: str, handler: Callable[..., Any] | None = None) -> Any:
        return _register(self._handlers, self, event_type, handler, False)

    def off(self, event_type: str, handler: Callable[..., Any]) -> ResponsesConnection:
        self._handlers.remove(event_type, handler)
        return self

    def once(self, event_type: str, handler: Callable[..., Any] | None = None) -> Any:
        return _register(self._handlers, self, event_type, handler, True)

    def dispatch_events(self) -> None:
        """Read events and call their handlers until the socket closes; an ``error`` event with
        no handler for it (nor for ``"event"``) raises OpenAIError, as the official client does."""
        for event in self:
            kind = event.type
            specific = self._handlers.take(kind)
            generic = self._handlers.take("event")
            if kind == "error" and not specific and not generic:
                raise OpenAIError(f"WebSocket error: {event}")
            for handler in (*specific, *generic):
                result = handler(event)
                if hasattr(result, "__await__"):  # an sync handler
                    raise TypeError(f"handler {handler!r} is a coroutine function: the sync connection calls plain functions")

    # -- closing ----------------------------------------------------------------------------
    def close(self, *, code: int = 1000, reason: str = "") -> None:
        """End the conversation. A socket with nothing in flight or unread, closed with the
        default code and no reason, is kept for the client's next ``connect()`` with the same
        handshake (see the module docstring; ``connect(reuse=False)``: closed now)."""
        self._closed = True
        with self._lock:
            ws, self._ws = self._ws, None
            unfinished = list(self._demux.in_flight())
            queued = bool(self._queue)
        for pending in unfinished:  # closed by the app before their end: not errors
            if isinstance(pending.owner, _Turn) and pending.owner.span is not None:
                pending.owner.span.end(None, closed_early=True)
        try:
            client = self._manager._client
            if (ws is not None and self._key is not None and code == 1000 and not reason
                    and not unfinished and not queued and ws.reusable()
                    and not client.__dict__.get("_closed")):  # a closed client keeps nothing
                _close_all(_park(client).put(self._key, ws, ws.opened_at, time.monotonic()))
            elif ws is not None:
                ws.close(code, reason)
        finally:
            span, self._span = self._span, None
            _otel.ws_connection_end(span, self._responses)

    @property
    def in_flight(self) -> int:
        """Responses sent and not finished."""
        return len(self._demux)


class _Ended(APIConnectionError):
    """The socket closed normally (the app closed it, or the server with 1000/1001 between
    responses): the iteration ends; ``recv()`` raises it."""


class ResponsesResponseResource:
    """``connection.response``: ``create(...)`` and ``steer(...)``, as the official client's."""

    def __init__(self, connection: ResponsesConnection) -> None:
        self._connection = connection

    def create(self, **params: Any) -> None:
        """Send a ``response.create``: the fields of ``POST /v1/responses`` (``stream`` is
        implicit and dropped, ``background`` is refused), plus ``stream_id`` for a lane. Its
        events come through the connection's iteration."""
        body = {k: v for k, v in params.items() if not _is_omitted(v)}
        self._connection._create(body)

    def steer(self, *, input: Any, previous_response_id: str) -> None:
        self._connection.send({"type": "response.steer", "input": input,
                                     "previous_response_id": previous_response_id})
