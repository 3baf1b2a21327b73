"""Speculative prefetch and prefix warming: what a predicted follow-up and a warm prefix save.

Two parts, each against the suite's server (the reference server's ``h100-8b`` profile by
default: ~60 ms per request outside the GPU, ~10 ms per output token, prefix caching on):

* ``followups``: multi-turn conversations with think time between turns. Exactly
  ``PREDICTABLE_SHARE`` of the follow-up user turns (in a seeded order, the same on both
  sides) are one of the likely follow-ups offered as ``prefetch=[...]``, the others a free
  question nobody could predict. Rounds of concurrent conversations alternate between a
  client without speculation (``baseline``) and one with it (``speculation``, the budget
  below), so machine noise hits both. Reported: the p50 of each kind of follow-up (predicted,
  unpredicted), the mean over all of them (their p50 would jump between the two kinds), hit
  rate, wasted tokens, extra load.
* ``prefix``: the next turn of a long conversation (8,000+ prompt tokens), streamed; TTFT
  cold vs after ``client.warm(...)`` of the conversation so far during the think time.

Targets: a correctly predicted follow-up at p50 <= 0.1x its uncached latency; TTFT
after warming <= 0.3x; extra load within the budget's ``max_load_share``.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

from ..harness._scenario import Arm, Context, NotAvailable, RequestRecord, Row, ScenarioResult

ORDER = 60

LIKELY = ("continue", "explain in more detail")
PREDICTABLE_SHARE = 0.7
FOLLOWUPS_PER_CONVERSATION = 2
CONCURRENT_CONVERSATIONS = 4
THINK_S = (0.8, 1.6)          # a reader's pause before the next turn (uniform)
MAX_TOKENS = 48
LONG_PROMPT_WORDS = 8_000      # ~1 token per word with the reference tokenizer
LONG_THINK_S = 0.3             # between the warm-up and the next turn
# Next-turn trials per side: 5 is the fewest a p50 is estimated from (harness.stats.min_samples).
QUICK_PREFIX_TRIALS = 5


def _budget() -> Any:
    from llmclient.speculative import BudgetConfig

    # Both likely follow-ups of every answer: up to 2 extra requests per app call, and room for
    # every concurrent conversation's two in flight.
    return BudgetConfig(max_in_flight=2 * CONCURRENT_CONVERSATIONS, max_load_share=2.0,
                        burst=2.0 * CONCURRENT_CONVERSATIONS,
                        max_tokens_per_minute=200_000, max_candidates=len(LIKELY))


def _client(ctx: Context, **kwargs: Any) -> Any:
    import llmclient

    options: dict[str, Any] = {"base_url": ctx.base_url, "api_key": ctx.api_key, **kwargs}
    if ctx.verify is not True:
        options["verify"] = ctx.verify
    client = llmclient.AsyncOpenAI(**options)
    ctx.closers.append(client.close)
    return client


def _record(ctx: Context, variant: str, started: float, response: Any, extra: dict[str, Any]) -> RequestRecord:
    timings = getattr(response, "timings", None)
    usage = getattr(response, "usage", None)
    return RequestRecord(
        variant=variant, trace_id=getattr(response, "trace_id", "") or "",
        start_s=started - ctx.epoch, latency_ms=(time.perf_counter() - started) * 1000.0, status=200,
        output_tokens=getattr(usage, "completion_tokens", None),
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        extra={"cache": getattr(timings, "cache", None),
               "prefetch_joined": getattr(timings, "prefetch_joined", None), **extra})


def _failure(ctx: Context, variant: str, started: float, exc: BaseException) -> RequestRecord:
    return RequestRecord(variant=variant, trace_id=str(getattr(exc, "trace_id", "") or ""),
                         start_s=started - ctx.epoch, latency_ms=(time.perf_counter() - started) * 1000.0,
                         status=getattr(exc, "status_code", None), error_kind=type(exc).__name__)


def predictable_turns(n: int, share: float, rng: random.Random) -> list[bool]:
    """Pure: which of ``n`` follow-up turns are one of the likely follow-ups: exactly
    ``round(share * n)`` of them, in a seeded order (so a quick pass has both kinds, each in a
    known number, rather than whatever a coin gave)."""
    k = round(share * n)
    flags = [True] * k + [False] * (n - k)
    rng.shuffle(flags)
    return flags


async def _conversation(ctx: Context, client: Any, variant: str, rng: random.Random,
                        speculate: bool, predictable_flags: list[bool]) -> list[RequestRecord]:
    tag = uuid.uuid4().hex[:10]  # distinct conversations: no variant reuses another's prefix
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"Tell me about the history of {rng.choice(TOPICS)} ({tag})"}]
    prefetch = list(LIKELY) if speculate else None
    answer = await client.chat.completions.create(model=ctx.model, messages=messages, temperature=0,
                                                  max_tokens=MAX_TOKENS, prefetch=prefetch)
    out = []
    for turn in range(FOLLOWUPS_PER_CONVERSATION):
        await asyncio.sleep(rng.uniform(*THINK_S))
        predictable = predictable_flags[turn]
        text = rng.choice(LIKELY) if predictable else f"What about {rng.choice(TOPICS)} in {rng.randint(1200, 2000)}?"
        messages = [*messages, {"role": "assistant", "content": answer.choices[0].message.content},
                    {"role": "user", "content": text}]
        started = time.perf_counter()
        try:
            answer = await client.chat.completions.create(model=ctx.model, messages=messages, temperature=0,
                                                          max_tokens=MAX_TOKENS, prefetch=prefetch)
        except Exception as exc:  # recorded as a failure; the conversation ends here
            out.append(_failure(ctx, variant, started, exc))
            return out
        out.append(_record(ctx, variant, started, answer, {"predictable": predictable, "turn": turn + 1}))
    return out


def _followups(ctx: Context, rng: random.Random) -> tuple[dict[str, list[RequestRecord]], dict[str, Any]]:
    from llmclient import SpeculationConfig

    clients = {"baseline": _client(ctx),
               "speculation": _client(ctx, speculation=SpeculationConfig(budget=_budget()))}
    rounds = 2 if ctx.quick else max(2, ctx.budget // (CONCURRENT_CONVERSATIONS * FOLLOWUPS_PER_CONVERSATION))
    # Both clients get the same sequence of predictable and free turns (turn i of conversation
    # j of round r is of one kind on both sides), exactly PREDICTABLE_SHARE of them predictable.
    per_round = CONCURRENT_CONVERSATIONS * FOLLOWUPS_PER_CONVERSATION
    flags = predictable_turns(rounds * per_round, PREDICTABLE_SHARE, random.Random(ctx.seed + 61))
    records: dict[str, list[RequestRecord]] = {name: [] for name in clients}
    done = {name: 0 for name in clients}
    for r in range(rounds * 2):
        name = ("baseline", "speculation")[(r + r // 2) % 2]  # A B B A A B ...: neither always first
        ctx.progress(f"  speculative/followups: round {r + 1}/{rounds * 2} ({name})")
        mine = flags[done[name] * per_round:(done[name] + 1) * per_round]
        done[name] += 1
        results = ctx.run(_round(ctx, clients[name], name, rng, mine))
        for conv in results:
            records[name] += conv
    ctx.run(_settle(clients["speculation"]))
    stats = clients["speculation"].speculation_stats()
    predictable = [r for r in records["speculation"] if r.extra.get("predictable")]
    served = [r for r in predictable if r.extra.get("cache") in ("hit", "join")]
    variants = dict(records)
    for name in clients:
        variants[f"{name}/predicted"] = [r for r in records[name] if r.extra.get("predictable")]
        variants[f"{name}/unpredicted"] = [r for r in records[name] if r.extra.get("predictable") is False]
    series = {
        "hit_rate_predictable": len(served) / len(predictable) if predictable else None,
        "hits": stats["hits"], "joins": stats["joins"], "sent": stats["sent"],
        "cancelled": stats["cancelled"], "wasted_tokens": stats["wasted_tokens"],
        "used_tokens": stats["used_tokens"], "latency_saved_ms": stats["latency_saved_ms"],
        "extra_load_per_app_call": stats["extra_load"], "budget_max_load_share": _budget().max_load_share,
        "peak_in_flight": stats["peak_in_flight"], "budget_max_in_flight": _budget().max_in_flight,
        "refused": stats["refused"], "errors": stats["errors"],
        "predictable_share": PREDICTABLE_SHARE, "think_s": list(THINK_S),
    }
    return variants, series


async def _round(ctx: Context, client: Any, name: str, rng: random.Random,
                 flags: list[bool]) -> list[list[RequestRecord]]:
    seeds = [rng.random() for _ in range(CONCURRENT_CONVERSATIONS)]
    turns = FOLLOWUPS_PER_CONVERSATION
    return list(await asyncio.gather(*(
        _conversation(ctx, client, name, random.Random(seed), name == "speculation",
                      flags[i * turns:(i + 1) * turns]) for i, seed in enumerate(seeds))))


async def _settle(client: Any, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while client.speculation_stats()["in_flight"] and time.monotonic() < end:
        await asyncio.sleep(0.05)


def _long_conversation(rng: random.Random) -> list[dict[str, Any]]:
    """~8,000 words in a system prompt and five exchanged turns, unique from the first token."""
    nonce = uuid.uuid4().hex
    words = [rng.choice(WORDS) for _ in range(LONG_PROMPT_WORDS)]
    parts = [" ".join(words[i::11]) for i in range(11)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": f"session {nonce} " + parts[0]}]
    for i in range(1, 11, 2):
        messages.append({"role": "user", "content": parts[i]})
        messages.append({"role": "assistant", "content": parts[i + 1]})
    return messages


async def _ttft(ctx: Context, client: Any, variant: str, messages: list[dict[str, Any]],
                warm: bool) -> RequestRecord:
    if warm:
        await client.warm(messages=messages, model=ctx.model, temperature=0)
    await asyncio.sleep(LONG_THINK_S)  # the user types; for "cold" the server idles the same
    turn = [*messages, {"role": "user", "content": "So what should I do next?"}]
    started = time.perf_counter()
    ttft = None
    try:
        stream = await client.chat.completions.create(model=ctx.model, messages=turn, temperature=0, max_tokens=8,
                                                      stream=True, stream_options={"include_usage": True})
        usage = None
        async for chunk in stream:
            if ttft is None and chunk.choices and chunk.choices[0].delta.content:
                ttft = (time.perf_counter() - started) * 1000.0
            usage = getattr(chunk, "usage", None) or usage
    except Exception as exc:
        return _failure(ctx, variant, started, exc)
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None) if usage else None
    return RequestRecord(variant=variant, trace_id=getattr(stream, "trace_id", "") or "",
                         start_s=started - ctx.epoch, latency_ms=(time.perf_counter() - started) * 1000.0,
                         status=200, ttft_ms=ttft, prompt_tokens=getattr(usage, "prompt_tokens", None),
                         output_tokens=getattr(usage, "completion_tokens", None),
                         extra={"cached_tokens": cached})


def _prefix(ctx: Context, rng: random.Random) -> tuple[dict[str, list[RequestRecord]], dict[str, Any]]:
    client = _client(ctx)
    trials = QUICK_PREFIX_TRIALS if ctx.quick else max(QUICK_PREFIX_TRIALS, min(8, ctx.budget // 8))
    records: dict[str, list[RequestRecord]] = {"long/cold": [], "long/warmed": []}
    for i in range(trials * 2):
        warm = (i + i // 2) % 2 == 1
        name = "long/warmed" if warm else "long/cold"
        ctx.progress(f"  speculative/prefix: trial {i + 1}/{trials * 2} ({name})")
        records[name].append(ctx.run(_ttft(ctx, client, name, _long_conversation(rng), warm)))
    prompt = [r.prompt_tokens for r in records["long/cold"] if r.prompt_tokens]
    cached = {name: [r.extra.get("cached_tokens") for r in recs] for name, recs in records.items()}
    if prompt and max(prompt) < 8_000:
        raise NotAvailable(f"long prompt came to {max(prompt)} tokens, not 8,000+ (tokenizer differs)")
    return records, {"long_prompt_tokens": prompt, "cached_tokens": cached,
                     "warmups": client.speculation_stats()["warmups"]}


class Speculative:
    name = "speculative"
    description = ("multi-turn chat with think time: follow-ups with vs without speculative prefetch "
                   f"({int(PREDICTABLE_SHARE * 100)}% predictable), and next-turn TTFT of an 8k-token "
                   "conversation cold vs prefix-warmed")
    requires = ("llmclient", "llmclient.prefetch")
    quick_s = 29  # measured: 4 rounds of conversations with think time, 10 next-turn trials

    def run(self, ctx: Context) -> ScenarioResult:
        if not ctx.model:
            raise NotAvailable("the server lists no model")
        rng = random.Random(ctx.seed + 60)
        variants, series = _followups(ctx, rng)
        long_records, long_series = _prefix(ctx, rng)
        variants.update(long_records)
        hit = series.get("hit_rate_predictable")
        context = (f"prefetch hit rate {hit:.0%} of predictable follow-ups; "
                   f"{series.get('wasted_tokens', 0)} tokens wasted, "
                   f"{series.get('used_tokens', 0)} used" if hit is not None else
                   f"{series.get('wasted_tokens', 0)} tokens wasted")
        share = f"{PREDICTABLE_SHARE:.0%}"
        # Each kind of follow-up on its own (a predicted one is served by its prefetch, a free
        # one is a call), and all of them on their mean: their p50 would jump between the two.
        rows = [
            Row("speculative: predicted follow-up", "baseline/predicted", "speculation/predicted",
                technique="speculative prefetch, predicted follow-ups", context=context),
            Row("speculative: unpredicted follow-ups (cost of the extra load)", "baseline/unpredicted",
                "speculation/unpredicted", technique="speculative prefetch, unpredicted follow-ups",
                context="what the prefetches add to the server's load: "
                        f"{series.get('wasted_tokens', 0)} tokens generated for nothing"),
            Row(f"speculative: all follow-ups ({share} predictable), mean", "baseline", "speculation",
                statistic="mean", technique="speculative prefetch, all follow-ups (mean)",
                context=context),
            Row("prefix warming: next-turn TTFT, 8k-token conversation", "long/cold", "long/warmed",
                metric="ttft_ms", technique="prefix warming (8k-token conversation)"),
        ]
        notes = [
            f"{CONCURRENT_CONVERSATIONS} concurrent conversations per round, rounds alternate A B B A; "
            f"{FOLLOWUPS_PER_CONVERSATION} follow-ups each, think time {THINK_S[0]}-{THINK_S[1]} s, "
            f"max_tokens {MAX_TOKENS}, temperature 0",
            f"budget: {_budget()}",
            "targets: predicted follow-up p50 <= 0.1x baseline; warmed TTFT <= 0.3x cold; "
            "extra load <= budget max_load_share",
        ]
        arms = {"baseline": Arm("llmclient"),
                "speculation": Arm("llmclient", {"speculation": f"SpeculationConfig(budget={_budget()})",
                                                 "prefetch": list(LIKELY)}),
                "long/cold": Arm("llmclient"),
                "long/warmed": Arm("llmclient", {"warm()": "client.warm(messages=history)"})}
        return ScenarioResult.of(self, variants, rows=rows, notes=notes, series={**series, **long_series},
                                 arms=arms)


TOPICS = ("owls", "printing", "the violin", "tea", "glass", "maps", "clocks", "bridges", "salt",
          "paper", "the compass", "bees", "wool", "railways", "the telescope", "cheese")
WORDS = ("time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world",
         "school", "state", "family", "student", "group", "country", "problem", "hand", "part",
         "place", "case", "week", "company", "system", "program", "question", "work", "number",
         "night", "point", "home", "water", "room", "mother", "area", "money", "story", "fact",
         "month", "lot", "right", "study", "book", "eye", "job", "word", "business", "issue", "side")

SCENARIOS = (Speculative(),)
