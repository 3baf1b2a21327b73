"""The Scenario interface: how one row (or a few rows) of the savings suite is written.

A scenario is a module in ``benchmarks/scenarios/`` that defines one or more objects with
``name``, ``description``, ``requires`` and ``run(ctx) -> ScenarioResult`` and lists them in a
module-level ``SCENARIOS`` tuple. Discovery (``benchmarks.scenarios.discover``) imports every
module of that package, so adding a file is enough; nobody edits a central list.

    from ..harness._scenario import Context, Row, ScenarioResult

    class Caching:
        name = "cache"
        description = "Zipf-repeated prompts: official client vs llmclient with a response cache"
        requires = ("llmclient", "llmclient.cache")

        def run(self, ctx: Context) -> ScenarioResult:
            requests = [ctx.chat_request(prompt, max_tokens=32) for prompt in prompts]
            records = ctx.interleave(
                {"openai": ctx.driver("openai"), "llmclient": ctx.driver("llmclient", cache=True)},
                requests,
            )
            return ScenarioResult.of(self, records, rows=[Row("cache", "openai", "llmclient")])

    SCENARIOS = (Caching(),)

``requires`` names capabilities (see :data:`CAPABILITIES`). Before ``run`` the suite checks
them against ``ctx.capabilities``; a missing one prints ``not available: <reason>`` and no row
is made up. A scenario that finds out only while running that it cannot go on raises
:class:`NotAvailable` with the reason.

Everything a scenario measures is a :class:`RequestRecord` per request, grouped by *variant*
(``"openai"``, ``"fresh-connection"``, ``"llmclient"``, ...). Stats (percentiles, failures by
status and kind, breakdowns) are derived from those records by ``benchmarks.harness.stats`` when the
result is reported, so every scenario is summarised the same way. A :class:`Row` says which two
variants the savings table compares (baseline first), on which statistic the technique is
judged (``statistic="p99"`` for one that works on the tail, ``"mean"`` for a mixture; p50 by
default) and the ``technique`` its claim is named by; a :class:`Rate` judges a technique on a
count instead (answers completed after a cut, calls refused: what a quick pass can decide
where a p99 cannot). What a user does to get it (``effort``) is derived from the candidate's
:class:`Arm`: ``ctx.driver`` declares the arm of each driver it makes, a scenario that builds
its own clients passes ``arms=`` to :meth:`ScenarioResult.of`. The report puts an interval on
every row and says "needs --full" where the run's samples cannot estimate the statistic.

A scenario chooses its budget from ``ctx.quick``: the quick pass (``make bench``) must decide
every row it shows within its share of five minutes on 2 cores, so it judges tail techniques
on rates and leaves p99 rows to the full pass; a scenario that cannot decide anything within
that share sets ``quick = False`` (a class attribute) and the suite leaves it out of the quick
pass, naming it in the headline as what ``--full`` adds.

Variants run *interleaved* (A B A B ...) through :meth:`Context.interleave`, so machine noise
(other processes on a shared 2-core box) hits both sides alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .serverproc import ServerProcess

from .records import (  # re-exported: scenarios import them from here, beside Context
    CAPABILITIES,
    Arm,
    ChatRequest,
    Driver,
    NotAvailable,
    Rate,
    RequestRecord,
    Row,
    Scenario,
    ScenarioResult,
    new_trace_id,
    traceparent,
)

__all__ = [
    "CAPABILITIES", "Arm", "ChatRequest", "Context", "Driver", "NotAvailable", "Rate", "RequestRecord", "Row",
    "Scenario", "ScenarioResult", "default_api_key", "driver_arm", "new_trace_id", "traceparent",
]

# Driver options that are the harness's plumbing, not a user's setting.
_PLUMBING = frozenset({"variant", "client_options"})


def driver_arm(kind: str, options: Mapping[str, Any], api: str = "openai") -> Arm:
    """The arm a :meth:`Context.driver` call makes: the client, and for llmclient its
    constructor options (``client_options``) and per-call options together. The ``openai``
    driver is the official client of the run's ``api`` (``anthropic``'s on the Messages API). Pure."""
    if kind == "openai":
        return Arm(api)
    if kind == "fresh-connection":
        return Arm("httpx")
    return Arm("llmclient", {**options.get("client_options", {}),
                             **{k: v for k, v in options.items() if k not in _PLUMBING}})


@dataclass
class Context:
    """What a scenario may use. URLs end in ``/v1`` (``api="anthropic"``: the Messages API's
    root, as the official anthropic client takes it; the drivers add ``/v1/messages``).

    base_url     goes through the emulated network (what every measurement should use)
    direct_url   the server without the emulated network (setup, warm-up checks)
    network      profile name ("wan", "lan", "mobile", "loopback")
    budget       requests per variant a scenario should aim for (smaller with ``quick``)
    api          "openai" (Chat Completions) or "anthropic" (the Messages API): which face the
                 drivers speak (``--api``); a scenario runs for the APIs in its ``apis``
    """

    base_url: str
    direct_url: str
    network: str
    quick: bool
    api_key: str
    model: str
    budget: int
    capabilities: frozenset[str]
    verify: str | bool = True               # CA bundle path for the reference server's TLS
    seed: int = 0
    network_measured: dict[str, Any] = field(default_factory=dict)
    server: ServerProcess | None = None     # the embedded server, when there is one
    spawn_server: Callable[..., ServerProcess] | None = None
    progress: Callable[[str], None] = lambda _msg: None
    # Puts the same emulated network in front of another server (e.g. one from spawn_server);
    # yields that server's base URL as seen through it.
    through_network: Callable[[ServerProcess], AbstractContextManager[str]] | None = None
    # --base-url with several URLs: the user's replicas of one model (the replicas scenario)
    replica_urls: tuple[str, ...] = ()
    api: str = "openai"
    epoch: float = field(default_factory=time.perf_counter)
    # One event loop for the whole suite: async clients bound to it stay warm across calls.
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # variant -> how its driver was made (shared by derived contexts; the suite collects it
    # into each scenario's result, where rows derive their effort from it)
    arms: dict[str, Arm] = field(default_factory=dict)

    def run(self, coro: Awaitable[Any]) -> Any:
        """Run a coroutine on the suite's loop (scenarios themselves are plain functions)."""
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        for closer in reversed(self.closers):
            try:
                self.run(closer())
            except Exception:  # a client that fails to close must not hide the results
                pass
        self.closers.clear()
        # Streams a scenario stopped reading still hold async generators; finalise them here,
        # not at interpreter exit, where they would warn about a closed loop.
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    # ---- capabilities -------------------------------------------------------------------
    def missing(self, requires: Sequence[str]) -> list[str]:
        return [name for name in requires if name not in self.capabilities]

    # ---- workload helpers ---------------------------------------------------------------
    def chat_request(self, prompt: str, max_tokens: int = 64, stream: bool = False,
                     **extra: Any) -> ChatRequest:
        return ChatRequest(messages=[{"role": "user", "content": prompt}],
                           max_tokens=max_tokens, stream=stream, extra_body=dict(extra))

    def driver(self, kind: str, **options: Any) -> Driver:
        """A request sender: ``"fresh-connection"`` (new httpx client per call, HTTP/1.1),
        ``"openai"`` (official client, defaults), ``"llmclient"`` (warm HTTP/2; ``options`` go
        to ``create`` as llmclient per-call options, e.g. ``cache=True``)."""
        from .drivers import make_driver

        self.arms[str(options.get("variant", kind))] = driver_arm(kind, options, self.api)
        return make_driver(kind, self, **options)

    def interleave(self, variants: Mapping[str, Driver], requests: Sequence[ChatRequest],
                   warmup: int = 2, distinct: bool = True) -> dict[str, list[RequestRecord]]:
        """Send every request through every variant, alternating A B A B (the order flips each
        round so neither side always goes first); ``warmup`` rounds are sent and dropped.
        ``distinct`` tags each variant's copy of a prompt so the server's prefix cache cannot
        favour the variant that goes second (pass False to send byte-identical requests)."""
        from .load import run_interleaved

        return run_interleaved(self, variants, requests, warmup=warmup, distinct=distinct)

    @contextlib.contextmanager
    def routed(self, server: ServerProcess) -> Iterator[str]:
        """``server``'s base URL through the emulated network (directly when there is none)."""
        if self.through_network is None:
            yield server.base_url
            return
        with self.through_network(server) as url:
            yield url

    def spawn_fault_server(self, purpose: str) -> ServerProcess:
        """A reference server of the suite's profile that honours ``x-fault`` headers (the
        suite's own does not), started and healthy; :class:`NotAvailable` naming ``purpose``
        where none can be started (``--base-url``) or it fails to start. The caller stops it."""
        from .serverproc import ServerError

        if self.spawn_server is None:
            raise NotAvailable(f"{purpose} starts a reference server with fault headers (not with --base-url)")
        profile = self.server.profile if self.server else "zero"
        try:
            server = self.spawn_server(profile=profile, extra_args=("--allow-fault-headers",))
            server.wait_healthy()
        except (ServerError, OSError) as exc:
            raise NotAvailable(f"could not start a reference server with fault headers: {exc}") from exc
        return server

    def derive(self, **changes: Any) -> Context:
        """A copy pointing elsewhere (another server), sharing the loop and the closers."""
        return dataclasses.replace(self, **changes)

    def now_s(self) -> float:
        return time.perf_counter() - self.epoch


def default_api_key(api: str = "openai") -> str:
    return os.environ.get("ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY", "bench-key")
