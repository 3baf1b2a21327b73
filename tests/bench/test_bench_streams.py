"""The ``streams`` scenario's pure parts: which requests fail and where, and its summary."""

from __future__ import annotations

import random

import pytest

from benchmarks.harness.records import RequestRecord
from benchmarks.scenarios.streams import APIS, MAX_TOKENS, MIXES, plan_faults, subset, summarise


def test_the_plan_cuts_and_stalls_the_share_asked_at_points_inside_the_answer() -> None:
    plan = plan_faults(100, 0.20, 0.02, "chat", random.Random(1))
    kinds = [plan.kind(i) for i in range(100)]
    assert kinds.count("reset_after") == 20 and kinds.count("stall_after") == 2
    for spec in plan.faults.values():
        assert spec.endswith(";once={once}")  # the driver gives each copy a token of its own
        point = int(spec.split(";")[0].split("=")[1])
        assert 1 <= point <= MAX_TOKENS + 1  # the role chunk, then the answer's tokens
    assert plan == plan_faults(100, 0.20, 0.02, "chat", random.Random(1))  # seeded


def test_a_small_run_still_measures_one_cut_and_one_stall_and_a_clean_one_none() -> None:
    plan = plan_faults(8, 0.05, 0.02, "responses", random.Random(0))
    assert sorted(filter(None, (plan.kind(i) for i in range(8)))) == ["reset_after", "stall_after"]
    assert plan_faults(8, 0.0, 0.02, "chat", random.Random(0)).faults == {}
    with pytest.raises(ValueError, match="do not fit"):
        plan_faults(2, 0.9, 0.5, "chat", random.Random(0))


def test_the_summary_counts_complete_answers_tokens_twice_and_stall_freezes() -> None:
    def rec(ok: bool, fault: str | None, twice: int, attempts: int, frozen: float) -> RequestRecord:
        return RequestRecord(variant="v", trace_id="t", start_s=0.0, latency_ms=100.0 * attempts,
                             status=200 if ok else None, error_kind=None if ok else "truncated",
                             extra={"fault": fault, "tokens_twice": twice, "attempts": attempts,
                                    "frozen_ms": frozen, "resumes": 0})

    s = summarise({"v": [rec(True, None, 0, 1, 20.0), rec(True, "stall_after", 5, 2, 5300.0),
                         rec(False, "reset_after", 12, 3, 40.0)]})["v"]
    assert (s["n"], s["complete"], s["tokens_twice"], s["app_retries"]) == (3, 2, 17, 3)
    assert s["stall_frozen_ms"] == [5300] and s["faulted_p50_ms"] == 200


def test_a_run_may_cover_a_subset_of_apis_and_mixes_named_by_the_environment() -> None:
    assert subset(None, None, MIXES) == (APIS, MIXES)
    assert subset("responses", "clean, cut20", MIXES) == (("responses",), (MIXES[0], MIXES[2]))
    with pytest.raises(ValueError, match="BENCH_STREAMS_APIS: unknown API 'embeddings'"):
        subset("embeddings", None, MIXES)
    with pytest.raises(ValueError, match="BENCH_STREAMS_MIXES: unknown mix 'cut50'"):
        subset(None, "cut50", MIXES)
