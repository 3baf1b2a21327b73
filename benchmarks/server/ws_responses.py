"""The Responses API's WebSocket mode: ``GET /v1/responses`` upgraded to a WebSocket (RFC 6455),
as OpenAI documents it ("WebSocket mode" guide, developers.openai.com/api/docs/guides/websocket-mode,
read 2026-12-07) and as the official client's ``client.responses.connect()`` speaks it.

The handshake: the API key in ``Authorization`` (a wrong one is a 401 before the upgrade, with
OpenAI's error body), ``x-request-id`` and ``traceparent`` as on HTTP, ``x-fault`` (with
``--allow-fault-headers``) for every response on the socket. A path other than
``/v1/responses`` is a 404 before the upgrade.

Then each client event is one JSON text (or binary) message:

* ``response.create``: the body of ``POST /v1/responses`` with ``type``, plus the optional
  ``stream_id`` (a lane of the socket). ``stream`` is accepted and ignored (the official
  example sends it; over the socket a response is always streamed); ``background: true`` is an
  error, as the guide says background is not used here. ``generate: false`` makes the response
  without generating (the guide's warm-up): the engine prefills the prompt (the prefix cache
  keeps it) and the response completes with no output, to be continued by the next turn.
* Server events: exactly the Responses stream events of ``POST /v1/responses`` with
  ``stream: true`` (``responses.py`` makes them for both), one message each, numbered from 0
  per response, each with the create's ``stream_id`` when it gave one; the terminal event
  (``response.completed``, ``response.incomplete``, ``response.failed``) carries
  ``server_timing`` (the W3C Server-Timing string an HTTP answer has in its header).
* Lanes: responses on one ``stream_id`` (or none) run one after another in the order they were
  sent; different lanes run at the same time (the guide's multiplexing of parallel
  conversations and forks on one socket).
* Memory: the socket remembers the latest response of each lane, ``store`` or not, with its
  conversation's tokens. A ``previous_response_id`` found there continues without reloading
  anything (only the new input is tokenized; ``continuation.py``'s reload is not paid); one
  only in the server's store (``store: true``, an older response) is reloaded as over HTTP;
  anything else is an ``error`` event, code ``previous_response_not_found``. A ``store: false``
  response is never in the server's store: it lives in the socket's memory and dies with it.
* Errors: an ``error`` event (``status``: the HTTP status the same request would have had;
  ``error``: OpenAI's ``message``, ``type``, ``param``, ``code``; the lane's ``stream_id``): a
  validation error (400, the field in ``param``), ``previous_response_not_found`` (404, as the
  HTTP route answers it),
  ``model_not_found`` (404), rate limits (429), an engine failure before the response started
  (429/503/500). An engine failure after ``response.created`` is ``response.failed``. The
  socket stays open after an error event.
* Close codes (RFC 6455 section 7.4.1): 1000 when the client closes; 1009 for a message larger
  than the body limit; 1001 at the connection's age limit (the guide's 60 minutes,
  ``--ws-max-connection-s``), after an ``error`` event ``websocket_connection_limit_reached``
  and once the responses in flight are done; 1011 for an injected ``cut_after`` fault. Pings
  are answered by the HTTP server itself (granian, hypercorn and uvicorn all do).

Which HTTP servers carry it (``serve.py``): granian (the default), hypercorn and uvicorn, each
with the ``websocket.http.response`` ASGI extension, so a refused handshake is a real 401 or
404. Only hypercorn and uvicorn negotiate ``permessage-deflate`` (RFC 7692); granian answers
without it (and without the handshake's extra headers).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from ._http import REQUEST_ID, TRACEPARENT, Receive, Scope, Send, error_body, header
from ._validate import InvalidRequest, request_priority
from .engine.base import (
    ContextLengthError,
    EngineError,
    EngineNotReady,
    EngineOOM,
    EngineOverloaded,
)
from .faults import FaultSpec, FaultSpecError
from .responses import (
    ResponseParams,
    StoredResponse,
    Turn,
    _response,
    continuation_wait,
    parse_response_request,
    previous_not_found,
)
from .tokenizer import encode

__all__ = ["PATH", "WsSettings", "add_arguments", "from_args", "handle"]

log = logging.getLogger("benchmarks.server.app")

PATH = "/v1/responses"
# OpenAI "WebSocket mode" guide (read 2026-12-07): a connection lasts at most 60 minutes, then
# websocket_connection_limit_reached; open a new one and continue.
MAX_CONNECTION_S = 3600.0
# Lanes (stream_id) running at once on one socket. OpenAI publishes no figure.
MAX_LANES = 64
# Lanes whose latest response the socket remembers (the least recently used forgotten first).
MAX_REMEMBERED = 256
# RFC 6455 section 7.4.1
CLOSE_NORMAL, CLOSE_GOING_AWAY, CLOSE_TOO_BIG, CLOSE_INTERNAL = 1000, 1001, 1009, 1011
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
# Fields of a response.create that are the socket's, not the response's.
_ENVELOPE = ("type", "stream_id", "stream", "generate")


@dataclass(frozen=True)
class WsSettings:
    max_connection_s: float = MAX_CONNECTION_S
    max_lanes: int = MAX_LANES


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("WebSocket mode (GET /v1/responses upgraded; ws_responses.py)")
    g.add_argument("--ws-max-connection-s", type=float, default=MAX_CONNECTION_S, metavar="S",
                   help="a socket's age limit: then websocket_connection_limit_reached and close "
                        "1001 (OpenAI: 60 minutes)")
    g.add_argument("--ws-max-lanes", type=int, default=MAX_LANES, metavar="N",
                   help="stream_id lanes running at once on one socket")


def from_args(args: argparse.Namespace) -> WsSettings:
    if args.ws_max_connection_s <= 0 or args.ws_max_lanes < 1:
        raise SystemExit("--ws-max-connection-s must be positive and --ws-max-lanes at least 1")
    return WsSettings(args.ws_max_connection_s, args.ws_max_lanes)


class _Refused(Exception):
    """An error event's content (pure data: status, OpenAI's error body)."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def error_event(status: int, message: str, param: str | None, code: str | None,
                stream_id: str | None) -> dict[str, Any]:
    """An ``error`` server event, as the official client's ``ResponseWsError`` reads it."""
    event: dict[str, Any] = {"type": "error", "status": status,
                             **error_body(status, message, param, code)}
    if stream_id is not None:
        event["stream_id"] = stream_id
    return event


