"""Streams that are cut or stall: how many answers come out whole, and at what cost.

A fraction of the streams is reset at a random point of the answer (5% and 20%), and 2% stall
(the server goes silent mid-answer, the connection held open), over the run's network, for
background Responses streams (``background=True``: the server keeps the run's events) and for
Chat Completions streams. Beside them, the same requests unfaulted (the baseline that "time to a
complete answer p99 at most 1.3x the unfaulted run" is measured against).

Per client, each wrapped in the same app-level loop an app writes today (read the stream; on an
error or an answer without its end, start again from scratch, at most :data:`APP_ATTEMPTS` times):

- ``openai``: the official client (its retries cover the request, not a stream cut mid-answer),
  read timeout :data:`OFFICIAL_READ_S` s;
- ``llmclient``: llmclient with its stream watchdog at :data:`IDLE_S` s; a cut background stream
  resumes from its last event, a chat stream cut before content is sent again, one cut after
  content raises (and the app loop starts again);
- ``llmclient+continue`` (chat only): as ``llmclient``, with ``stream_resume="continue"``: a chat
  stream cut after content is continued from its partial answer.

The time limits are scaled down so that the scenario runs in seconds: both defaults are far longer
(the official read timeout is 600 s, llmclient's idle limit 60 s) and their ratio is 10, not the
5 used here, which favours the official client.

Which streams fail, and where, is drawn up front (seeded): each faulted request carries an
``x-fault`` header with a ``once`` token, so the fault fires on the first attempt only; a retry,
re-send, resume or continuation runs clean (as after a real network blip). Recorded per request:
attempts, tokens shown in an attempt that was thrown away (``tokens_twice``: generated again by
the next attempt; for an abandoned background run the server goes on generating the rest, so this
is a lower bound there), the longest stretch without a new token after the first
(``frozen_ms``), llmclient's own resumes, and of them the early ones (a silent background stream
resumed beside its connection before the idle limit, ``early_won``).

On the Messages API (``--api anthropic``) the same loop runs Messages streams (``messages``),
``anthropic.AsyncAnthropic`` against ``llmclient.AsyncAnthropic`` (built by the harness's
``official_client`` / ``llmclient_client``, the drivers' builders), with the faults the reference
server's Messages route has: a cut is a reset mid-answer (``reset_after``) or, every other one, the
``event: error`` with ``overloaded_error`` the API sends when it is overloaded mid-answer
(``error_after``); a stall is a ping-only stall (``pings_after``: the content stops, an ``event:
ping`` goes on every :data:`PING_MS` ms for :data:`PING_STALL_MS` ms, then the stream goes on: the
official client's read timeout never fires, every ping resets it; llmclient's watchdog does not
count a ping as progress); and in the full pass :data:`OVERLOAD_RATE` of the streams are refused
with a 529 ``overloaded_error`` before they start (``Retry-After: 1``; both clients retry it). A
stream llmclient gives up on raises with what arrived as ``.partial``; recorded per answer:
``partial_kept``, the failed attempts whose ``.partial`` text is what the app was shown. A
Messages stream cut before content is sent again by llmclient's defaults; one cut in its text
goes on with ``stream_resume="continue"`` (the partial text as a prefill, the final assistant
turn the Messages API writes on from), the third client. What does not apply there: background
Responses streams (the Messages API keeps no events to resume from).

A subset (the full run takes about 30 minutes on 2 cores): ``BENCH_STREAMS_APIS`` (comma-separated,
of :data:`APIS`) and ``BENCH_STREAMS_MIXES`` (of the mixes' names) restrict the run (``messages`` is the one API of
``--api anthropic``), e.g.
``BENCH_STREAMS_APIS=responses BENCH_STREAMS_MIXES=clean,cut20 python -m benchmarks --full
--scenarios streams`` (:func:`subset`); ``BENCH_STREAMS_N`` sets the streams per client and mix
(:func:`streams_per_mix`).
"""

from __future__ import annotations

import dataclasses
import os
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..harness._scenario import (
    Arm,
    ChatRequest,
    Context,
    Rate,
    RequestRecord,
    Row,
    ScenarioResult,
)

ORDER = 85

