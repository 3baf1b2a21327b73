"""``--api anthropic``: the suite's scenarios on the Messages API, llmclient's ``AsyncAnthropic``
against the official ``anthropic.AsyncAnthropic``. The pure parts (a chat request as a Messages
body, which scenarios apply, the baseline's name), then the real command against the reference
server, embedded and as a user's ``--base-url``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.cli import for_api, probe_capabilities
from benchmarks.harness.drivers import messages_body
from benchmarks.harness.records import ChatRequest, RequestRecord, Row, ScenarioResult
from benchmarks.scenarios import discover
from benchmarks.scenarios.messages import stall_fault, trials

ROOT = Path(__file__).resolve().parents[2]


def test_a_chat_request_becomes_a_messages_body_and_an_option_it_lacks_is_named() -> None:
    request = ChatRequest(messages=[{"role": "system", "content": "Be brief."},
                                    {"role": "system", "content": "Use British spelling."},
                                    {"role": "user", "content": "hi"}],
                          max_tokens=8, stream=True,
                          extra_body={"temperature": 0, "stop": "\n", "stream_options": {"include_usage": True}})
    assert messages_body(request, "m") == {
        "model": "m", "max_tokens": 8, "stream": True, "temperature": 0, "stop_sequences": ["\n"],
        "system": "Be brief.\n\nUse British spelling.", "messages": [{"role": "user", "content": "hi"}]}
    plain = messages_body(ChatRequest(messages=[{"role": "user", "content": "x"}], max_tokens=4), "m")
    assert plain == {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(ValueError, match="the Messages API has no 'seed' option"):
        messages_body(ChatRequest(messages=[{"role": "user", "content": "x"}], max_tokens=4,
                                  extra_body={"seed": 1}), "m")


def test_only_the_scenarios_that_apply_run_and_one_named_that_does_not_is_an_error() -> None:
    scenarios, errors = discover()
    assert not errors
    anthropic = {s.name for s in for_api(scenarios, "anthropic", named=False)}
    assert {"connection", "concurrency", "http1", "coldstart", "cache", "tail", "pingstall",
            "streams", "replicas", "ratelimits"} <= anthropic
    assert not {"agents", "images", "speculative"} & anthropic  # written for chat only
    assert "pingstall" not in {s.name for s in for_api(scenarios, "openai", named=False)}
    by_name = {s.name: s for s in scenarios}
    with pytest.raises(ValueError, match=r"not for --api anthropic: agents \(they run with --api openai\)"):
        for_api([by_name["connection"], by_name["agents"]], "anthropic", named=True)


def test_the_official_client_is_named_for_the_api_everywhere_a_scenario_wrote_openai() -> None:
    rec = RequestRecord(variant="openai/stream", trace_id="t", start_s=0.0, latency_ms=1.0, status=200)

    class S:
        name = "s"
        description = "the official openai client vs llmclient (AsyncOpenAI, openai-compatible servers)"
        requires = ()

    result = ScenarioResult.of(S(), {"openai/stream": [rec]},
                               rows=[Row("stream: openai -> llmclient", "openai/stream", "llmclient/stream")],
                               notes=["openai defaults"])
    named = result.official_named("anthropic")
    assert list(named.variants) == ["anthropic/stream"] and named.variants["anthropic/stream"][0].variant == "anthropic/stream"
    assert (named.rows[0].label, named.rows[0].baseline) == ("stream: anthropic -> llmclient", "anthropic/stream")
    assert named.notes == ["anthropic defaults"]
    assert named.description == "the official anthropic client vs llmclient (AsyncOpenAI, openai-compatible servers)"
    assert result.official_named("openai") is result and result.variants["openai/stream"][0].variant == "openai/stream"


def test_the_run_is_sized_by_the_environment_and_the_fault_stalls_once() -> None:
    assert trials(True, {}) == 5 and trials(False, {}) == 20 and trials(True, {"BENCH_PINGSTALL_TRIALS": "2"}) == 2
    with pytest.raises(ValueError, match="BENCH_PINGSTALL_TRIALS='0'"):
        trials(True, {"BENCH_PINGSTALL_TRIALS": "0"})
    assert stall_fault("abc").endswith(";once=abc") and "pings_after=" in stall_fault("abc")


def test_capabilities_name_the_api_s_official_client() -> None:
    pytest.importorskip("anthropic")
    caps = probe_capabilities(True, True, [], "anthropic")
    assert {"openai", "anthropic", "llmclient"} <= caps


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--api", "anthropic", *args,
                           "--out", str(tmp_path), "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=170, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = list(tmp_path.iterdir())
    return proc, json.loads((run_dir / "result.json").read_text())


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_messages_face_runs_against_the_embedded_server_with_the_official_client_beside_it(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    proc, doc = _run(tmp_path, "--scenarios", "connection,cache,pingstall", "--network", "loopback",
                     "--profile", "zero", env={"BENCH_PINGSTALL_TRIALS": "1"})
    assert doc["api"] == "anthropic"
    by_name = {s["name"]: s for s in doc["scenarios"]}
    assert all(s["skipped"] is None for s in by_name.values()), {n: s["skipped"] for n, s in by_name.items()}
    records = by_name["connection"]["records"]
    assert set(records) == {"fresh-connection", "anthropic", "llmclient", "fresh-connection/stream",
                            "anthropic/stream", "llmclient/stream"}
    for variant, recs in records.items():
        assert recs and all(r["status"] == 200 and r["error_kind"] is None for r in recs), (variant, recs[:1])
    # answers of the Messages API: output tokens from its usage, streams timed on text deltas
    assert all(r["ttft_ms"] is not None for r in records["anthropic/stream"] + records["llmclient/stream"])
    assert any(r["extra"].get("http_version") == "HTTP/2" for r in records["llmclient"])
    assert by_name["connection"]["arms"]["anthropic"]["client"] == "anthropic"
    assert "connection: anthropic defaults -> llmclient" in proc.stdout and "openai" not in proc.stdout.split("row ")[-1].split("notes:")[0]
    cache = by_name["cache"]["records"]["llmclient+cache"]
    assert any(r["extra"].get("cache") == "hit" for r in cache)
    # the stall: the official client waited it out (one attempt); llmclient gave up on the
    # stalled stream and the app's second attempt ran clean
    stall = by_name["pingstall"]["records"]
    assert [r["extra"]["attempts"] for r in stall["anthropic"]] == [1]
    assert [r["extra"]["attempts"] for r in stall["llmclient"]] == [2]
    assert all(r["status"] == 200 for r in stall["anthropic"] + stall["llmclient"])
    assert "timeout" in (stall["llmclient"][0]["extra"]["first_error"] or "").lower()
    # the official anthropic client speaks only /v1/messages: its parsed Message's usage is here
    assert all(r["prompt_tokens"] for r in records["anthropic"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_users_anthropic_compatible_server_runs_what_it_can(ref_server: Any, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    root = ref_server.base_url.removesuffix("/v1")  # the root, as the official client takes it
    _proc, doc = _run(tmp_path, "--scenarios", "connection,pingstall", "--base-url", root, "--api-key", "any")
    by_name = {s["name"]: s for s in doc["scenarios"]}
    assert by_name["connection"]["skipped"] is None
    assert "spawn_server" in (by_name["pingstall"]["skipped"] or "")
    recs = by_name["connection"]["records"]["anthropic"]
    assert recs and all(r["status"] == 200 for r in recs)
