"""Optimisation advice read from a result document (pure: dict in, sentences out).

Each rule looks at one measured fact and speaks only when it is big enough to matter; the
thresholds are named so a reader can see why a sentence appeared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["advise"]

SHARE_WORTH_MENTIONING = 0.15   # a component above 15% of p50 latency is worth a sentence
HARNESS_LAG_WARN_MS = 5.0

Doc = Mapping[str, Any]


def _scenarios(doc: Doc) -> Iterator[Mapping[str, Any]]:
    for scen in doc.get("scenarios", []):
        if not scen.get("skipped"):
            yield scen


def _share(summary: Mapping[str, Any], parts: tuple[str, ...]) -> tuple[float, float] | None:
    p50 = summary.get("latency_ms", {}).get("p50")
    breakdown = summary.get("breakdown_p50_ms", {})
    values = [breakdown[p]["p50"] for p in parts if p in breakdown]
    if not p50 or not values:
        return None
    share = sum(values) / p50
    if share > 1.0:
        # The part was measured on a subset of the requests (e.g. only the cache misses reach
        # the server's queue) whose latency is not the variant's p50: no share to speak of.
        return None
    return share, sum(values)


def _connection_setup(doc: Doc) -> Iterator[str]:
    for scen in _scenarios(doc):
        for variant, s in scen.get("summaries", {}).items():
            share = _share(s, ("connect", "tls"))
            if share and share[0] >= SHARE_WORTH_MENTIONING:
                yield (f"{share[0]:.0%} of p50 latency ({share[1]:.0f} ms) in {scen['name']}/"
                       f"{variant} is connection setup (TCP + TLS handshakes): reuse connections "
                       "(llmclient keeps a warm HTTP/2 connection per origin).")


def _server_queue(doc: Doc) -> Iterator[str]:
    """Queueing under load is advice per scenario; the server's fixed pre-model time (seen in
    sequential runs) is one sentence for the whole run."""
    fixed: list[tuple[float, float, str]] = []
    for scen in _scenarios(doc):
        series = scen.get("series", {})
        loaded = "points" in series or "rate" in series
        for variant, s in scen.get("summaries", {}).items():
            found = _share(s, ("server.queue",))
            if found is None or found[0] < SHARE_WORTH_MENTIONING:
                continue
            if loaded:
                yield (f"{found[0]:.0%} of p50 latency ({found[1]:.0f} ms) in {scen['name']}/"
                       f"{variant} is waiting in the server's queue: the offered load is near "
                       "capacity; lower the rate, add replicas, or send prefetch/warm-up "
                       "traffic at low priority.")
            else:
                fixed.append((found[0], found[1], f"{scen['name']}/{variant}"))
    if fixed:
        share, ms, where = max(fixed)
        yield (f"Up to {share:.0%} of p50 latency ({ms:.0f} ms, {where}) is the server's queue "
               "(Server-Timing 'queue') even one request at a time: server-side time before "
               "the model runs, which no client setting removes.")


def _knee(doc: Doc) -> Iterator[str]:
    for scen in _scenarios(doc):
        knee = scen.get("series", {}).get("knee_rate")
        if knee:
            yield (f"Latency turns up at about {knee:g} req/s on the "
                   f"{scen['series'].get('profile', 'tested')} profile: size for steady load "
                   f"below about {0.8 * knee:g} req/s (80% of the knee) to keep P99 flat.")


def _network(doc: Doc) -> Iterator[str]:
    rtt = doc.get("network", {}).get("rtt_ms")
    if isinstance(rtt, Mapping):   # benchmarks.netem reports {"median", "p90", "min", "n"}
        rtt = rtt.get("median")
    if not rtt:
        return
    for scen in _scenarios(doc):
        for row in scen.get("rows", []):
            p50 = row.get("candidate_p50")
            # Rows whose p50 is under a round trip never touched the network (cache hits,
            # joined prefetches): nothing to say about round trips there.
            if (p50 and row.get("metric") == "latency_ms" and p50 >= rtt
                    and rtt / p50 >= SHARE_WORTH_MENTIONING):
                yield (f"One network round trip ({rtt:.0f} ms) is {rtt / p50:.0%} of "
                       f"llmclient's p50 in '{row['label']}': every round trip saved "
                       "(connection reuse, HTTP/2 multiplexing, caching, prefetch) shows directly.")
                return


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


def _savings(doc: Doc) -> Iterator[str]:
    """A sentence per claim that won or lost, from the claims the headline and the chart read
    (``verdicts.claims``): a tie or a row this pass could not judge claims nothing here either."""
    from .stats import LOSS, WIN
    from .verdicts import claims, interval_text

    for c in claims(doc):
        if c["outcome"] not in (WIN, LOSS):
            continue
        name = c["claim"]
        if c.get("kind") == "rate":
            change = "better" if c["outcome"] == WIN else "worse"
            yield f"{name}: {c['event']} {interval_text(c)}, {change} with llmclient ({c['label']})."
            continue
        if c.get("baseline_stat") is None or c.get("candidate_stat") is None:
            continue
        r = c.get("ratio")
        stat = c.get("statistic", "p50")
        metric = str(c.get("metric") or "latency_ms").removesuffix("_ms")
        span = (f"{c['label']}: {_ms(c['baseline_stat'])} -> {_ms(c['candidate_stat'])}, "
                f"n={c.get('n_candidate')}; {interval_text(c)}")
        if c["outcome"] == WIN and r and r >= 10:
            yield f"{name}: llmclient's {stat} {metric} is {r:,.0f}x shorter ({span})."
        elif c["outcome"] == WIN and r:
            yield f"{name}: llmclient cuts {stat} {metric} by {1 - 1 / r:.0%} ({span})."
        elif c["outcome"] == LOSS and r:
            yield (f"{name}: llmclient is slower at {stat} ({span})"
                   + (f"; {c['context']}" if c.get("context") else "")
                   + ": check the per-request breakdown in this report before relying on it here.")


def _failures(doc: Doc) -> Iterator[str]:
    for scen in _scenarios(doc):
        for variant, s in scen.get("summaries", {}).items():
            by_status = s.get("failures_by_status", {})
            throttled = by_status.get("429", 0)
            if throttled:
                yield (f"{throttled} of {s['n']} requests in {scen['name']}/{variant} ended in "
                       "429: retry with backoff that honours Retry-After (llmclient does), or "
                       "lower concurrency.")
            kinds = {k: v for k, v in s.get("failures_by_kind", {}).items()
                     if k not in ("http_error",)}
            if kinds:
                yield (f"{scen['name']}/{variant} lost requests without an HTTP status "
                       f"({kinds}): set timeouts and retries for idempotent calls; truncated "
                       "streams must not be cached or shown as complete.")


def _harness(doc: Doc) -> Iterator[str]:
    lag = doc.get("harness_overhead", {}).get("lag_p99_ms")
    if lag is not None and lag > HARNESS_LAG_WARN_MS:
        yield (f"The harness itself sends up to {lag:.1f} ms late at p99 (busy machine): treat "
               "differences below that as noise.")


RULES: tuple[Callable[[Doc], Iterator[str]], ...] = (
    _savings, _connection_setup, _network, _server_queue, _knee, _failures, _harness)


def advise(doc: Doc) -> list[str]:
    """Sentences, most useful first, no duplicates."""
    out: list[str] = []
    for rule in RULES:
        for sentence in rule(doc):
            if sentence not in out:
                out.append(sentence)
    return out