# The scenario's time limits (scaled down from the defaults, see the module docstring).
IDLE_S = 1.0           # llmclient's stream_idle_timeout
OFFICIAL_READ_S = 5.0  # the official client's read timeout
APP_ATTEMPTS = 3       # the app-level loop: attempts per answer
MAX_TOKENS = 32
QUICK_MAX_TOKENS = 24
STALL_RATE = 0.02
# Mixes: (name, share of streams reset mid-answer). Stalls come on top in the faulted ones.
MIXES = (("clean", 0.0), ("cut5", 0.05), ("cut20", 0.20))
APIS = ("responses", "chat")
MESSAGES_APIS = ("messages",)  # --api anthropic: the Messages API's streams
# The Messages API's faults (see the module docstring): the ping-only stall's length and rhythm,
# longer than the official client's read timeout to show that a ping resets it; the share of
# streams a 529 refuses before they start (the full pass's faulted mixes).
PING_MS = 250
PING_STALL_MS = 8000
OVERLOAD_RATE = 0.02
# The quick pass: per API, 6 streams of which 5 are reset mid-answer and none stall (a stall
# costs the official client its whole read timeout), judged on a count: how many cut streams
# were finished without the app starting over. 5 a side decides it; a p99 needs 200.
QUICK_STREAMS = 6
QUICK_MIX = ("cut5of6", 5 / QUICK_STREAMS)
# Events before the first text: chat sends its role chunk; a Responses stream four events
# (created, in_progress, output_item.added, content_part.added); a Messages stream three
# (message_start, content_block_start, ping).
_LEAD = {"chat": 1, "responses": 4, "messages": 3}


def stream_apis(api: str) -> tuple[str, ...]:
    """The stream APIs a run of ``--api api`` covers (pure)."""
    return MESSAGES_APIS if api == "anthropic" else APIS


@dataclass(frozen=True)
class Plan:
    """Which of ``n`` requests fail and how: index -> x-fault header (``{once}`` is filled in
    per attempt-series by the driver, so each variant's copy faults once)."""

    faults: Mapping[int, str]

    def kind(self, i: int) -> str | None:
        spec = self.faults.get(i)
        return None if spec is None else spec.split("=", 1)[0]


def plan_faults(n: int, cut_rate: float, stall_rate: float, api: str, rng: random.Random,
                max_tokens: int = MAX_TOKENS, overload_rate: float = 0.0) -> Plan:
    """Pure: ``round(cut_rate * n)`` resets and ``round(stall_rate * n)`` stalls (at least one of
    each when the rate is above zero, so a quick pass measures both), at points drawn uniformly
    over the stream's events (role chunk or opening events included: a cut before content is a
    case too). On ``messages`` every other cut is an ``overloaded_error`` event instead of a
    reset, a stall is a ping-only one, and ``overload_rate`` of the streams (at least one, above
    zero, in a faulted mix) are refused with a 529 before they start."""
    cuts = max(1, round(cut_rate * n)) if cut_rate > 0 else 0
    stalls = max(1, round(stall_rate * n)) if cut_rate > 0 and stall_rate > 0 else 0
    overloads = max(1, round(overload_rate * n)) if api == "messages" and cut_rate > 0 and overload_rate > 0 else 0
    if cuts + stalls + overloads > n:
        raise ValueError(f"{cuts} cuts, {stalls} stalls and {overloads} 529s do not fit in {n} requests")
    chosen = rng.sample(range(n), cuts + stalls + overloads)
    last = max_tokens + _LEAD[api]
    faults = {}
    for j, i in enumerate(chosen):
        if j >= cuts + stalls:
            faults[i] = "status=529;once={once}"
            continue
        at = rng.randint(1, last)
        if api != "messages":
            item = "reset_after" if j < cuts else "stall_after"
            faults[i] = f"{item}={at};once={{once}}"
        elif j < cuts:
            faults[i] = f"{'reset_after' if j % 2 == 0 else 'error_after'}={at};once={{once}}"
        else:
            faults[i] = f"pings_after={at};ping_ms={PING_MS};resume_ms={PING_STALL_MS};once={{once}}"
    return Plan(faults)


