"""The Responses API's WebSocket mode, its decisions without I/O: where the socket goes, what a
``response.create`` message is, which response each server event belongs to, what a lost socket
means for each response in flight, and when to connect again.

The socket's I/O and the face are ``api/_async/ws_connection.py`` (and its generated twin). What the server keeps, as OpenAI's "WebSocket mode" guide
describes it (developers.openai.com/api/docs/guides/websocket-mode, read 2026-12-07): the
latest response of the connection in the connection's memory, whatever ``store`` says (a
``store: false`` one lives nowhere else and dies with the socket); a ``store: true`` response
is also in the server's store, so its id can be fetched (``GET /responses/{id}``) and continued
from another connection. The events of a response are those of ``POST /v1/responses`` with
``stream: true``; ``response.created`` comes first.

Which response an event belongs to (:class:`Demux`): the server runs the responses of one lane
(``stream_id``, or none) one after another in the order they were sent, and different lanes at
once. So an event goes to the response it names (``response.id``), else to the oldest unfinished
response of its lane; an ``error`` event (which names no response) to the oldest response of its
lane that has not started (``response.created`` not seen): a response that started ends with
``response.failed`` instead.

A lost socket (:func:`recovery`): a response whose ``response.created`` never arrived produced
nothing the app saw and is sent again on a new socket; one that started and is stored is
fetched by its id; anything else fails with what arrived (``.partial``). Never a response run
twice by the client.

A socket kept for the client's next conversation (:class:`Park`): when a conversation ends with
nothing in flight, its socket waits, open and pinged, for the next ``connect()`` of the same
client with the same handshake (URL, query and headers: the credentials among them), which
skips the TCP, TLS and upgrade round trips. At most one per handshake; one idle past
``PARK_IDLE_S`` or too near the connection's 60-minute limit is closed instead of handed out.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar
from urllib.parse import urlencode, urlsplit, urlunsplit

import orjson

__all__ = [
    "MAX_CONNECTION_S",
    "PARK_IDLE_S",
    "RECOVERABLE_CLOSES",
    "REUSE_BEFORE_S",
    "SEND_QUEUE_BYTES",
    "TERMINAL_EVENTS",
    "Demux",
    "Park",
    "Pending",
    "Recovery",
    "check_create",
    "close_advice",
    "create_message",
    "event_kind",
    "park_key",
    "reconnect_delay",
    "recovery",
    "socket_url",
]

# RFC 6455 section 7.4.1 and IANA's registry: the closes worth a new connection (the server went
# away, restarted, failed, asked to try later, or the network dropped). The official client's list
# (openai 3.63, types/websocket_reconnection.py), so both reconnect on the same codes.
RECOVERABLE_CLOSES: Final = frozenset({1001, 1005, 1006, 1011, 1012, 1013, 1015})
# OpenAI "WebSocket mode" guide (read 2026-12-07): a connection lasts at most 60 minutes.
MAX_CONNECTION_S: Final = 3600.0
# A socket kept warm for the next conversation is not handed out this close to that limit.
REUSE_BEFORE_S: Final = MAX_CONNECTION_S - 300.0
# How long a parked socket waits for the client's next conversation. An agent's next task
# usually starts within seconds; past two minutes the three round trips a new socket costs are
# small beside the wait, and the server need not hold a connection nobody uses. Expired lazily
# (at the next connect() or the client's close), as httpcore expires idle keep-alive connections.
PARK_IDLE_S: Final = 120.0
# Handshake headers that differ per conversation without changing what the socket is.
_PER_TRACE: Final = frozenset({"traceparent", "tracestate", "x-request-id"})
# The official client's default bound on messages held for a socket that is not open
# (``max_queue_size``, bytes).
SEND_QUEUE_BYTES: Final = 1_048_576
TERMINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_ENDS: Final = TERMINAL_EVENTS | {"error"}

Recovery = Literal["resend", "fetch", "fail"]


def socket_url(http_base: str, websocket_base_url: str | None, query: Mapping[str, Any]) -> str:
    """The socket's URL: ``websocket_base_url`` when given (the official client's setting), else the
    client's base URL as ws:// or wss://; ``/responses`` after its path; the query after that."""
    base = str(websocket_base_url) if websocket_base_url else http_base
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss"):
        raise ValueError(f"the WebSocket URL must be ws://, wss://, http:// or https://, got {base!r}")
    path = parts.path.rstrip("/") + "/responses"
    pairs = [(k, v) for k, v in dict(query).items() if v is not None]
    merged = "&".join(p for p in (parts.query, urlencode(pairs, doseq=True)) if p)
    return urlunsplit((scheme, parts.netloc, path, merged, ""))


