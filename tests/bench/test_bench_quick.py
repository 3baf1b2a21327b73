"""What the quick pass judges on, pure: exact-enough intervals for counts (checked against
Newcombe's 1998 worked examples), a mean's bootstrap, rate rows from records, and each
scenario's helpers that turn its records into counts or into kinds (cache hits and misses,
predicted and free follow-ups, sessions, first and follow-up turns, straggling calls, cut
streams, refused calls), with the arms their efforts come from."""

from __future__ import annotations

import random

import pytest

from benchmarks.harness._scenario import Arm, RequestRecord, driver_arm
from benchmarks.harness.records import Rate, arm_of, effort_of
from benchmarks.harness.stats import (
    BETTER,
    LOSS,
    NO_DIFFERENCE,
    TOO_FEW,
    WIN,
    WORSE,
    bootstrap_ratio,
    min_samples,
    newcombe_difference,
    outcome,
    rate_verdict,
    wilson,
)
from benchmarks.harness.verdicts import interval_text, rate_json
from benchmarks.scenarios.adaptive import batch_arm
from benchmarks.scenarios.features import session_records, split_by_cache
from benchmarks.scenarios.ratelimits import refused
from benchmarks.scenarios.replicas import by_turn, late_on_slow, mark_late_on, policy_arm
from benchmarks.scenarios.speculative import predictable_turns
from benchmarks.scenarios.streams import finished_first_time
from benchmarks.scenarios.traffic import mark_slow, spread, straggler_slow


def _rec(variant: str = "v", ms: float = 100.0, ok: bool = True, **extra: object) -> RequestRecord:
    return RequestRecord(variant=variant, trace_id="t", start_s=0.0, latency_ms=ms,
                         status=200 if ok else None, error_kind=None if ok else "reset",
                         extra=dict(extra))


def test_wilson_and_newcombe_give_the_published_intervals() -> None:
    # Newcombe 1998 (Stat Med 17:857), 81/263: 0.2553-0.3662; 56/70 - 48/80: 0.0524-0.3339
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert newcombe_difference(48, 80, 56, 70) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    # at 0/n and n/n the bounds are exact, not a point
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson(10, 10)[1] == 1.0 and wilson(10, 10)[0] == pytest.approx(0.7225, abs=5e-5)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_a_rate_verdict_needs_five_trials_and_a_whole_interval_on_one_side() -> None:
    decided = newcombe_difference(0, 5, 5, 5)
    assert decided[0] > 0
    assert rate_verdict(decided, 5, 5, higher_is_better=True) == BETTER
    assert rate_verdict(decided, 5, 5, higher_is_better=False) == WORSE
    assert rate_verdict(newcombe_difference(2, 10, 3, 10), 10, 10, True) == NO_DIFFERENCE
    assert rate_verdict(decided, 4, 5, True) == TOO_FEW
    assert outcome(BETTER) == WIN and outcome(WORSE) == LOSS


def test_a_mean_is_bootstrapped_like_a_quantile() -> None:
    rng = random.Random(1)
    base: list[float | None] = [rng.uniform(300, 900) for _ in range(8)]
    cand: list[float | None] = [v / 3 for v in base if v is not None]
    low, high = bootstrap_ratio(base, cand, "mean")  # type: ignore[misc]
    assert low == pytest.approx(3.0) and high == pytest.approx(3.0)   # paired: exactly 3x
    assert min_samples("mean") == 5


def test_a_rate_row_counts_its_records_and_says_so() -> None:
    cut = [_rec("b", fault="reset_after", attempts=2) for _ in range(5)] + [_rec("b")]
    resumed = [_rec("c", fault="reset_after", attempts=1) for _ in range(5)] + [_rec("c")]
    row = rate_json(Rate("r", "b", "c", event="finished", count=finished_first_time),
                    {"b": cut, "c": resumed})
    assert (row["baseline_events"], row["baseline_trials"]) == (0, 5)   # the clean one is no trial
    assert (row["candidate_events"], row["candidate_trials"]) == (5, 5)
    assert row["verdict"] == BETTER and row["outcome"] == WIN
    assert interval_text(row).startswith("0/5 -> 5/5 (0% -> 100%, difference 95% CI +")
    with pytest.raises(ValueError, match="one of the two"):
        Rate("r", "b", "c", event="e")
    with pytest.raises(ValueError, match="events <= trials"):
        Rate("r", "b", "c", event="e", tallies=(3, 2, 0, 1))


