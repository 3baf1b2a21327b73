"""The Messages API's own failure: a stream whose content stops while its pings go on.

Anthropic's stream sends ``event: ping`` keep-alives, and every byte resets an HTTP read
timeout, so a stream whose content has stopped looks alive to the official client until the
server gives up (issue 45 tried it: ``timeout=5.0``, still waiting after 25 s). llmclient's stall
watchdog counts content events only (a ``ping`` is not progress): past ``stream_idle_timeout`` it
ends the stream with ``APITimeoutError`` and the partial answer.

Each trial is one streamed Messages call whose first send stalls: the reference server's
``x-fault: pings_after=N;ping_ms=P;resume_ms=R;once=TOKEN`` stops the content after N events
and sends only a ping every P ms for R ms, then goes on (a replica that froze and came back);
a re-send carrying the same token runs clean (as a retry on a healthy replica would). Both
clients run inside the same app loop an app writes today: read the stream; on an error start
again, at most :data:`APP_ATTEMPTS` times. Recorded per trial: the time to a whole answer
(``latency_ms``) and the attempts it took.

- ``anthropic``: the official client with its defaults (read timeout 600 s; the pings keep it
  reading, so it waits out the stall);
- ``llmclient``: ``stream_idle_timeout=IDLE_S`` (its default is 60 s, far longer than the stall
  used here: the arm declares the option it sets).

Runs on a reference server of its own started with ``--allow-fault-headers`` (the suite's does
not honour ``x-fault``), behind the run's network; not with ``--base-url``. The quick pass runs
:data:`QUICK_TRIALS` a side (a p50 from 5, the difference being the stall itself);
``BENCH_PINGSTALL_TRIALS`` sets another number (the tests run one).
"""

from __future__ import annotations

import os
import random
import secrets
import time

from ..harness._scenario import (
    Arm,
    ChatRequest,
    Context,
    RequestRecord,
    Row,
    ScenarioResult,
)
from ..harness.records import Driver

ORDER = 85

QUICK_TRIALS = 5
FULL_TRIALS = 20
APP_ATTEMPTS = 3
IDLE_S = 1.0          # llmclient's stream_idle_timeout in this scenario (default 60 s)
STALL_MS = 3000       # the content stops for this long, pings going on
PING_MS = 250
STALL_AFTER = 6       # events before the stall: message_start, block start, ping, 3 deltas
MAX_TOKENS = 32


def trials(quick: bool, env: dict[str, str] | None = None) -> int:
    """Trials a side: ``BENCH_PINGSTALL_TRIALS``, else by pass (pure but for the environment);
    ValueError naming a bad value."""
    raw = (dict(os.environ) if env is None else env).get("BENCH_PINGSTALL_TRIALS")
    if raw is None:
        return QUICK_TRIALS if quick else FULL_TRIALS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"BENCH_PINGSTALL_TRIALS={raw!r}: a whole number of trials, at least 1")
    return int(raw)


def stall_fault(token: str) -> str:
    """The ``x-fault`` of a trial's first send (pure)."""
    return f"pings_after={STALL_AFTER};ping_ms={PING_MS};resume_ms={STALL_MS};once={token}"


async def app_loop(ctx: Context, driver: Driver, request: ChatRequest, variant: str) -> RequestRecord:
    """Send ``request`` until a whole answer comes back, at most :data:`APP_ATTEMPTS` times; one
    record for the trial: time to the whole answer (or to giving up), the attempts."""
    started = time.perf_counter()
    attempts: list[RequestRecord] = []
    for _ in range(APP_ATTEMPTS):
        rec = await driver(request, None)
        attempts.append(rec)
        if rec.ok:
            break
    last = attempts[-1]
    return RequestRecord(
        variant=variant, trace_id=last.trace_id, start_s=started - ctx.epoch,
        latency_ms=(time.perf_counter() - started) * 1000.0, status=last.status,
        error_kind=last.error_kind, output_tokens=last.output_tokens,
        extra={"attempts": len(attempts),
               "first_error": attempts[0].extra.get("error") if not attempts[0].ok else None})


class PingStall:
    name = "pingstall"
    apis = ("anthropic",)
    description = (f"Messages streams whose content stops for {STALL_MS / 1000:g} s while pings go "
                   "on: time to a whole answer inside an app's retry loop, official anthropic client "
                   f"vs llmclient (stream_idle_timeout={IDLE_S:g})")
    requires = ("llmclient", "openai", "spawn_server")
    quick_s = 28  # measured: 5 trials a side (official ~3.3 s each, llmclient ~1.3 s) and a server start

    def run(self, ctx: Context) -> ScenarioResult:
        server = ctx.spawn_fault_server("pingstall")
        n = trials(ctx.quick)
        rng = random.Random(ctx.seed + 85)
        records: dict[str, list[RequestRecord]] = {"anthropic": [], "llmclient": []}
        try:
            with ctx.routed(server) as url:
                sub = ctx.derive(base_url=url, direct_url=server.base_url, verify=server.ca_path or ctx.verify)
                drivers = {"anthropic": sub.driver("openai", variant="anthropic"),
                           "llmclient": sub.driver("llmclient", variant="llmclient",
                                                   client_options={"stream_idle_timeout": IDLE_S})}
                warm = sub.chat_request("Say hello.", max_tokens=4, stream=True)
                for driver in drivers.values():  # connections and imports, not counted
                    ctx.run(driver(warm, None))
                for i in range(n):
                    for arm in (("anthropic", "llmclient") if i % 2 == 0 else ("llmclient", "anthropic")):
                        ctx.progress(f"  pingstall: trial {i + 1}/{n}: {arm}")
                        prompt = f"Tell me about tides, take {rng.randrange(10**6)}."
                        request = ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS,
                                              stream=True, headers={"x-fault": stall_fault(secrets.token_hex(8))})
                        records[arm].append(ctx.run(app_loop(sub, drivers[arm], request, arm)))
        finally:
            server.stop()
        rows = [Row("stream stalled behind pings: anthropic -> llmclient", "anthropic", "llmclient",
                    technique="stall watchdog that a ping does not reset",
                    context=f"content stops for {STALL_MS / 1000:g} s, a ping every {PING_MS} ms")]
        tries = {arm: sum(int(r.extra.get("attempts") or 0) for r in recs) for arm, recs in records.items()}
        notes = [f"{n} trials a side, alternating; each trial's first send stalls after {STALL_AFTER} "
                 f"events for {STALL_MS} ms (pings every {PING_MS} ms), a re-send runs clean; app loop of at "
                 f"most {APP_ATTEMPTS} attempts",
                 f"attempts: anthropic {tries['anthropic']}, llmclient {tries['llmclient']} for {n} trials each",
                 f"llmclient's stream_idle_timeout is {IDLE_S:g} s here (default 60 s); the official client's "
                 "read timeout (600 s) is reset by every ping, so it waits out the stall"]
        arms = {"anthropic": Arm("anthropic"),
                "llmclient": Arm("llmclient", {"stream_idle_timeout": IDLE_S})}
        return ScenarioResult.of(self, records, rows=rows, notes=notes, series={"attempts": tries}, arms=arms)


SCENARIOS = (PingStall(),)