def park_key(url: str, headers: Iterable[tuple[str, str]]) -> tuple[Any, ...]:
    """What two conversations' handshakes must share for one to take the other's socket: the URL
    with its query, and every header (lower-case names) but the per-trace ones; so never a socket
    opened with another credential, organization, project or beta header."""
    return (url, tuple(sorted((k.lower(), v) for k, v in headers if k.lower() not in _PER_TRACE)))


S = TypeVar("S")


class Park(Generic[S]):
    """The sockets a client keeps for its next conversation: at most one per :func:`park_key`.
    No I/O: what it gives back to close (expired, replaced or unusable sockets), the caller
    closes. Times are the caller's monotonic clock, in seconds. Thread-safe (the sync client's
    conversations may end on several threads)."""

    def __init__(self, idle_s: float = PARK_IDLE_S, max_age_s: float = REUSE_BEFORE_S) -> None:
        self.idle_s, self.max_age_s = idle_s, max_age_s
        self._idle: dict[tuple[Any, ...], tuple[S, float, float]] = {}  # key -> (socket, parked at, opened at)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._idle)

    def _fresh(self, parked_at: float, opened_at: float, now: float) -> bool:
        return now - parked_at <= self.idle_s and now - opened_at <= self.max_age_s

    def put(self, key: tuple[Any, ...], socket: S, opened_at: float, now: float) -> list[S]:
        """Keep ``socket`` (opened at ``opened_at``) for ``key``; returns the sockets to close:
        the one it replaces (the newer is kept: it has more life left), the expired ones, or
        ``socket`` itself when it is already too old to hand out."""
        with self._lock:
            out = self._expire(now)
            if not self._fresh(now, opened_at, now):
                return [*out, socket]
            old = self._idle.pop(key, None)
            if old is not None:
                out.append(old[0])
            self._idle[key] = (socket, now, opened_at)
            return out

    def take(self, key: tuple[Any, ...], now: float,
             usable: Callable[[S], bool] = lambda s: True) -> tuple[S | None, list[S]]:
        """The socket kept for ``key`` if it is fresh and ``usable`` (open, nothing unread, on
        this event loop), and the sockets to close (expired ones, or that one)."""
        with self._lock:
            entry = self._idle.pop(key, None)
            out = self._expire(now)
        if entry is None:
            return None, out
        socket, parked_at, opened_at = entry
        if self._fresh(parked_at, opened_at, now) and usable(socket):
            return socket, out
        return None, [*out, socket]

    def drain(self) -> list[S]:
        """Every kept socket (the client closes): the caller closes them all."""
        with self._lock:
            out = [entry[0] for entry in self._idle.values()]
            self._idle.clear()
            return out

    def _expire(self, now: float) -> list[S]:
        stale = [k for k, (_, parked_at, opened_at) in self._idle.items()
                 if not self._fresh(parked_at, opened_at, now)]
        return [self._idle.pop(k)[0] for k in stale]


