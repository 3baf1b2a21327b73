"""Speculative prefetch against the live reference server, through ``OpenAI`` (prefetches are
threads) and ``AsyncOpenAI`` (prefetches are tasks): each test runs on both (``drive``).

Facts are read from the server itself (/metrics request and token counters) and from each
response's ``timings.cache``; no timing is asserted. Polls have generous deadlines and only
wait for background work to finish (for the async client, its loop runs while they wait).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.harness.serverproc import ServerProcess, start_server
from llmclient.features.prefetch import SpeculationConfig
from llmclient.layers.setup import cache_for
from llmclient.speculative import BudgetConfig, HistoryPredictor
from tests._both import Drive

MODEL = "sim-zero"
ROOMY = BudgetConfig(max_in_flight=4, max_load_share=4.0, burst=8.0, max_candidates=3)


def metric(origin: str, name: str, labels: str = "") -> float:
    text = httpx.get(origin + "/metrics", timeout=10).text
    pattern = re.escape(name + labels) + r" ([0-9.e+]+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def served(origin: str) -> float:
    """Chat/metrics requests the server answered 200 (the /metrics GET itself counts after)."""
    return metric(origin, "http_requests_total", '{status="200"}')


def wait_until(drive: Drive, check: Callable[[], bool], deadline_s: float = 15.0) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            raise AssertionError("background speculation did not settle in time")
        drive.sleep(0.02)


def idle(drive: Drive, client: Any) -> None:
    wait_until(drive, lambda: client.speculation_stats()["in_flight"] == 0)


def conversation() -> list[dict[str, Any]]:
    # A fresh conversation per test: the server is shared by the session.
    return [{"role": "user", "content": f"Tell me about owls {uuid.uuid4().hex[:8]}"}]


def followup(messages: list[dict[str, Any]], answer: Any, text: str) -> list[dict[str, Any]]:
    return [*messages, {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": text}]


def make_client(drive: Drive, ref_server: Any, **config: Any) -> Any:
    budget = config.pop("budget", ROOMY)
    return drive.client(base_url=ref_server.base_url, api_key="k",
                        speculation=SpeculationConfig(budget=budget, **config))


def test_correctly_predicted_followup_is_served_from_cache_without_the_server(
        drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server)
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                 max_tokens=8, prefetch=["continue"]))
    idle(drive, client)
    before = served(ref_server.url)
    second = drive(client.chat.completions.create(model=MODEL, messages=followup(messages, first, "continue"),
                                                  temperature=0, max_tokens=8))
    after = served(ref_server.url)
    assert second.timings.cache == "hit" and second.timings.prefetch_joined
    assert after - before == 1  # only the /metrics GET between the two readings
    stats = client.speculation_stats()
    assert stats["sent"] == 1 and stats["hits"] == 1 and stats["latency_saved_ms"] > 0
    # Served once (the client has no cache of its own): the same call again goes upstream
    # and gets the same deterministic answer.
    third = drive(client.chat.completions.create(model=MODEL, messages=followup(messages, first, "continue"),
                                                 temperature=0, max_tokens=8))
    assert third.timings.cache is None
    assert third.choices[0].message.content == second.choices[0].message.content


def test_any_different_parameter_is_not_served_and_the_prefetch_is_wasted(
        drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server)
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                 max_tokens=8, prefetch=["continue"]))
    idle(drive, client)
    other = drive(client.chat.completions.create(model=MODEL, messages=followup(messages, first, "continue"),
                                                 temperature=0, max_tokens=9))
    assert other.timings.cache is None and not other.timings.prefetch_joined
    stats = client.speculation_stats()
    assert stats["hits"] == 0 and stats["wasted_tokens"] == 8 and stats["landed_unused"] == 0


def test_app_call_joins_a_prefetch_still_in_flight(drive: Drive, ref_server: Any) -> None:
    # Prefetches alone are slowed (per-request fault header on speculative requests only).
    client = make_client(drive, ref_server, headers={"x-fault": "slow_ms=150"})
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                 max_tokens=6, prefetch=["continue"]))
    assert client.speculation_stats()["in_flight"] == 1
    before = served(ref_server.url)
    second = drive(client.chat.completions.create(model=MODEL, messages=followup(messages, first, "continue"),
                                                  temperature=0, max_tokens=6))
    assert second.timings.cache == "join"
    idle(drive, client)
    assert served(ref_server.url) - before == 2  # the prefetch and the /metrics GET, not the app
    assert client.speculation_stats()["joins"] == 1


def test_stream_app_call_waits_for_the_prefetch_and_replays_it(drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server, headers={"x-fault": "slow_ms=150"})
    messages = conversation()
    stream = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=6,
                                                  stream=True, prefetch=["continue"]))
    text = "".join(c.choices[0].delta.content or "" for c in drive.iterate(stream) if c.choices)
    assert client.speculation_stats()["sent"] == 1  # planned when the stream finished
    follow = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": "continue"}]
    again = drive(client.chat.completions.create(model=MODEL, messages=follow, temperature=0, max_tokens=6,
                                                 stream=True))
    replayed = "".join(c.choices[0].delta.content or "" for c in drive.iterate(again) if c.choices)
    assert again.timings.cache == "hit" and replayed
    assert client.speculation_stats()["joins"] == 1


def test_prefetches_of_a_conversation_that_moved_on_are_cancelled(drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server, headers={"x-fault": "slow_ms=200"})
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=40,
                                                 prefetch=["continue", "explain in more detail"]))
    assert client.speculation_stats()["in_flight"] == 2
    drive.sleep(0.3)  # let both prefetches reach the server and start streaming
    drive(client.chat.completions.create(model=MODEL, messages=followup(messages, first, "something else"),
                                         temperature=0, max_tokens=4))
    assert client.speculation_stats()["cancelled"] == 2
    idle(drive, client)  # the streams were closed (reset) long before their 8 s of tokens
    stats = client.speculation_stats()
    # Cancelled is not an error; what they had streamed counts as waste, and it is partial.
    assert stats["errors"] == 0 and 0 < stats["wasted_tokens"] < 2 * 40
    assert stats["landed_unused"] == 0 and stats["hits"] == 0


def test_budget_bounds_in_flight_and_extra_load_under_concurrent_calls(drive: Drive, ref_server: Any) -> None:
    budget = BudgetConfig(max_in_flight=1, max_load_share=0.25, burst=1.0, max_candidates=3)
    client = make_client(drive, ref_server, budget=budget, headers={"x-fault": "slow_ms=10"})
    before = served(ref_server.url)
    calls = 24

    def call() -> Any:
        return client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=3,
                                              prefetch=["a", "b", "c"])

    drive.gather([call] * calls, workers=4)  # 4 threads, or 4 tasks, making 6 calls each
    idle(drive, client)
    stats = client.speculation_stats()
    speculative = served(ref_server.url) - before - 1 - calls
    assert stats["peak_in_flight"] <= 1
    assert stats["sent"] == speculative <= 1 + 0.25 * calls
    assert stats["refused"].get("max_in_flight", 0) + stats["refused"].get("max_load_share", 0) > 0


def test_history_predictor_learns_a_scripted_session(drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server, predictor=HistoryPredictor(min_support=2, threshold=0.5))
    hits = []
    for topic in ("owls", "bats", "moles"):
        messages = [{"role": "user", "content": f"Summarize the life of {topic} {uuid.uuid4().hex[:6]}"}]
        first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=5,
                                                     prefetch=True))
        idle(drive, client)
        second = drive(client.chat.completions.create(
            model=MODEL, messages=followup(messages, first, "Translate that to French"), temperature=0,
            max_tokens=5, prefetch=True))
        hits.append(second.timings.cache)
    # Two sessions teach it; the third is predicted and served from the prefetch.
    assert hits == [None, None, "hit"]
    assert client.speculation_stats()["predictions"] >= 1


def test_a_sampled_prefetch_is_served_once_then_dropped(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", cache=True, speculation=ROOMY)
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0.9, max_tokens=8,
                                                 prefetch=["continue"]))
    idle(drive, client)
    store = cache_for(client._ctx, client._build_call("POST", "/chat/completions", {})).backend
    assert len(store) == 1  # the prefetched sample (the first answer, sampled too, is not kept)
    follow = followup(messages, first, "continue")
    second = drive(client.chat.completions.create(model=MODEL, messages=follow, temperature=0.9, max_tokens=8))
    assert len(store) == 0  # served once: deleted, not left for the next caller
    third = drive(client.chat.completions.create(model=MODEL, messages=follow, temperature=0.9, max_tokens=8))
    assert second.timings.cache == "hit"
    assert third.timings.cache is None  # a fresh sample from the server, never the same one twice
    assert client.speculation_stats()["hits"] == 1


def test_a_deterministic_prefetch_stays_in_the_clients_own_cache(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", cache=True, speculation=ROOMY)
    messages = conversation()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=8,
                                                 prefetch=["continue"]))
    idle(drive, client)
    follow = followup(messages, first, "continue")
    assert drive(client.chat.completions.create(model=MODEL, messages=follow, temperature=0,
                                                max_tokens=8)).timings.cache == "hit"
    assert drive(client.chat.completions.create(model=MODEL, messages=follow, temperature=0,
                                                max_tokens=8)).timings.cache == "hit"


def test_predictor_errors_and_junk_never_fail_the_call(drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server)

    def broken(request: Any, answer: Any) -> list[str]:
        raise RuntimeError("predictor bug")

    ok = drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
                                              prefetch=broken))
    assert ok.choices[0].message.content
    ok = drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
                                              prefetch=lambda request, answer: 42))
    assert ok.choices[0].message.content
    ok = drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
                                              prefetch=lambda request, answer: [None]))
    assert ok.choices[0].message.content
    idle(drive, client)
    stats = client.speculation_stats()
    assert stats["errors"] == 3 and stats["sent"] == 0


def test_server_429_on_a_prefetch_is_counted_and_backs_off(
        drive: Drive, ref_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = make_client(drive, ref_server, headers={"x-fault": "status=429;retry_after=30"})
    caplog.set_level("WARNING")
    first = drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0,
                                                 max_tokens=4, prefetch=["continue"]))
    assert first.choices[0].message.content
    idle(drive, client)
    drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
                                         prefetch=["continue"]))
    stats = client.speculation_stats()
    assert stats["errors"] == 1 and stats["sent"] == 1
    assert stats["refused"].get("server asked to back off (429)") == 1
    assert any("RateLimitError" in r.getMessage() and "trace_id=" in r.getMessage() for r in caplog.records)


def test_tool_requests_are_not_speculated(drive: Drive, ref_server: Any) -> None:
    client = make_client(drive, ref_server)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    drive(client.chat.completions.create(model=MODEL, messages=conversation(), temperature=0, max_tokens=4,
                                         tools=tools, tool_choice="none", prefetch=["continue"]))
    stats = client.speculation_stats()
    assert stats["sent"] == 0 and sum(stats["refused"].values()) == 1


# -- prefix warming (a server with prefix caching) -------------------------------------------

@pytest.fixture(scope="module")
def prefix_server() -> Iterator[ServerProcess]:
    server = start_server("tiny-fast")
    yield server
    server.stop(timeout=1.0)  # our pooled HTTP/2 connection would hold a graceful stop for 10 s


@pytest.fixture(scope="module")
def prefix_model(prefix_server: ServerProcess) -> str:
    model = prefix_server.model("k")
    assert model is not None, "the tiny-fast server lists no model"
    return model


def system_prompt() -> dict[str, str]:
    words = " ".join(f"rule{uuid.uuid4().hex[:6]}" for _ in range(40))
    return {"role": "system", "content": f"You follow these rules: {words}"}


def test_warm_reaches_the_server_with_max_tokens_1_and_the_next_call_hits_its_prefix(
        drive: Drive, prefix_server: ServerProcess, prefix_model: str) -> None:
    client = drive.client(base_url=prefix_server.base_url, api_key="k")
    model = prefix_model
    system = system_prompt()
    generated = metric(prefix_server.origin, "llm_generation_tokens_total")
    warm = drive(client.warm(messages=[system], model=model, temperature=0))
    assert warm.usage.completion_tokens == 1 and warm.timings.cache is None
    assert metric(prefix_server.origin, "llm_generation_tokens_total") - generated == 1
    assert client.speculation_stats()["warmups"] == 1
    after = drive(client.chat.completions.create(model=model, messages=[system, {"role": "user", "content": "hi"}],
                                                 temperature=0, max_tokens=2))
    cold = drive(client.chat.completions.create(
        model=model, messages=[system_prompt(), {"role": "user", "content": "hi"}], temperature=0, max_tokens=2))
    cached, cold_cached = after.usage.prompt_tokens_details.cached_tokens, cold.usage.prompt_tokens_details.cached_tokens
    # Every full KV block of the warmed prompt (tiny-fast: 4 tokens) is reused; an unwarmed
    # system prompt shares only its common opening words.
    assert cached >= warm.usage.prompt_tokens - 4 and cold_cached < cached


def test_prefetch_prefix_warms_the_next_turns_prefix(
        drive: Drive, prefix_server: ServerProcess, prefix_model: str) -> None:
    client = drive.client(base_url=prefix_server.base_url, api_key="k", speculation=ROOMY)
    model = prefix_model
    messages = [system_prompt(), {"role": "user", "content": "Tell me a story"}]
    first = drive(client.chat.completions.create(model=model, messages=messages, temperature=0, max_tokens=30,
                                                 prefetch="prefix"))
    idle(drive, client)
    stats = client.speculation_stats()
    assert stats["warmups"] == 1 and stats["errors"] == 0 and stats["sent"] == 0
    follow = followup(messages, first, "and then?")
    nxt = drive(client.chat.completions.create(model=model, messages=follow, temperature=0, max_tokens=2))
    # The answer's tokens were prefilled by the warm-up, so more than the first prompt is cached.
    assert nxt.usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens


def test_keep_warm_refreshes_until_close(drive: Drive, prefix_server: ServerProcess, prefix_model: str) -> None:
    client = drive.client(base_url=prefix_server.base_url, api_key="k")
    model = prefix_model
    # TTL 0.3 s: refresh every 0.15 s
    warm = drive(client.warm(messages=[system_prompt()], model=model, keep_warm=0.3))
    assert warm.usage.completion_tokens == 1
    wait_until(drive, lambda: client.speculation_stats()["warmups"] >= 3)
    drive(client.close())
    settled = client.speculation_stats()["warmups"]
    drive.sleep(0.5)
    assert client.speculation_stats()["warmups"] == settled
    assert client.speculation_stats()["errors"] == 0
    assert client.speculation_stats()["keep_warm"] == 0


@pytest.mark.parametrize("bad", [0, -1, -2.5])
def test_bad_speculation_settings_are_refused_with_a_clear_error(drive: Drive, ref_server: Any, bad: float) -> None:
    with pytest.raises(TypeError, match="speculation="):
        drive.client(base_url=ref_server.base_url, api_key="k", speculation="lots")
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    with pytest.raises(ValueError, match="keep_warm"):
        drive(client.warm(messages=conversation(), model=MODEL, keep_warm=bad))


def test_prefetch_example_runs_as_written() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run([sys.executable, str(root / "examples" / "prefetch.py")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(cache: hit, served by a prefetch: True)" in proc.stdout
    cached = re.search(r"prompt tokens, (\d+) of them from the server's prefix cache", proc.stdout)
    assert cached is not None and int(cached.group(1)) > 0


# -- warming the next turn while the app runs its tools ----------------------------------------

LOOKUP = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
FORCE_LOOKUP = {"type": "function", "function": {"name": "lookup"}}


def _tool_turn(calls: list[dict[str, Any]]) -> dict[str, Any]:
    # As an app sends the turn back (the reference server renders content None + tool_calls as
    # the calls' JSON, benchmarks/server/_validate.py _message_text; key order matters there).
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _turn_one(drive: Drive, client: Any, model: str, messages: list[dict[str, Any]], how: str,
              **extra: Any) -> dict[str, Any]:
    """Turn 1 (a forced tool call): the tool-call turn to send back."""
    args: dict[str, Any] = dict(model=model, messages=messages, temperature=0, max_tokens=8, tools=LOOKUP,
                                tool_choice=FORCE_LOOKUP, **extra)
    if how == "whole":
        answer = drive(client.chat.completions.create(**args))
        call = answer.choices[0].message.tool_calls[0]
        return _tool_turn([{"id": call.id, "type": "function",
                            "function": {"name": call.function.name, "arguments": call.function.arguments}}])
    stream = drive(client.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}))
    if how == "early":
        ready = drive.iterate(stream.tool_calls())
        assert len(ready) == 1 and ready[0].name == "lookup"
        message = stream.tool_collector.message()
        assert message["tool_calls"] == [ready[0].to_dict()] and message["content"] is None
    else:
        chunks = drive.iterate(stream)
        # the stream is the server's, untouched: role chunk first, tool_calls finish, usage last
        assert chunks[-1].usage is not None and not chunks[-1].choices
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
        frags = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or ())]
        message = _tool_turn([{"id": frags[0].id, "type": "function", "function": {
            "name": frags[0].function.name, "arguments": "".join(f.function.arguments or "" for f in frags)}}])
    return message


@pytest.mark.parametrize("how", ["whole", "stream", "early"])
def test_prefetch_prefix_after_a_tool_call_warms_the_turn_with_the_tool_result(
        drive: Drive, prefix_server: ServerProcess, prefix_model: str, how: str) -> None:
    model = prefix_model
    results = {}
    for arm in ("warm", "control"):
        client = drive.client(base_url=prefix_server.base_url, api_key="k", speculation=ROOMY)
        messages = [system_prompt(), {"role": "user", "content": "Weather in Oslo?"}]
        extra = {"prefetch": "prefix"} if arm == "warm" else {}
        turn = _turn_one(drive, client, model, messages, how, **extra)
        idle(drive, client)
        stats = client.speculation_stats()
        assert stats["warmups"] == (1 if arm == "warm" else 0)
        assert stats["errors"] == 0 and stats["sent"] == 0 and stats["refused"] == {}
        follow = [*messages, turn, {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"],
                                    "content": "sunny, 21 C"}]
        nxt = drive(client.chat.completions.create(model=model, messages=follow, temperature=0, max_tokens=2,
                                                   tools=LOOKUP, tool_choice="auto"))
        # the warm-up left nothing the app's call could be served from
        assert nxt.timings.cache in (None, "miss", "bypass")
        # the same prompt without the new tool turn: turn 1's prompt plus the assistant turn
        bare = drive(client.chat.completions.create(model=model, messages=messages, temperature=0, max_tokens=1,
                                                    tools=LOOKUP, tool_choice="auto"))
        results[arm] = (nxt.usage.prompt_tokens_details.cached_tokens, bare.usage.prompt_tokens)
        drive(client.close())
    (warm_cached, first_prompt), (cold_cached, cold_first) = results["warm"], results["control"]
    # Turn 1's prompt is cached either way (the server keeps it); the warm-up also prefilled
    # the assistant's tool-call turn (its JSON: many more tokens than one 4-token block), so
    # warmed, more than turn 1's prompt is cached; unwarmed, at most turn 1's prompt.
    assert cold_cached <= cold_first < warm_cached
    assert warm_cached > first_prompt