def parse_create(raw: bytes | str, limit: int) -> tuple[str | None, bool, dict[str, Any]]:
    """A client message -> (stream_id, generate, the response body), or :class:`_Refused`."""
    if len(raw) > limit:
        raise _Refused(400, f"the event is larger than {limit} bytes")
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _Refused(400, f"the event is not valid JSON: {exc}") from None
    if not isinstance(event, dict):
        raise _Refused(400, "an event must be a JSON object with a 'type'", "type")
    stream_id = event.get("stream_id")
    if stream_id is not None and (not isinstance(stream_id, str) or not stream_id):
        raise _Refused(400, "'stream_id' must be a non-empty string", "stream_id", "invalid_type")
    kind = event.get("type")
    if kind != "response.create":
        raise _Refused(400, f"unsupported event type {kind!r}: this server reads "
                            f"'response.create' events", "type", "unsupported_event_type")
    if event.get("background"):
        raise _Refused(400, "'background' is not supported over WebSocket: send the response "
                            "without it (it streams on the socket), or use POST /v1/responses",
                       "background", "unsupported_parameter")
    generate = event.get("generate", True)
    if not isinstance(generate, bool):
        raise _Refused(400, "'generate' must be a boolean", "generate", "invalid_type")
    body = {k: v for k, v in event.items() if k not in _ENVELOPE}
    return stream_id, generate, body


def _engine_refusal(exc: EngineError) -> _Refused:
    if isinstance(exc, EngineOverloaded):
        return _Refused(429, str(exc), None, "rate_limit_exceeded")
    if isinstance(exc, ContextLengthError):
        return _Refused(400, str(exc), "input", "context_length_exceeded")
    if isinstance(exc, EngineOOM):
        return _Refused(503, f"the engine ran out of memory: {exc}", None, "engine_out_of_memory")
    if isinstance(exc, EngineNotReady):
        return _Refused(503, f"the model is still loading: {exc}", None, "model_loading")
    return _Refused(500, f"engine error: {exc}", None, "engine_error")


