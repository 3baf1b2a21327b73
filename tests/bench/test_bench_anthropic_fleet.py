"""``--api anthropic`` for the fleet and stream scenarios: ``streams`` (Messages streams cut,
ping-stalled, refused with 529), ``replicas`` (prefix affinity over replicas, the answers'
``cache_read_input_tokens``) and ``ratelimits`` (processes on one key, per-minute budgets, 529
bursts counted by the server's access log). The pure parts first, then the three for real against
embedded reference servers, with what each reports checked (a run that silently spoke Chat
Completions, or measured nothing, fails here)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.harness.cli import for_api, quick_cost
from benchmarks.harness.drivers import message_usage
from benchmarks.harness.records import RequestRecord
from benchmarks.scenarios import discover
from benchmarks.scenarios.ratelimits import (
    ANTHROPIC_OVERLOAD,
    attach_statuses,
    overload,
    overload_goal,
    whole_run,
)
from benchmarks.scenarios.replicas import usage_hit_rate
from benchmarks.scenarios.streams import (
    PING_STALL_MS,
    plan_faults,
    stream_apis,
    streams_per_mix,
    subset,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_three_run_on_both_apis_with_a_quick_cost_for_each() -> None:
    scenarios, errors = discover()
    assert not errors
    on_messages = {s.name: s for s in for_api(scenarios, "anthropic", named=False)}
    for name in ("streams", "replicas", "ratelimits"):
        assert quick_cost(on_messages[name], "anthropic") and quick_cost(on_messages[name], "openai")
    assert quick_cost(SimpleNamespace(quick_s={"openai": 3}), "anthropic") is None
    assert quick_cost(SimpleNamespace(quick_s=7), "anthropic") == 7


def test_messages_streams_get_the_messages_routes_faults() -> None:
    assert stream_apis("anthropic") == ("messages",) and stream_apis("openai") == ("responses", "chat")
    plan = plan_faults(200, 0.20, 0.02, "messages", random.Random(1), overload_rate=0.02)
    kinds = [plan.kind(i) for i in range(200)]
    assert kinds.count("reset_after") == 20 and kinds.count("error_after") == 20  # cuts, half each
    assert kinds.count("pings_after") == 4 and kinds.count("status") == 4
    stall = next(spec for spec in plan.faults.values() if spec.startswith("pings_after"))
    assert f"resume_ms={PING_STALL_MS}" in stall and stall.endswith(";once={once}")
    assert next(spec for spec in plan.faults.values() if spec.startswith("status")) == "status=529;once={once}"
    # Chat Completions keeps its own faults: no error events, no 529 before the stream
    chat = plan_faults(200, 0.20, 0.02, "chat", random.Random(1), overload_rate=0.02)
    assert {chat.kind(i) for i in chat.faults} == {"reset_after", "stall_after"}
    assert subset(None, None, [("clean", 0.0)], stream_apis("anthropic"))[0] == ("messages",)
    assert (streams_per_mix(True, None), streams_per_mix(False, ""), streams_per_mix(False, "50")) == (6, 200, 50)
    with pytest.raises(ValueError, match="BENCH_STREAMS_N='2'"):
        streams_per_mix(False, "2")
    with pytest.raises(ValueError, match="unknown API 'chat' \\(one of messages\\)"):
        subset("chat", None, [("clean", 0.0)], stream_apis("anthropic"))


def test_the_prompt_caches_usage_and_its_hit_rate() -> None:
    start = SimpleNamespace(type="message_start", message=SimpleNamespace(usage=SimpleNamespace(
        input_tokens=10, cache_read_input_tokens=30, cache_creation_input_tokens=0, output_tokens=1)))
    seen = message_usage(start, {})
    assert seen == {"input_tokens": 10, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0}
    assert message_usage(SimpleNamespace(type="content_block_delta"), dict(seen)) == seen

    def rec(ok: bool = True, **extra: int) -> RequestRecord:
        return RequestRecord(variant="v", trace_id="t", start_s=0.0, latency_ms=1.0,
                             status=200 if ok else 500, error_kind=None if ok else "x", extra=dict(extra))

    records = [rec(**seen), rec(input_tokens=60, cache_read_input_tokens=0, cache_creation_input_tokens=0),
               rec(False, input_tokens=1000, cache_read_input_tokens=0)]
    assert usage_hit_rate(records) == pytest.approx(30 / 100)
    assert usage_hit_rate([rec()]) is None  # Chat Completions' records carry no such fields


def test_the_overload_and_its_goal() -> None:
    assert overload({}, "anthropic") == ANTHROPIC_OVERLOAD and overload({}, "openai") is None
    assert overload({"BENCH_RATELIMITS_OVERLOAD": "none"}, "anthropic") is None
    assert overload({"BENCH_RATELIMITS_OVERLOAD": "status=529;retry_after=none"}, "openai") == "status=529;retry_after=none"
    workers = [[{"rid": "a"}, {"rid": "b"}], [{"rid": "c"}]]
    attach_statuses(workers, {"a": [529, 200], "c": [200]})
    assert [c.get("statuses") for w in workers for c in w] == [[529, 200], None, [200]]
    official = {"calls": 10, "failed": 0, "attempts_per_call": 1.5, "p99_all_ms": 3000.0, "share_529": 0.3}
    good = {"calls": 12, "failed": 0, "attempts_per_call": 1.2, "p99_all_ms": 1500.0, "share_529": 0.1}
    assert overload_goal(official, good)["met"] and overload_goal(official, good)["p99_ratio"] == 2.0
    slow = {**good, "p99_all_ms": 2500.0, "failed": 1}
    verdict = overload_goal(official, slow)
    assert not verdict["met"] and not verdict["p99_better"] and not verdict["all_complete"]
    assert verdict["attempts_no_more"] and verdict["share_529_under"]
    made = whole_run([[{"rid": "a", "statuses": [529, 200]}, {"rid": "b"}], [{"rid": "c", "statuses": [200]}]])
    assert made == {"calls": 3, "logged_calls": 2, "answers": {"200": 2, "529": 1}}


def _run(tmp_path: Path, scenarios: str, env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    # The suite's default profile (h100-8b): the zero profile keeps no prefix cache to read.
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--api", "anthropic", "--scenarios",
                           scenarios, "--network", "loopback", "--out", str(tmp_path),
                           "--seed", "1"], cwd=ROOT, capture_output=True, text=True, timeout=280,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(tmp_path.iterdir())
    return proc.stdout, json.loads((run_dir / "result.json").read_text())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_three_run_on_the_messages_api_and_report_what_they_measured(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    out, doc = _run(tmp_path, "streams,replicas,ratelimits", {
        # a 529 on most attempts' neighbours, so that a short run surely meets some
        "BENCH_RATELIMITS_OVERLOAD": "status=529;prob=0.3;burst=2",
        "BENCH_RATELIMITS_DURATION_S": "5", "BENCH_RATELIMITS_WARM_S": "2"})
    assert doc["api"] == "anthropic"
    by = {s["name"]: s for s in doc["scenarios"]}
    assert all(s["skipped"] is None for s in by.values()), {n: s["skipped"] for n, s in by.items()}

    # streams: Messages streams (error events are planned for them only), the official anthropic
    # client beside llmclient's defaults and its continuation; every answer whole in the app
    # loop; llmclient's cut streams keep what they showed as .partial; continued ones finish
    streams = by["streams"]["records"]
    assert set(streams) == {"anthropic/messages/cut5of6", "llmclient/messages/cut5of6",
                            "llmclient+continue/messages/cut5of6"}
    assert by["streams"]["arms"]["anthropic/messages"]["client"] == "anthropic"
    assert by["streams"]["arms"]["llmclient+continue/messages"]["options"] == {"stream_resume": "continue"}
    continued = streams["llmclient+continue/messages/cut5of6"]
    assert all(r["extra"]["attempts"] == 1 for r in continued), continued  # no app retry: each went on
    assert sum(r["extra"]["resumes"] for r in continued) == 5
    for variant, recs in streams.items():
        assert len(recs) == 6 and all(r["status"] == 200 for r in recs), (variant, recs)
        assert {r["extra"]["fault"] for r in recs if r["extra"]["fault"]} <= {"reset_after", "error_after"}
        assert sum(r["extra"]["fault"] is not None for r in recs) == 5
        assert any(r["extra"]["fault"] == "error_after" for r in recs)
    cut = streams["llmclient/messages/cut5of6"]
    assert sum(r["extra"]["partial_kept"] for r in cut) >= 1 and sum(r["extra"]["partial_lost"] for r in cut) == 0
    assert sum(r["extra"]["partial_kept"] for r in streams["anthropic/messages/cut5of6"]) == 0  # no .partial there
    row, cont = by["streams"]["rows"]
    assert row["label"].startswith("streams messages 5 of 6 cut: anthropic+retry -> llmclient,")
    assert cont["label"].startswith("streams messages 5 of 6 cut: anthropic+retry -> llmclient+continue")
    assert (row["baseline_trials"], row["candidate_trials"]) == (5, 5)
    assert (cont["candidate_events"], cont["candidate_trials"]) == (5, 5)
    assert "streams messages 5 of 6 cut" in out

    # replicas: the Messages face over Replicas of roots; the answers' usage says what the
    # replicas' prefix caches served, and it agrees with their /metrics
    replicas = by["replicas"]
    prefix = replicas["records"]["prefix@50%"]
    assert prefix and all(r["status"] == 200 for r in prefix)
    assert all("cache_read_input_tokens" in r["extra"] for r in prefix)
    assert all(not r["extra"]["replica"].endswith("/v1") for r in prefix)
    runs = replicas["series"]["runs"]
    for variant in ("round_robin@50%", "least_loaded@50%", "prefix@50%"):
        run = runs[variant]
        assert run["usage_hit_rate"] is not None and run["hit_rate"] is not None
        assert abs(run["usage_hit_rate"] - run["hit_rate"]) < 0.02, (variant, run)
    assert runs["prefix@50%"]["usage_hit_rate"] > 0
    assert any("cache_read_input_tokens" in n for n in replicas["notes"])

    # ratelimits: every attempt counted by the server on /v1/messages, 429s and 529s apart, and
    # the goal judged in the notes
    rl = by["ratelimits"]
    summary = rl["series"]["ratelimits"]
    assert set(summary) >= {"openai"} and len(summary) == 2  # series keep the scenario's own names
    assert rl["arms"]["anthropic"]["client"] == "anthropic"
    for variant, s in summary.items():
        # every call the workers made (a paced call may end after the measured seconds on a busy
        # machine: the steady state can be empty), each named by the Messages route's log
        made = s["whole_run"]
        assert made["calls"] > 0 and made["logged_calls"] == made["calls"], (variant, made)
        assert sum(made["answers"].values()) >= made["calls"] and made["answers"].get("200"), (variant, made)
        assert s["logged_calls"] == s["calls"] and s["attempts"] >= s["calls"], (variant, s)
        assert s["answers_429"] + s["answers_529"] + s["answers_503"] <= s["attempts"] - s["calls"] + s["failed"]
    assert sum(s["whole_run"]["answers"].get("529", 0) for s in summary.values()) > 0
    assert all(r["extra"]["statuses"] for recs in rl["records"].values() for r in recs)
    assert any("issue 45's goal" in n for n in rl["notes"])