# ---- one answer, through an app-level retry loop ---------------------------------------------
class _Answer:
    """What one answer cost across its attempts (the app loop's bookkeeping)."""

    def __init__(self, ctx: Context, variant: str) -> None:
        self.ctx = ctx
        self.variant = variant
        self.t0 = time.perf_counter()
        self.first: float | None = None
        self.last: float | None = None
        self.frozen = 0.0
        self.tokens = 0        # shown in the current attempt
        self.twice = 0         # shown in attempts thrown away
        self.attempts = 0
        self.resumes = 0
        self.early_won = 0
        self.shown = ""        # the current attempt's text, as the app was shown it
        self.partials = 0      # failed attempts whose ``.partial`` carried the text shown
        self.partial_lost = 0  # failed attempts with text shown but a ``.partial`` without it

    def partial(self, exc: BaseException) -> None:
        """A failed attempt: whether its error's ``.partial`` (llmclient's) holds what was shown."""
        text = getattr(getattr(exc, "partial", None), "text", None)
        if not self.shown or text is None:
            return
        if text == self.shown:
            self.partials += 1
        else:
            self.partial_lost += 1

    def token(self) -> None:
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        if self.last is not None:
            self.frozen = max(self.frozen, now - self.last)
        self.last = now
        self.tokens += 1

    def retry(self) -> None:
        self.twice += self.tokens
        self.tokens = 0
        self.shown = ""

    def record(self, fault: str | None, error: str | None) -> RequestRecord:
        now = time.perf_counter()
        return RequestRecord(
            variant=self.variant, trace_id=secrets.token_hex(16), start_s=self.t0 - self.ctx.epoch,
            latency_ms=(now - self.t0) * 1000.0, status=200 if error is None else None,
            error_kind=error, output_tokens=self.tokens or None,
            ttft_ms=None if self.first is None else (self.first - self.t0) * 1000.0,
            extra={"fault": fault, "attempts": self.attempts, "tokens_twice": self.twice,
                   "frozen_ms": self.frozen * 1000.0, "resumes": self.resumes,
                   "early_won": self.early_won, "partial_kept": self.partials,
                   "partial_lost": self.partial_lost})


def _text_and_end(api: str, item: Any) -> tuple[str | None, bool]:
    if api == "messages":
        kind = getattr(item, "type", None)
        if kind == "content_block_delta":
            text = getattr(getattr(item, "delta", None), "text", None)
            return (text if isinstance(text, str) else None), False
        return None, kind == "message_stop"
    if api == "responses":
        kind = getattr(item, "type", None)
        # response.incomplete is a whole answer too: the one that reached max_output_tokens.
        return (item.delta if kind == "response.output_text.delta" else None,
                kind in ("response.completed", "response.incomplete"))
    if not item.choices:
        return None, False
    choice = item.choices[0]
    return choice.delta.content, choice.finish_reason is not None


OpenStream = Callable[[ChatRequest, dict[str, str]], Any]


def _app_driver(ctx: Context, api: str, variant: str, open_stream: OpenStream) -> Any:
    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        answer = _Answer(ctx, variant)
        spec = request.headers.get("x-fault")
        fault = None if spec is None else spec.split("=", 1)[0]
        headers = {} if spec is None else {"x-fault": spec.format(once=secrets.token_hex(8))}
        error = "truncated"
        while answer.attempts < APP_ATTEMPTS:
            answer.attempts += 1
            complete = False
            try:
                stream = await open_stream(request, headers)
                async for item in stream:
                    text, end = _text_and_end(api, item)
                    if text:
                        answer.token()
                        answer.shown += text
                    complete = complete or end
                timings = getattr(stream, "timings", None)
                answer.resumes += int(getattr(timings, "resumes", 0) or 0)
                answer.early_won += int(getattr(timings, "early_resumes_won", 0) or 0)
            except Exception as exc:
                answer.partial(exc)
                timings = getattr(exc, "timings", None)
                answer.resumes += int(getattr(timings, "resumes", 0) or 0)
                answer.early_won += int(getattr(timings, "early_resumes_won", 0) or 0)
                error = _kind(exc)
                complete = False
            if complete:
                return answer.record(fault, None)
            answer.retry()
        return answer.record(fault, error)

    return send


def _kind(exc: BaseException) -> str:
    from ..harness.drivers import classify_error

    return classify_error(exc)


def _prompt(request: ChatRequest) -> str:
    return str(request.messages[0]["content"])


def _opener(client: Any, api: str, model: str, **options: Any) -> OpenStream:
    from ..harness.drivers import _create_kwargs, messages_body

    async def open_stream(request: ChatRequest, headers: dict[str, str]) -> Any:
        if api == "messages":  # the drivers' Messages body: temperature in extra_body (anthropic 2.17)
            body = _create_kwargs(messages_body(dataclasses.replace(request, extra_body={"temperature": 0}), model))
            return await client.messages.create(extra_headers=headers, **body, **options)
        if api == "responses":
            return await client.responses.create(
                model=model, input=_prompt(request), max_output_tokens=request.max_tokens,
                background=True, stream=True, temperature=0, extra_headers=headers, **options)
        return await client.chat.completions.create(
            model=model, messages=request.messages, max_tokens=request.max_tokens, stream=True,
            temperature=0, extra_headers=headers, **options)

    return open_stream