class _Memory:
    """The latest response of each lane, by lane and by id (pure; LRU over lanes)."""

    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self.limit = limit
        self._lanes: OrderedDict[str | None, tuple[str, StoredResponse]] = OrderedDict()
        self._ids: dict[str, str | None] = {}

    def keep(self, lane: str | None, rid: str, item: StoredResponse) -> None:
        old = self._lanes.pop(lane, None)
        if old is not None:
            self._ids.pop(old[0], None)
        self._lanes[lane] = (rid, item)
        self._ids[rid] = lane
        while len(self._lanes) > self.limit:
            _, (gone_id, _) = self._lanes.popitem(last=False)
            self._ids.pop(gone_id, None)

    def get(self, rid: str) -> StoredResponse | None:
        if rid not in self._ids:
            return None
        lane = self._ids[rid]
        self._lanes.move_to_end(lane)
        return self._lanes[lane][1]


class _Socket:
    """One accepted WebSocket: its lanes, memory and sends."""

    def __init__(self, app: Any, scope: Scope, send: Send, req: Any, fault: FaultSpec | None) -> None:
        self.app, self.scope, self._send, self.base = app, scope, send, req
        self.fault = fault
        self.memory = _Memory()
        self.lanes: dict[str | None, asyncio.Queue[tuple[bool, dict[str, Any]] | None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.count = 0
        self.closing = False
        self.closed = False
        self._lock = asyncio.Lock()
        self.settings: WsSettings = app.config.websocket

    # -- sending ---------------------------------------------------------------------------
    async def send_event(self, event: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionResetError("the socket is closed")
        data = orjson.dumps(event).decode()
        async with self._lock:
            await self._send({"type": "websocket.send", "text": data})

    async def close(self, code: int, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            async with self._lock:
                await self._send({"type": "websocket.close", "code": code, "reason": reason})

    # -- receiving -------------------------------------------------------------------------
    async def on_message(self, raw: bytes | str) -> None:
        limit = self.app.config.max_body_bytes
        if len(raw) > limit:
            await self.close(CLOSE_TOO_BIG, f"message larger than {limit} bytes")
            return
        lane: str | None = None
        try:
            lane, generate, body = parse_create(raw, limit)
            if self.closing:
                raise _Refused(400, f"this connection reached its {self.settings.max_connection_s:g} s "
                                    "limit: open a new connection and continue there", None,
                               "websocket_connection_limit_reached")
            queue = self.lanes.get(lane)
            if queue is None:
                if len(self.lanes) >= self.settings.max_lanes:
                    raise _Refused(429, f"{len(self.lanes)} stream_id lanes are running on this "
                                        f"connection, the most it runs at once: wait for one to "
                                        f"finish", "stream_id", "too_many_streams")
                queue = self.lanes[lane] = asyncio.Queue()
                task = asyncio.ensure_future(self._run_lane(lane, queue))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            queue.put_nowait((generate, body))
        except _Refused as exc:
            await self.send_event(error_event(exc.status, exc.message, exc.param, exc.code, lane))

    async def _run_lane(self, lane: str | None, queue: asyncio.Queue[Any]) -> None:
        try:
            while True:
                try:
                    generate, body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await self._respond(lane, generate, body)
        except Exception:
            # The socket went away under the response (the client left, a cut closed it): its
            # engine streams are closed by now; nothing is left to tell anyone.
            if not self.closed:
                log.exception("websocket lane %r failed", lane)
        finally:
            if self.lanes.get(lane) is queue:
                del self.lanes[lane]
            if self.closing and not self.lanes:
                await self.close(CLOSE_GOING_AWAY, "connection age limit reached")

    # -- one response ----------------------------------------------------------------------
    def _new_req(self) -> Any:
        self.count += 1
        rid = f"{self.base.request_id}-{self.count}"
        return dataclasses.replace(self.base, request_id=rid, t0=time.perf_counter(),
                                   timings={}, fault=self.fault, ratelimit_headers=[])

    async def _respond(self, lane: str | None, generate: bool, body: dict[str, Any]) -> None:
        app, req = self.app, self._new_req()
        REQUEST_ID.set(req.request_id)
        seq = 0
        sent_created = False
        status = 200

        async def put(kind: str, **fields: Any) -> None:
            nonlocal seq, sent_created
            event: dict[str, Any] = {"type": kind, "sequence_number": seq, **fields}
            if lane is not None:
                event["stream_id"] = lane
            if kind in TERMINAL and req.send_timing:
                event["server_timing"] = req.header_value().decode()
            seq += 1
            sent_created = sent_created or kind == "response.created"
            await self._deliver(event, seq)

        app.counters.in_flight += 1
        try:
            gen, turn = await self._start(req, lane, body)
            if not generate:
                await self._warm(req, turn, put)
                return
            await gen.events(put)
        except _Refused as exc:
            status = exc.status
            await self.send_event(error_event(exc.status, exc.message, exc.param, exc.code, lane))
        except InvalidRequest as exc:
            status = exc.status
            await self.send_event(error_event(exc.status, exc.message, exc.param, exc.code, lane))
        except EngineError as exc:
            refusal = _engine_refusal(exc)
            status = refusal.status
            if not sent_created:
                await self.send_event(error_event(refusal.status, refusal.message, refusal.param,
                                                  refusal.code, lane))
            else:
                failed = {"status": "failed", "error": {"code": "server_error", "message": str(exc)}}
                await put("response.failed", response=failed)
        except _Cut:
            status = 499
            await self.close(CLOSE_INTERNAL, "injected cut")
        except (ConnectionError, OSError, asyncio.CancelledError):
            status = 499
            raise
        finally:
            app.counters.in_flight -= 1
            app.counters.record(status)
            if app.config.access_log:
                log.info("WS %s %d %.1fms lane=%s %s", PATH, status,
                         (time.perf_counter() - req.t0) * 1000.0, lane,
                         req.header_value().decode("latin-1"))

    async def _start(self, req: Any, lane: str | None, body: dict[str, Any]) -> tuple[Any, Turn]:
        app = self.app
        cfg = app.config
        if cfg.ratelimits is not None:  # --rpm/--tpm, as on HTTP
            verdict = cfg.ratelimits.admit(header(self.scope, b"authorization") or "", body)
            if not verdict.ok:
                raise _Refused(429, verdict.message, None, "rate_limit_exceeded")
        rejected = next((f for f in cfg.reject_fields if f in body), None)
        if rejected is not None:
            raise _Refused(400, f"Unrecognized request argument supplied: {rejected}", rejected)
        req.engine_priority = request_priority(body, cfg.scheduling_policy, req.priority > 0)
        p = parse_response_request(body, app.engine.context_window)
        app._check_model(p.model)
        earlier, remembered = self._previous(p)
        await continuation_wait(app, req, earlier, remembered)
        turn = await Turn.start(app, req, p, earlier, app.responses,
                                keep=lambda rid, item: self.memory.keep(lane, rid, item),
                                remembered=remembered)
        return turn.generation(), turn

    def _previous(self, p: ResponseParams) -> tuple[StoredResponse | None, bool]:
        """The earlier response and whether it came from this socket's memory."""
        rid = p.previous_response_id
        if rid is None:
            return None, False
        found = self.memory.get(rid)
        if found is not None:
            return found, True
        stored = self.app.responses.get(rid)
        if stored is None:
            raise previous_not_found(rid)  # the status the HTTP route answers (404)
        return stored, False

    async def _warm(self, req: Any, turn: Turn, put: Any) -> None:
        """``generate: false``: prefill the prompt (one token, dropped), then a completed response
        with no output that the next turn continues."""
        app = self.app
        ereq = dataclasses.replace(turn.ereqs[0], max_tokens=1)
        events = app.engine.submit(ereq)
        p = turn.p
        assert p is not None
        await put("response.created", response=_response(turn.rid, turn.created, p, "in_progress", [], None))
        timing = None
        try:
            async for ev in events:
                if ev.finish_reason is not None:
                    timing = ev.timing
                    break
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()
        req.add_engine_timing(timing)
        cached = timing.cached_prompt_tokens if timing else 0
        usage = {"input_tokens": len(turn.prompt_ids),
                 "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                 "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": len(turn.prompt_ids)}
        response = _response(turn.rid, turn.created, p, "completed", [], usage)
        pregen = turn.pre_ms + ((timing.queue_ms + timing.prefill_ms) if timing else 0.0)
        transcript = turn.history + turn.this_input
        ids = (turn.history_ids + _tokens(turn.this_input) if turn.history_ids
               else _tokens(transcript))
        item = StoredResponse(response, turn.inputs, transcript, pregen, ids)
        if p.store:
            app.responses.put(turn.rid, StoredResponse(response, turn.inputs, transcript, pregen))
        assert turn.keep is not None
        turn.keep(turn.rid, item)
        await put("response.completed", response=response)

    async def _deliver(self, event: dict[str, Any], n: int) -> None:
        """One event of a response, with the socket's stream faults (``x-fault`` on the
        handshake): ``cut_after`` closes the socket (1011) before event N, ``stall_after`` goes
        silent before event N (until the client leaves, or for ``resume_ms``)."""
        fault = self.fault
        if fault is not None:
            if fault.cut_after is not None and n > fault.cut_after:
                raise _Cut
            if fault.stall_after is not None and n == fault.stall_after + 1:
                log.info("fault: stall after %d events", fault.stall_after)
                if fault.resume_ms is not None:
                    await asyncio.sleep(fault.resume_ms / 1000)
                else:
                    await asyncio.Event().wait()
        await self.send_event(event)

    async def age_limit(self) -> None:
        await asyncio.sleep(self.settings.max_connection_s)
        self.closing = True
        if not self.lanes:
            with contextlib.suppress(Exception):
                await self.send_event(error_event(
                    400, f"this connection reached its {self.settings.max_connection_s:g} s limit: "
                         "open a new connection and continue there", None,
                    "websocket_connection_limit_reached", None))
            await self.close(CLOSE_GOING_AWAY, "connection age limit reached")


class _Cut(Exception):
    """Fault ``cut_after``: the socket is closed mid-response."""


def _tokens(text: str) -> tuple[int, ...]:
    return tuple(encode(text))


# -- the ASGI entry ------------------------------------------------------------------------------
async def handle(app: Any, scope: Scope, receive: Receive, send: Send, make_req: Any) -> None:
    """A ``websocket`` scope: the handshake (refused with a real HTTP status where the server
    has the ``websocket.http.response`` extension), then the socket's events until it closes.
    ``make_req``: the app's per-request record class (each response gets one of its own)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    rid = header(scope, b"x-request-id") or uuid.uuid4().hex
    REQUEST_ID.set(rid)
    TRACEPARENT.set(header(scope, b"traceparent") or "-")
    cfg = app.config
    if scope.get("path") != PATH:
        await _deny(scope, send, 404, f"GET {scope.get('path')} is not a WebSocket route of this "
                                      f"server (the Responses WebSocket mode is {PATH})")
        return
    if not app._authorized(scope):
        await _deny(scope, send, 401, "Incorrect API key provided.", code="invalid_api_key")
        return
    fault = None
    try:
        fault_header = header(scope, b"x-fault") if cfg.fault_headers else None
        fault = cfg.faults.decide(fault_header) if fault_header else None
    except FaultSpecError as exc:
        await _deny(scope, send, 400, f"x-fault header: {exc}", param="x-fault")
        return
    req = make_req(rid, None, fault, time.perf_counter(), send_timing=cfg.server_timing)
    if header(scope, b"x-llm-priority") == "low":
        req.priority = 1
    await send({"type": "websocket.accept", "headers": [(b"x-request-id", rid.encode())]})
    sock = _Socket(app, scope, send, req, fault)
    ager = asyncio.ensure_future(sock.age_limit())
    try:
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "websocket.disconnect":
                break
            if kind != "websocket.receive":
                continue
            raw = message.get("text")
            if raw is None:
                raw = message.get("bytes") or b""
            await sock.on_message(raw)
            if sock.closed:
                break
    finally:
        sock.closed = True
        ager.cancel()
        for task in list(sock.tasks):
            task.cancel()
        for task in list(sock.tasks):
            with contextlib.suppress(BaseException):
                await task


async def _deny(scope: Scope, send: Send, status: int, message: str, param: str | None = None,
                code: str | None = None) -> None:
    """Refuse the handshake with an HTTP answer; a server without the ASGI extension can only
    close before accepting (its 403)."""
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    body = orjson.dumps(error_body(status, message, param, code))
    await send({"type": "websocket.http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "websocket.http.response.body", "body": body})
