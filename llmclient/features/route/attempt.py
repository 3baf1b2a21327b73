"""One call's route through the replicas: the thin I/O around :class:`~.router.Router`'s
decisions, driven by the route layer (llmclient/layers/_async/route.py) at each attempt.

Each attempt goes to the next replica of the call's plan (a call pinned to a replica,
``call.route_pin``: a warm-up or a resumed background stream, goes there only): its base URL (and API key, where the
replica has its own) replace the call's, and the call's record names it (``replica``). A
connection that could not be made (nothing was sent) moves on to the next replica at once,
outside ``max_retries``; a 5xx or 429 sends the retry, if the retry policy allows one, to the
next replica too. The replica's in-flight slot is held until the answer's body is closed (a
stream: until it ends or is closed), and what the call showed (TTFT, Server-Timing queue
time) is then reported to the router.

A 404 ``model_not_found`` (nothing was run) moves on to the next replica at once too: when
another replica serves that model (now, or earlier in this router's life) the one that said
it has no such model is ejected, its ``last_error`` naming it and the model; when none does,
the app's 404 is raised as with one URL and no replica is blamed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import orjson

from ..hedge import HEDGE_HEADER
from ..held_body import HeldBody
from .key import route_key

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ...pipeline.timings import CallRecord
    from .router import Router

__all__ = ["Routed", "model_not_found", "nothing_sent"]


def nothing_sent(exc: BaseException) -> bool:
    """True when the request provably never reached the replica: the connection (or its TLS
    handshake, or a proxy's tunnel) could not be made, or the transport says ``unprocessed``."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) or bool(getattr(exc, "unprocessed", False))


def model_not_found(status: int, raw: bytes) -> bool:
    """True when an error answer says the server has no such model: a 404 whose OpenAI-style
    error ``code`` is ``model_not_found``. Pure."""
    if status != 404:
        return False
    try:
        error = orjson.loads(raw).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("code") == "model_not_found"


def lacks_model(url: str, model: str) -> str:
    """The reason a replica is ejected for a model the others serve."""
    return f"{url} has no model {model!r} (404 model_not_found) while other replicas serve it"


class Routed:
    __slots__ = ("__weakref__", "current", "headers", "key", "lacking", "model", "order", "pos", "router", "tried")

    def __init__(self, router: Router, call: Call) -> None:
        self.router = router
        self.key = route_key(call.path, call.body)
        pinned = router.position(call.route_pin) if call.route_pin else None
        if pinned is not None:  # a call for one replica (its warm-up, a resumed stream it holds)
            self.order = [pinned]
        else:
            self.order = router.plan(self.key, second=HEDGE_HEADER in call.headers)
        self.pos = 0
        self.headers = call.headers  # the call's own: a replica's API key replaces its credentials
        self.current: int | None = None  # the replica whose slot this attempt holds
        self.tried: list[str] = []
        model = call.body.get("model") if isinstance(call.body, dict) else None
        self.model = model if isinstance(model, str) else None
        self.lacking: list[int] = []  # replicas that said 404 model_not_found to this call

    def begin(self, call: Call) -> None:
        """Point the attempt at its replica."""
        self._let_go()
        i = self.order[self.pos % len(self.order)]
        replica = self.router.replicas[i]
        self.router.take(i, self.key.blocks)
        self.current = i
        call.base_url = replica.url
        call.headers = ({**self.headers, "authorization": f"Bearer {replica.api_key}"} if replica.api_key
                        else self.headers)
        call.record.replica = replica.url

    def failed(self, exc: BaseException) -> bool:
        """The attempt raised; True when the call should go on to the next replica at once
        (nothing was sent and a replica this call has not tried is left)."""
        i, self.current = self.current, None
        if i is None:
            return False
        url = self.router.replicas[i].url
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self.tried.append(f"{url} ({reason})")
        if not isinstance(exc, httpx.TransportError):
            self.router.let_go(i)
            return False
        unsent = nothing_sent(exc)
        self.router.failed(i, reason, at_once=unsent)
        self.pos += 1
        return unsent and self.pos < len(self.order)

    def status(self, code: int) -> None:
        """The attempt was answered with an error status (its body read and closed)."""
        i, self.current = self.current, None
        if i is None:
            return
        if code >= 500:
            self.router.failed(i, f"HTTP {code}", at_once=False)
        else:
            self.router.let_go(i)
        if code >= 500 or code == 429:
            self.pos += 1  # a retry goes elsewhere

    def missing_model(self) -> bool:
        """The attempt was answered 404 ``model_not_found``; True when the call should go on
        to the next replica at once (one it has not tried is left). A replica is ejected for
        it once another has served the model."""
        if self.current is None or self.model is None:
            return False
        i, self.current = self.current, None
        url = self.router.replicas[i].url
        self.tried.append(f"{url} (404 model_not_found)")
        self.router.let_go(i)
        if self.router.serves(self.model):
            self.router.eject(i, lacks_model(url, self.model))
        else:
            self.lacking.append(i)
        self.pos += 1
        return self.pos < len(self.order)

    def answered(self, response: httpx.Response, record: CallRecord) -> None:
        """A good answer: its body holds the replica's slot until it is closed."""
        i, self.current = self.current, None
        if i is not None:
            if self.model is not None:
                self.router.served_model(self.model)
                for j in self.lacking:  # they said they have no such model: this one had it
                    self.router.eject(j, lacks_model(self.router.replicas[j].url, self.model))
                self.lacking.clear()
            response.stream = _Held(response.stream, self.router, i, record)

    def resent(self) -> None:
        """The answer is dropped unread and the body sent again (a refused wire or coding)."""
        self._let_go()

    def describe(self) -> str:
        return "; ".join(dict.fromkeys(self.tried))  # each replica once (a retry may go round again)

    def _let_go(self) -> None:
        i, self.current = self.current, None
        if i is not None:
            self.router.let_go(i)

    def __del__(self) -> None:  # an attempt cancelled before its answer (a hedge loser)
        if self.current is not None:
            self._let_go()


class _Held(HeldBody):
    """A response body that gives its replica's slot back when closed, with what the call
    showed (a transport failure mid-body: the replica failed this call)."""

    def __init__(self, inner: Any, router: Router, replica: int, record: CallRecord) -> None:
        super().__init__(inner)
        self._router = router
        self._replica = replica
        self._record = record

    def _give_back(self, failure: str | None) -> None:
        if failure is not None:
            self._router.failed(self._replica, failure, at_once=False)
            return
        rec = self._record
        ttft = rec.first_token_ms if rec.first_token_ms is not None else rec.first_byte_ms
        timing = rec.server_timing
        queue = timing.get("queue", timing.get("queued"))
        self._router.done(self._replica, ttft, queue)