def _official(ctx: Context, api: str, variant: str) -> Any:
    from ..harness.drivers import official_client

    # read (and connect) timeout: OFFICIAL_READ_S
    client = official_client(ctx.api, ctx.base_url, ctx.api_key, ctx.verify, timeout=OFFICIAL_READ_S)
    ctx.closers.append(client.close)
    return _app_driver(ctx, api, variant, _opener(client, api, ctx.model))


def _llmclient(ctx: Context, api: str, variant: str, **options: Any) -> Any:
    from ..harness.drivers import llmclient_client

    client = llmclient_client(ctx.api, ctx.base_url, ctx.api_key, ctx.verify, stream_idle_timeout=IDLE_S)
    ctx.closers.append(client.close)
    return _app_driver(ctx, api, variant, _opener(client, api, ctx.model, **options))


def _variants(ctx: Context, api: str, mix: str) -> dict[str, Any]:
    # The official client's variant is named "openai/..." on either API (the report names it
    # "anthropic/..." on the Messages API: ScenarioResult.official_named).
    out = {f"openai/{api}/{mix}": _official(ctx, api, f"openai/{api}/{mix}"),
           f"llmclient/{api}/{mix}": _llmclient(ctx, api, f"llmclient/{api}/{mix}")}
    if api in ("chat", "messages") and _continues(api):
        name = f"llmclient+continue/{api}/{mix}"
        out[name] = _llmclient(ctx, api, name, stream_resume="continue")
    return out


def _continues(api: str) -> bool:
    """Whether this llmclient offers continuation (``stream_resume="continue"``) on ``api``:
    chat, or Messages prefills (``resume.messages_seam``, from the same release)."""
    try:
        from llmclient.pipeline import resume
    except ImportError:
        return False
    return hasattr(resume, "messages_seam" if api == "messages" else "continuation_body")


# ---- the scenario ------------------------------------------------------------------------------
class Streams:
    name = "streams"
    apis = ("openai", "anthropic")
    description = ("5%/20% of streams reset mid-answer and 2% stalled (background Responses and "
                   "chat; on --api anthropic Messages streams, the stalls ping-only, 2% refused with "
                   "529): complete answers, time to a complete answer, tokens generated twice; "
                   "official client + app retry loop vs llmclient")
    requires = ("llmclient", "openai", "faults", "spawn_server")
    # measured: openai: 2 APIs x 7 rounds (one warm-up) x 2-3 clients, 5 cuts each;
    # anthropic: Messages streams, 7 rounds x 3 clients (the third continues), 5 cuts
    quick_s = {"openai": 26, "anthropic": 17}

    def run(self, ctx: Context) -> ScenarioResult:
        rng = random.Random(ctx.seed + 85)
        n = streams_per_mix(ctx.quick, os.environ.get("BENCH_STREAMS_N"))
        # The unfaulted baseline serves the p99 comparison, which only a full run can estimate.
        mixes: tuple[tuple[str, float], ...] = (QUICK_MIX,) if ctx.quick else MIXES
        apis, mixes = subset(os.environ.get("BENCH_STREAMS_APIS"), os.environ.get("BENCH_STREAMS_MIXES"),
                             mixes, stream_apis(ctx.api))
        stall_rate = 0.0 if ctx.quick else STALL_RATE
        max_tokens = QUICK_MAX_TOKENS if ctx.quick else MAX_TOKENS
        server = ctx.spawn_fault_server("streams")
        records: dict[str, list[RequestRecord]] = {}
        try:
            with ctx.routed(server) as url:
                sub = ctx.derive(base_url=url, direct_url=server.base_url,
                                 verify=server.ca_path or ctx.verify,
                                 model=server.model(ctx.api_key) or ctx.model)
                for api in apis:
                    for mix, rate in mixes:
                        plan = plan_faults(n, rate, stall_rate, api, rng, max_tokens,
                                           0.0 if ctx.quick else OVERLOAD_RATE)
                        requests = _requests(sub, n, plan, rng, max_tokens)
                        ctx.progress(f"  streams/{api}/{mix}: {n} streams per client, "
                                     f"{len(plan.faults)} faulted")
                        records.update(sub.interleave(_variants(sub, api, mix), requests, warmup=1))
        finally:
            server.stop()
        summary = summarise(records)
        arms = {f"openai/{api}": Arm(ctx.api) for api in apis}
        arms.update({f"llmclient/{api}": Arm("llmclient") for api in apis})
        for api in apis:
            if any(name.startswith(f"llmclient+continue/{api}/") for name in records):
                arms[f"llmclient+continue/{api}"] = Arm("llmclient", {"stream_resume": "continue"})
        return ScenarioResult.of(self, records, rows=_rows(records, mixes, quick=ctx.quick),
                                 notes=_notes(n, max_tokens, summary),
                                 series={"summary": summary, "idle_s": IDLE_S,
                                         "official_read_s": OFFICIAL_READ_S}, arms=arms)


