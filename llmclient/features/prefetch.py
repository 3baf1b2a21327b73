"""Glue from the pipeline to ``speculative``: prefetch follow-ups, join them, warm prefixes.

The decisions live in ``speculative`` (what to predict, what the budget allows, what is stale);
this module only runs them through the client's own pipeline, by the
:class:`~llmclient.features.port.Port` a :class:`Speculation` is given (it never sees the client;
the cache layer attaches it):

* **lookup** (every app call, :meth:`Speculation.lookup` / :meth:`Speculation.alookup`): the speculator observes the
  call (budget credit, history learning, cancelling prefetches of a conversation that moved
  on). A call that matches a prefetch exactly reads the response cache even where the cache's
  policy would not (a sampled request), so it is served by the landed answer (``hit``) or joins
  the prefetch still in flight through the cache's single-flight (``join``).
* **after** (:meth:`Speculation.after`, an answer arrived): the speculator plans follow-ups under the
  client's budget; each is sent in the background (a thread for ``OpenAI``, a task for
  ``AsyncOpenAI``) as a *stream* through the same pipeline, with the cache store forced for
  that exact request. Streaming is what makes cancellation real: closing the stream resets it
  (HTTP/2 RST_STREAM), and the server stops generating.
* **warm** (:meth:`Speculation.warm` / :meth:`Speculation.awarm`, ``prefetch="prefix"``): the prompt with
  ``max_tokens=1`` so the server's prefix cache holds it; ``keep_warm`` refreshes it on a timer.

The state and its decisions are ``prefetch_state.py``; the sends and waits are written once in
``_async/prefetch.py`` and the sync twin is generated (``_sync/prefetch.py``).

Prefetch and warm requests carry ``x-llm-prefetch: 1`` (``warm`` for warm-ups) and
``x-llm-priority: low`` (headers, never the body: the body is the cache key). They inherit the
originating call's headers (a header may pick a deployment, so an answer fetched without it
might not be the answer the app would get) plus ``SpeculationConfig.headers``; they continue
the originating call's trace (a child span), so logs of a failed prefetch carry its trace id.

A prefetched answer to a sampled request (temperature > 0, no seed) is a sample the app has not
seen: it is served once and deleted. So is any prefetched answer when the client has no cache
of its own (the in-memory cache then exists only to carry prefetches). Nothing here ever raises
into the app's call: errors are counted (``speculation_stats()["errors"]``) and logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..pipeline.call import Call
from ._async import prefetch as _async_prefetch
from ._sync import prefetch as _sync_prefetch
from .prefetch_state import (
    PREFETCH_HEADER,
    PRIORITY_HEADER,
    PrefetchError,
    SpeculationConfig,
    SpeculationState,
    Start,
    _on_stream_complete,
    after_call,
    config_from,
    is_prefetch_call,
)

if TYPE_CHECKING:
    from .port import Port

__all__ = [
    "PREFETCH_HEADER",
    "PRIORITY_HEADER",
    "PrefetchError",
    "Speculation",
    "SpeculationConfig",
    "SpeculationState",
    "config_from",
    "is_prefetch_call",
]


class Speculation:
    """Speculation attached to one client's pipeline (by the cache layer, ``layers/_async/cache.py``): its state, and the
    :class:`~llmclient.features.port.Port` it builds and sends its requests through. It never sees
    the client itself."""

    __slots__ = ("_start", "port", "state")

    def __init__(self, port: Port, config: SpeculationConfig) -> None:
        self.port = port
        self.state = SpeculationState(config)
        # a prefetch goes in a thread of the sync client, a task of the async client's loop
        self._start: Start = _async_prefetch._start_async if port.is_async else _sync_prefetch._start_sync

    def lookup(self, call: Call) -> Any:
        """The cache stage with speculation around it (sync)."""
        return _sync_prefetch.lookup(self.port, self.state, call)

    async def alookup(self, call: Call) -> Any:
        """The cache stage with speculation around it (async)."""
        return await _async_prefetch.alookup(self.port, self.state, call)

    def after(self, call: Call, value: Mapping[str, Any]) -> None:
        """An answer arrived: plan follow-ups and start them in the background. Never raises."""
        after_call(self.port, self.state, call, value, self._start)

    def on_stream_complete(self, prior: Any) -> Any:
        """A Stream ``on_complete`` callback: ``prior`` (the cache's store), then plan
        prefetches from the finished stream's answer."""
        return _on_stream_complete(self.port, self.state, prior, self._start)

    def warm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        """``client.warm(...)`` (sync)."""
        return _sync_prefetch.warm(self.port, self.state, keep_warm, args)

    async def awarm(self, keep_warm: bool | float, args: dict[str, Any]) -> Any:
        """``client.warm(...)`` (async)."""
        return await _async_prefetch.awarm(self.port, self.state, keep_warm, args)

    def close(self) -> None:
        """Stop keep-warm timers and cancel prefetches in flight (sync client)."""
        _sync_prefetch.close(self.state)

    async def aclose(self) -> None:
        """Stop keep-warm timers and cancel prefetches in flight (async client)."""
        await _async_prefetch.aclose(self.state)
