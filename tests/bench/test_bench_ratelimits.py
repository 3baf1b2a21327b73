"""The ``ratelimits`` scenario's arithmetic (fairness, the steady-state summary) and its place
in the suite; the scenario itself runs in ``make bench``."""

from __future__ import annotations

import pytest

from benchmarks.scenarios import discover
from benchmarks.scenarios.ratelimits import SHARE_OF_DEMAND, WINDOW_S, _summarise, jain, settings


def test_jains_index_is_one_when_fair_and_one_over_n_when_one_takes_all() -> None:
    assert jain([5.0, 5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain([8.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain([]) is None and jain([0.0, 0.0]) is None


def _call(t0: float, t1: float, cost: int, refused: int = 0, error: str | None = None) -> dict[str, object]:
    return {"t0": t0, "t1": t1, "status": 200 if error is None else 429, "error": error,
            "refused": refused, "cost": cost}


def test_the_summary_counts_only_calls_inside_the_steady_state() -> None:
    workers = [[_call(0.0, 0.5, 100), _call(1.0, 1.2, 100, refused=2), _call(2.0, 2.1, 100)],
               [_call(1.5, 1.6, 50, error="RateLimitError"), _call(1.7, 2.5, 100)]]
    s = _summarise(workers, t_from=1.0, t_to=2.5, limit_per_s=200.0)
    assert s["calls"] == 4 and s["failed"] == 1 and s["refused_429"] == 2
    assert s["goodput_tps"] == pytest.approx(300 / 1.5)
    assert s["goodput_share"] == pytest.approx(300 / 1.5 / 200.0)
    assert s["first_error"] == "RateLimitError"


def test_the_scenarios_are_discovered() -> None:
    scenarios, errors = discover()
    assert not errors
    assert {"ratelimits", "embedbatch"} <= {s.name for s in scenarios}


def test_the_p99_over_all_calls_counts_a_failure_as_the_deadline() -> None:
    from benchmarks.scenarios.ratelimits import DEADLINE_MS, all_calls_ms

    calls = [_call(0.0, 0.1, 10), _call(0.0, 0.2, 10, error="RateLimitError"), _call(0.0, 9.0, 10, error="x")]
    assert all_calls_ms(calls) == pytest.approx([100.0, DEADLINE_MS, 9000.0])
    s = _summarise([calls], t_from=0.0, t_to=10.0, limit_per_s=100.0)
    assert s["p99_ms"] == pytest.approx(100.0)  # the answered call only
    assert s["p99_all_ms"] == pytest.approx(9000.0)


def test_the_runs_shape_is_overridden_by_the_environment_and_bad_values_are_named() -> None:
    default = settings({}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
    assert default["window_s"] == WINDOW_S and default["variants"] is None and default["workers"] == 8
    assert default["share"] == SHARE_OF_DEMAND
    got = settings({"BENCH_RATELIMITS_WINDOW_S": "60", "BENCH_RATELIMITS_SHARE": "0.55",
                    "BENCH_RATELIMITS_DURATION_S": "220", "BENCH_RATELIMITS_WARM_S": "100",
                    "BENCH_RATELIMITS_VARIANTS": "llmclient/shared, openai"}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
    assert got["window_s"] == 60.0 and got["share"] == 0.55 and got["duration_s"] == 220.0
    assert got["variants"] == ("llmclient/shared", "openai")
    with pytest.raises(ValueError, match="BENCH_RATELIMITS_SHARE"):
        settings({"BENCH_RATELIMITS_SHARE": "lots"}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
    with pytest.raises(ValueError, match="unknown"):
        settings({"BENCH_RATELIMITS_VARIANTS": "llmclient/magic"}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
    with pytest.raises(ValueError, match="WARM_S"):
        settings({"BENCH_RATELIMITS_WARM_S": "50"}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
    with pytest.raises(ValueError, match="positive"):
        settings({"BENCH_RATELIMITS_WORKERS": "0"}, 8, 40.0, 5.0, SHARE_OF_DEMAND)