def test_efforts_come_from_the_arms_options() -> None:
    assert effort_of(Arm("llmclient")) == "default"
    assert effort_of(Arm("llmclient", {"cache": "memory"})) == "option"
    assert effort_of(Arm("llmclient", {"cache": "memory", "prefetch": ["x"]})) == "app"
    assert effort_of({"client": "llmclient", "options": {"warm()": True}}) == "app"
    with pytest.raises(ValueError, match="baseline"):
        effort_of(Arm("openai"))
    arms = {"llmclient+cache": Arm("llmclient", {"cache": "memory"})}
    assert arm_of(arms, "llmclient+cache/hits") is arms["llmclient+cache"]
    assert arm_of(arms, "other") is None
    # what ctx.driver records: client options and per-call options, not the plumbing
    assert driver_arm("llmclient", {"variant": "x", "client_options": {"hedge": True},
                                    "images": False}).options == {"hedge": True, "images": False}
    assert driver_arm("openai", {"variant": "o"}) == Arm("openai")
    assert policy_arm("prefix@50%/follow-up").options == {}           # the default policy
    assert policy_arm("round_robin+slow").options == {"policy": "round_robin"}
    assert batch_arm("prio-adaptive").options == {"priority": "low", "priority_field": True,
                                                  "concurrency": "adaptive"}
    assert batch_arm("idle").options == {}


def test_cache_hits_and_misses_pair_with_the_same_requests_without_a_cache() -> None:
    plain = [_rec("llmclient", 300 + i) for i in range(4)]
    cached = [_rec("llmclient+cache", 300, cache=None), _rec("llmclient+cache", 0.2, cache="hit"),
              _rec("llmclient+cache", 0.3, cache="join"), _rec("llmclient+cache", 290, cache="miss")]
    out = split_by_cache({"llmclient": plain, "llmclient+cache": cached}, "llmclient+cache", "llmclient")
    assert [r.latency_ms for r in out["llmclient/at-hits"]] == [301, 302]
    assert [r.latency_ms for r in out["llmclient+cache/hits"]] == [0.2, 0.3]
    assert [r.latency_ms for r in out["llmclient/at-misses"]] == [300, 303]
    with pytest.raises(ValueError, match="line up"):
        split_by_cache({"llmclient": plain[:3], "llmclient+cache": cached}, "llmclient+cache", "llmclient")


def test_a_session_is_its_three_calls_summed_and_a_broken_one_fails() -> None:
    calls = [_rec(ms=1000, step="photo"), _rec(ms=10, step="follow-up"), _rec(ms=300, step="faq"),
             _rec(ms=900, step="photo", ok=False)]
    whole, broken = session_records(calls, "llmclient")
    assert whole.ok and whole.latency_ms == 1310 and whole.variant == "llmclient/session"
    assert not broken.ok and broken.error_kind == "incomplete_session"


def test_exactly_the_stated_share_of_follow_ups_is_predictable() -> None:
    flags = predictable_turns(16, 0.7, random.Random(1))
    assert len(flags) == 16 and flags.count(True) == 11 and flags.count(False) == 5
    assert flags == predictable_turns(16, 0.7, random.Random(1))


def test_first_and_follow_up_turns_and_the_slow_replicas_late_share() -> None:
    prompts = [[{"role": "system", "content": "s"}, {"role": "user", "content": "doc"}],
               [{"role": "system", "content": "s"}, {"role": "user", "content": "doc"},
                {"role": "assistant", "content": "a"}, {"role": "user", "content": "more"}]]
    recs = {"prefix@50%": [_rec(ms=1), _rec(ms=2)]}
    split = by_turn(recs, "prefix@50%", prompts)
    assert [r.latency_ms for r in split["prefix@50%/first"]] == [1]
    assert [r.latency_ms for r in split["prefix@50%/follow-up"]] == [2]
    assert by_turn({"x": [_rec()]}, "x", prompts) == {}                  # does not line up
    run = [_rec(replica="slow"), _rec(replica="a"), _rec(replica="slow"), _rec(replica="b", ok=False)]
    mark_late_on(run, "slow")
    assert [late_on_slow(r) for r in run] == [None, None, True, None]


def test_straggling_calls_are_marked_slow_against_the_baselines_clean_median() -> None:
    assert spread(30, 5) == [3, 9, 15, 21, 27] and spread(20, 5) == [2, 6, 10, 14, 18]
    # calls 1 and 2 straggle: the clean ones (0 and 3) set the bar, 3x their median
    base = [_rec("llmclient", 100), _rec("llmclient", 900), _rec("llmclient", 110), _rec("llmclient", 120)]
    hedged = [_rec("h", 100), _rec("h", 250), _rec("h", 400), _rec("h", 100, ok=False)]
    threshold = mark_slow({"llmclient": base, "llmclient+hedge": hedged}, {1, 2}, "llmclient")
    assert threshold == pytest.approx(3 * 110)       # 3x the median of the clean 100 and 120
    assert [straggler_slow(r) for r in base] == [None, True, False, None]
    assert [straggler_slow(r) for r in hedged] == [None, False, True, None]


def test_a_refused_call_is_one_a_429_turned_away_at_least_once() -> None:
    assert refused(_rec(refused_429=2)) and not refused(_rec(refused_429=0)) and not refused(_rec())