def streams_per_mix(quick: bool, raw: str | None) -> int:
    """Pure: streams per client and mix: ``BENCH_STREAMS_N`` (a whole number, at least
    :data:`QUICK_STREAMS`), else :data:`QUICK_STREAMS` in the quick pass and 200 in the full one
    (200 a side: what a p99 needs, ``harness.stats.min_samples``). A bad value is a ValueError
    naming it."""
    if not raw:
        return QUICK_STREAMS if quick else 200
    if not raw.strip().isdigit() or int(raw) < QUICK_STREAMS:
        raise ValueError(f"BENCH_STREAMS_N={raw!r}: a whole number of streams, at least {QUICK_STREAMS}")
    return int(raw)


def subset(apis: str | None, mixes: str | None, available: Sequence[tuple[str, float]],
           known: tuple[str, ...] = APIS) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]]:
    """Pure: the APIs and mixes a run covers (``BENCH_STREAMS_APIS`` / ``BENCH_STREAMS_MIXES``,
    comma-separated; unset or empty: all of ``known``, the run's stream APIs). An unknown name
    raises ``ValueError`` naming it."""
    chosen_apis = tuple(a.strip() for a in (apis or "").split(",") if a.strip()) or known
    names = [m for m, _ in available]
    chosen = [m.strip() for m in (mixes or "").split(",") if m.strip()] or names
    for api in chosen_apis:
        if api not in known:
            raise ValueError(f"BENCH_STREAMS_APIS: unknown API {api!r} (one of {', '.join(known)})")
    for mix in chosen:
        if mix not in names:
            raise ValueError(f"BENCH_STREAMS_MIXES: unknown mix {mix!r} (one of {', '.join(names)})")
    return chosen_apis, tuple(m for m in available if m[0] in chosen)


def _requests(ctx: Context, n: int, plan: Plan, rng: random.Random,
              max_tokens: int) -> list[ChatRequest]:
    from ..harness.load import readable_text

    out = []
    for i in range(n):
        spec = plan.faults.get(i)
        out.append(ChatRequest(messages=[{"role": "user", "content": readable_text(40, rng)}],
                               max_tokens=max_tokens, stream=True,
                               headers={} if spec is None else {"x-fault": spec}))
    return out


def summarise(records: Mapping[str, Sequence[RequestRecord]]) -> dict[str, dict[str, Any]]:
    """Pure: per variant, complete answers, tokens generated twice, resumes, and how long the
    stalled streams froze (the longest stretch without a token)."""
    from ..harness.stats import percentile

    out = {}
    for variant, recs in records.items():
        stalled = [r.extra.get("frozen_ms", 0.0) for r in recs if r.extra.get("fault") in ("stall_after", "pings_after")]
        done = [r.latency_ms for r in recs if r.ok]
        faulted = [r.latency_ms for r in recs if r.ok and r.extra.get("fault")]
        out[variant] = {
            "n": len(recs), "complete": sum(r.ok for r in recs),
            "p50_ms": round(percentile(done, 50)) if done else None,
            "max_ms": round(max(done)) if done else None,
            "faulted_p50_ms": round(percentile(faulted, 50)) if faulted else None,
            "tokens_twice": sum(int(r.extra.get("tokens_twice", 0)) for r in recs),
            "app_retries": sum(max(0, int(r.extra.get("attempts", 1)) - 1) for r in recs),
            "resumes": sum(int(r.extra.get("resumes", 0)) for r in recs),
            "early_won": sum(int(r.extra.get("early_won", 0)) for r in recs),
            "partial_kept": sum(int(r.extra.get("partial_kept", 0)) for r in recs),
            "partial_lost": sum(int(r.extra.get("partial_lost", 0)) for r in recs),
            "faults": dict(sorted(Counter(str(r.extra.get("fault")) for r in recs if r.extra.get("fault")).items())),
            "stall_frozen_ms": sorted(round(v) for v in stalled),
        }
    return out