def check_create(body: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``response.create`` before it is sent (None: nothing). The guide: over
    the socket a response always streams and ``background`` is not used; ``stream_id`` names a
    lane."""
    if body.get("background"):
        return ("background=True is not supported over the Responses WebSocket (every response "
                "streams on the socket): leave it out, or use client.responses.create(background=True)")
    stream_id = body.get("stream_id")
    if stream_id is not None and (not isinstance(stream_id, str) or not stream_id):
        return f"stream_id must be a non-empty string, got {stream_id!r}"
    generate = body.get("generate")
    if generate is not None and not isinstance(generate, bool):
        return f"generate must be True or False, got {generate!r}"
    return None


def create_message(body: Mapping[str, Any]) -> bytes:
    """The ``response.create`` client event (JSON text): ``type`` first, then the body's fields;
    ``stream`` is dropped (implicit on the socket, and the official client never adds it)."""
    event = {"type": "response.create"}
    event.update((k, v) for k, v in body.items() if k not in ("type", "stream"))
    return orjson.dumps(event)


def event_kind(raw: bytes) -> str | None:
    """The ``type`` of a client event the app sends as raw JSON (None: not a JSON object with
    one): a ``response.create`` sent that way still takes its place in its lane."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def raw_lane(raw: bytes) -> str | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    lane = value.get("stream_id") if isinstance(value, dict) else None
    return lane if isinstance(lane, str) else None


def reconnect_delay(attempt: int, initial: float, maximum: float, draw: float | None = None) -> float:
    """Seconds before reconnection attempt ``attempt`` (1-based): doubling from ``initial`` up to
    ``maximum``, times 0.75-1.0 (jitter), the official client's rule."""
    base = min(initial * (2 ** (attempt - 1)), maximum)
    return base * (0.75 + (random.random() if draw is None else draw) * 0.25)


def close_advice(code: int | None) -> str:
    """What to do after the server closed the socket with ``code`` (RFC 6455 section 7.4.1)."""
    if code in RECOVERABLE_CLOSES:
        return "the connection can be opened again (llmclient does so for the next response)"
    if code == 1008:
        return ("the server closed it for a policy violation: check the API key, the account's "
                "access to the WebSocket mode and the events sent; a new connection would be "
                "refused the same way")
    if code == 1009:
        return "a message was larger than the server accepts: send less input per response"
    if code in (1002, 1003, 1007):
        return "the server could not read what was sent: this is a bug in the client or the server"
    if code == 1000:
        return "the server ended the connection normally: open a new one with client.responses.connect()"
    return "open a new connection with client.responses.connect()"


@dataclass(eq=False)
class Pending:
    """One response on the socket, from its ``response.create`` to its last event.

    ``owner``: what it belongs to (the face's per-response state; None for a ``response.create``
    the app sent raw, whose events go to the connection as they are). ``message``: the create as
    sent, kept until the response started (a lost socket sends it again)."""

    lane: str | None
    message: bytes
    store: bool = True
    owner: Any = None
    created: bool = False
    response_id: str | None = None
    done: bool = False
    sent: int = 0  # times the create went out (1, or 2 after a re-send)

    @classmethod
    def for_body(cls, body: Mapping[str, Any], owner: Any = None) -> Pending:
        lane = body.get("stream_id")
        return cls(lane if isinstance(lane, str) else None, create_message(body),
                   store=body.get("store") is not False, owner=owner)


@dataclass
class Demux:
    """The responses in flight on one socket, by lane in the order sent, and which one each server
    event belongs to (see the module docstring)."""

    lanes: dict[str | None, deque[Pending]] = field(default_factory=dict)
    by_id: dict[str, Pending] = field(default_factory=dict)

    def add(self, pending: Pending) -> None:
        self.lanes.setdefault(pending.lane, deque()).append(pending)

    def route(self, obj: Mapping[str, Any]) -> Pending | None:
        """The response ``obj`` belongs to (None: the connection's own, e.g. steering events, or
        one no response waits for); marks a response started or ended."""
        kind = obj.get("type")
        lane = obj.get("stream_id")
        queue = self.lanes.get(lane if isinstance(lane, str) else None)
        response = obj.get("response")
        rid = response.get("id") if isinstance(response, dict) else None
        found = self.by_id.get(rid) if isinstance(rid, str) else None
        if found is None and queue:
            if kind == "error":
                found = next((p for p in queue if not p.created), None)
            elif kind is not None and kind.startswith("response.") and not kind.startswith("response.steer"):
                found = queue[0]
        if found is None:
            return None
        if kind == "response.created" and isinstance(rid, str) and not found.created:
            found.created, found.response_id = True, rid
            self.by_id[rid] = found
        if kind in _ENDS:
            self._end(found)
        return found

    def _end(self, pending: Pending) -> None:
        pending.done = True
        queue = self.lanes.get(pending.lane)
        if queue is not None:
            try:
                queue.remove(pending)
            except ValueError:
                pass
            if not queue:
                del self.lanes[pending.lane]
        if pending.response_id is not None:
            self.by_id.pop(pending.response_id, None)

    def forget(self, pending: Pending) -> None:
        """Stop routing to ``pending`` (it failed on its own, e.g. a send that never went out)."""
        self._end(pending)

    def in_flight(self) -> Iterator[Pending]:
        for queue in self.lanes.values():
            yield from queue

    def take_all(self) -> list[Pending]:
        """Every unfinished response, in the order sent per lane; the demux is empty after."""
        taken = [p for queue in self.lanes.values() for p in queue]
        self.lanes.clear()
        self.by_id.clear()
        return taken

    def __len__(self) -> int:
        return sum(len(q) for q in self.lanes.values())


def recovery(pending: Pending, can_reconnect: bool) -> Recovery:
    """What becomes of a response in flight when its socket is lost: sent again when it provably
    never started (no ``response.created``) and a new socket may be opened; fetched by its id when
    it started and is stored; else it fails with what arrived."""
    if not pending.created:
        return "resend" if can_reconnect and pending.sent < 2 else "fail"
    if pending.store and pending.response_id is not None:
        return "fetch"
    return "fail"


# -- the reconnection handler's event (the official client's, same fields) --------------------------

@dataclass(frozen=True)
class ReconnectingEvent:
    """What ``on_reconnecting`` is told before each attempt (the fields of the official client's
    ``openai.types.websocket_reconnection.ReconnectingEvent``); it may return a mapping with
    ``extra_query``, ``extra_headers`` (used from this attempt on) or ``abort: True``."""

    attempt: int
    max_attempts: int
    delay: float
    close_code: int
    extra_query: Mapping[str, Any]
    extra_headers: Mapping[str, Any]


# -- websocket_connection_options ---------------------------------------------------------------

# The official option names (openai 3.63, types/websocket_connection_options.py) this transport
# takes, and those it cannot honour (it negotiates only permessage-deflate and no subprotocol).
_TAKEN_OPTIONS: Final = frozenset({"compression", "max_size", "max_queue"})
_REFUSED_OPTIONS: Final = {
    "extensions": "llmclient's WebSocket transport negotiates permessage-deflate only "
                  "(compression='deflate' or None)",
    "subprotocols": "the Responses WebSocket mode has no subprotocol",
    "write_limit": "llmclient's async driver waits for the peer to read (write_timeout) instead "
                   "of a write buffer limit",
}


def connection_settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """The transport's ``WebSocketOptions`` fields for the official ``websocket_connection_options``
    (pure). Raises ValueError naming an option this transport cannot honour (fail fast rather than
    ignore it); ``extensions``/``subprotocols`` given as None or empty are accepted."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name in _REFUSED_OPTIONS:
            if value is None or (name != "write_limit" and not value):
                continue
            raise ValueError(f"websocket_connection_options[{name!r}] is not supported by "
                             f"llmclient's client.responses.connect(): {_REFUSED_OPTIONS[name]}; "
                             f"leave it out")
        if name not in _TAKEN_OPTIONS:
            raise ValueError(f"unknown websocket_connection_options key {name!r} (known: "
                             f"{', '.join(sorted(_TAKEN_OPTIONS | set(_REFUSED_OPTIONS)))})")
        if name == "compression":
            if value not in (None, "deflate"):
                raise ValueError(f"websocket_connection_options['compression'] must be 'deflate' "
                                 f"or None, got {value!r}")
            out["compression"] = value
        elif name == "max_size":
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"websocket_connection_options['max_size'] must be a number of "
                                 f"bytes or None, got {value!r}")
            out["max_size"] = value
        else:  # max_queue: an int, None (no flow control) or (high, low) as websockets takes it
            high = value[0] if isinstance(value, tuple) else value
            if high is None:
                high = 1 << 30
            if not isinstance(high, int) or high < 1:
                raise ValueError(f"websocket_connection_options['max_queue'] must be a positive "
                                 f"number of messages, got {value!r}")
            out["max_queue"] = high
    return out


# -- a response's timings -----------------------------------------------------------------------

@dataclass
class ResponseTimings:
    """One response on the socket, in milliseconds from its ``response.create`` going out:
    ``first_event_ms`` (``response.created``), ``first_token_ms`` (the first output delta),
    ``total_ms`` (its last event). ``sent`` counts the times the create went out (2 after a
    re-send on a new socket); ``recovered``: ``"resent"`` or ``"fetched"`` when a lost socket
    did not lose it. ``trace_id``: the response's own (a child of the connection's trace)."""

    trace_id: str
    response_id: str | None = None
    stream_id: str | None = None
    first_event_ms: float | None = None
    first_token_ms: float | None = None
    total_ms: float | None = None
    sent: int = 1
    recovered: str | None = None
    events: int = 0


_DELTAS: Final = frozenset({"response.output_text.delta", "response.function_call_arguments.delta",
                            "response.refusal.delta", "response.reasoning_text.delta",
                            "response.reasoning_summary_text.delta"})


def is_first_token(kind: str | None) -> bool:
    """Whether an event of ``kind`` carries output (what "time to first token" measures)."""
    return kind in _DELTAS


# -- a stored response fetched after a lost socket --------------------------------------------

def recovered_events(response: Mapping[str, Any], text_seen: str, last_sequence: int | None,
                     lane: str | None) -> list[dict[str, Any]] | None:
    """The events that finish a response the app was reading when the socket was lost, from the
    stored response fetched by its id (``GET /responses/{id}``): the rest of its text as one
    ``response.output_text.delta`` (when the stored text continues what arrived), then its
    terminal event. None when the stored response is not finished (``in_progress``, ``queued``,
    ``cancelled``) or its text does not continue what the app saw: then nothing is made up."""
    status = response.get("status")
    terminal = {"completed": "response.completed", "incomplete": "response.incomplete",
                "failed": "response.failed"}.get(status if isinstance(status, str) else "")
    if terminal is None:
        return None
    text, where = _output_text(response)
    if not text.startswith(text_seen):
        return None
    seq = (last_sequence if last_sequence is not None else -1) + 1
    events: list[dict[str, Any]] = []
    rest = text[len(text_seen):]
    if rest and where is not None:
        events.append({"type": "response.output_text.delta", "sequence_number": seq, **where,
                       "delta": rest, "logprobs": []})
        seq += 1
    events.append({"type": terminal, "sequence_number": seq, "response": dict(response)})
    if lane is not None:
        for e in events:
            e["stream_id"] = lane
    return events


def _output_text(response: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The first message item's text, and where its deltas go (item_id, output_index,
    content_index)."""
    output = response.get("output")
    for i, item in enumerate(output if isinstance(output, list) else ()):
        if isinstance(item, dict) and item.get("type") == "message":
            for j, part in enumerate(item.get("content") or ()):
                if isinstance(part, dict) and part.get("type") == "output_text":
                    return str(part.get("text") or ""), {"item_id": item.get("id"),
                                                          "output_index": i, "content_index": j}
    return "", None
