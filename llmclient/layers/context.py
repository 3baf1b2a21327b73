"""What the layers of one client share: its settings, what it learned, its features' state.

A :class:`Context` is made once per client (``with_options`` copies share its knowledge and
router, as they share connections); each layer takes from it what it needs when the chain is
built (``_async/chain.py``) and never reaches the client itself. The face fills in the few things
that are its own: how a call is built (``build``), how an answer becomes the face's object
(``finish``), which error a status or a transport failure becomes (``errors``), and the transport
the calls go out on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..pipeline.knowledge import Knowledge
from .request import url_of

if TYPE_CHECKING:
    import httpx

    from .._errors import APIConnectionError, APIStatusError
    from ..features.admit import Pacer
    from ..features.admit.gate import Gates
    from ..features.admit.retry_budget import RetryBudget
    from ..features.batch import Batcher
    from ..features.hedge import HedgeTrack
    from ..features.port import Port
    from ..features.prefetch import Speculation
    from ..features.route.router import Router
    from ..pipeline.call import Call
    from .options import CallOptions

__all__ = ["Context", "Errors"]


class Errors(Protocol):
    """The face's errors: what an error status or a failed send becomes (the official
    client's classes, with the call's trace id and timings)."""

    def status_error(self, call: Call, response: httpx.Response, raw: bytes) -> APIStatusError: ...

    def connection_error(self, call: Call, exc: Exception, request: httpx.Request | None) -> APIConnectionError: ...


@dataclass(slots=True, eq=False)
class Context:
    """One client's shared state, as its layers see it."""

    is_async: bool
    defaults: CallOptions  # the client's own call options
    errors: Errors
    # build(method, path, body=None, **kw) -> Call, as the face builds its calls
    build: Callable[..., Call]
    # finish(call, obj, response) -> obj: the call's facts (trace id, timings) on an answer
    finish: Callable[[Call, Any, Any], Any]
    transport: Callable[[], Any]  # the transport the calls go out on (None: through http_client)
    # The sync client's transport, which never changes (the async one's is per event loop).
    fixed_transport: Any = None
    http_client: Any = None  # a caller's own httpx client, when it gave one
    header_forms: dict[tuple[str, str], tuple[bytes, bytes, bytes]] = field(default_factory=dict)
    knowledge: Knowledge = field(default_factory=Knowledge)
    router: Router | None = None
    compress: bool = True  # compress request bodies for origins that read a coding
    priority_field: bool = False  # vLLM's body priority on low calls (features/admit/priority)
    cache_setting: Any = None  # the client's cache=: None (off unless a call asks), True, a spec, a backend
    cache: Any = None  # its ResponseCache, opened on first use (layers/_async/cache.py)
    speculation: Speculation | None = None
    speculation_setting: Any = None
    pacer: Pacer | None = None
    gates: Gates | None = None
    batcher: Batcher | None = None
    # The retry budget per origin (None: off): its buckets, shared through ``redis`` when set.
    retry_budget: RetryBudget | None = None
    redis: Any = None  # the client's redis= (a URL, a redis client or a SharedBudget)
    # Hedged requests: latencies and budget per (site, path, model).
    hedge_tracks: dict[tuple[str, str, str], HedgeTrack] = field(default_factory=dict)
    port: Port | None = None  # what speculation may do with the client (features/port.py)
    # What a layer keeps for the client as a whole (its chains for other options included),
    # made on first use: ``ctx.own("inflight", dict)``.
    states: dict[str, Any] = field(default_factory=dict)
    # Set by the chain: what to do when a layer's ``wanted`` may have changed (speculation was
    # made by a call that asked for prefetch: every call now looks for its prefetches).
    rebuild: Callable[[], None] = lambda: None

    def own(self, name: str, make: Callable[[], Any]) -> Any:
        """The state a layer keeps under ``name`` for this client, made by ``make()`` once."""
        state = self.states.get(name)
        if state is None:
            state = self.states.setdefault(name, make())
        return state

    def speaks_h2(self, call: Call) -> bool | None:
        """Whether the call's origin is known to speak HTTP/2 on our connections (None: not
        known yet; False through a caller's http_client)."""
        transport = self.transport()
        if transport is None:
            return False
        h2: bool | None = transport.origin_record(url_of(call.url)).h2
        return h2