def finished_first_time(record: RequestRecord) -> bool | None:
    """The rate rows' count: a faulted stream (cut or stalled) whose answer came out whole
    without the app starting it over (llmclient's own resumes allowed); None: not faulted."""
    if not record.extra.get("fault"):
        return None
    return record.ok and int(record.extra.get("attempts", 1)) == 1


# What each candidate's claim is called, per API.
_TECHNIQUES = {("llmclient", "responses"): "resumed background streams",
               ("llmclient", "chat"): "cut chat streams, llmclient's defaults",
               ("llmclient+continue", "chat"): "chat continuation",
               ("llmclient", "messages"): "cut Messages streams, llmclient's defaults",
               ("llmclient+continue", "messages"): "Messages continuation (prefill)"}


def _rows(records: Mapping[str, Sequence[RequestRecord]],
          mixes: Sequence[tuple[str, float]] = MIXES[1:], quick: bool = False) -> list[Row | Rate]:
    """Per API, faulted mix and llmclient variant: the cut streams finished without the app
    starting over (a rate, both passes), and in the full pass the time to a complete answer at
    p50/p95/p99 against the official client's and against llmclient's unfaulted run."""
    rows: list[Row | Rate] = []
    for api in (*APIS, *MESSAGES_APIS):
        short = {"responses": "bg", "chat": "chat", "messages": "messages"}[api]
        for mix, rate in mixes:
            if rate <= 0:
                continue
            pct = "5 of 6" if mix == QUICK_MIX[0] else f"{mix.removeprefix('cut')}%"
            for candidate in ("llmclient", "llmclient+continue"):
                if f"{candidate}/{api}/{mix}" not in records:
                    continue
                technique = _TECHNIQUES[(candidate, api)]
                rows.append(Rate(f"streams {short} {pct} cut: openai+retry -> {candidate}, "
                                 "finished without starting over", f"openai/{api}/{mix}",
                                 f"{candidate}/{api}/{mix}",
                                 event="cut streams finished without the app starting over",
                                 count=finished_first_time,
                                 technique=f"{technique} ({pct} cut)"))
                if quick:
                    continue
                for stat in ("p50", "p95", "p99"):
                    rows.append(Row(f"streams {short} {pct}: openai+retry -> {candidate}",
                                    f"openai/{api}/{mix}", f"{candidate}/{api}/{mix}", statistic=stat,
                                    technique=f"{technique} ({pct} cut, {stat} to a complete answer)"))
                if f"{candidate}/{api}/clean" in records:
                    rows.append(Row(f"streams {short} {candidate}: unfaulted -> {pct}",
                                    f"{candidate}/{api}/clean", f"{candidate}/{api}/{mix}",
                                    statistic="p99",
                                    technique=f"{technique}, {pct} cut against none (p99)"))
    return rows


def _notes(n: int, max_tokens: int, summary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    notes = [f"{n} streams per client and mix (interleaved), {max_tokens} tokens each, temperature 0; idle limit "
             f"{IDLE_S:g} s (llmclient) vs read timeout {OFFICIAL_READ_S:g} s (official), both scaled "
             "down from their defaults (60 s, 600 s); app loop: at most "
             f"{APP_ATTEMPTS} attempts, from scratch"]
    for variant, s in summary.items():
        frozen = ", ".join(f"{v / 1000:.1f}s" for v in s["stall_frozen_ms"]) or "-"
        notes.append(f"{variant}: {s['complete']}/{s['n']} complete (time to it: p50 {s['p50_ms']} ms, "
                     f"max {s['max_ms']} ms; faulted streams p50 {s['faulted_p50_ms']} ms), "
                     f"{s['tokens_twice']} tokens generated twice, {s['app_retries']} app retries, "
                     f"{s['resumes']} llmclient resumes ({s['early_won']} early); stalled streams froze "
                     f"{frozen}; faults {s['faults'] or '-'}; failed attempts whose .partial held the text "
                     f"shown: {s['partial_kept']} (without it: {s['partial_lost']})")
    return notes


SCENARIOS = (Streams(),)
