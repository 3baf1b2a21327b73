"""Low-priority calls on the wire (features/admit/priority), against real reference servers under
both of vLLM's scheduling policies: ``priority="low"`` (client or call) sends ``x-llm-priority:
low``; ``priority_field=True`` adds vLLM's body ``priority`` to low calls; an fcfs server answers
400 naming it, so the call goes once more without it and the origin is never sent it again; a
priority server takes it, and a low batch filling every slot is preempted for a normal call.
Every client test runs on ``OpenAI`` and ``AsyncOpenAI``; bodies are read by a request hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import llmclient
from benchmarks.server.profiles import PROFILE_DIR
from llmclient.features.admit import priority
from tests._both import Drive
from tests._sent import Sent
from tests.conftest import RefServer, start_ref_server, stop_ref_server

MODEL = "gpt-4o-mini"
EMBED_MODEL = "text-embedding-3-small"
MSGS = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def fcfs() -> Iterator[RefServer]:
    server = start_ref_server()
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="module")
def prio() -> Iterator[RefServer]:
    server = start_ref_server("--scheduling-policy", "priority")
    yield server
    stop_ref_server(server)


def _client(drive: Drive, server: RefServer, sent: Sent, **kw: Any) -> Any:
    return sent.client(drive, server.base_url, **kw)


def _ask(drive: Drive, client: Any, **kw: Any) -> Any:
    return drive(client.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=4, **kw))


# -- pure ---------------------------------------------------------------------------------------

def test_the_options_are_checked() -> None:
    assert priority.check("low") == "low" and priority.check(None) is None
    with pytest.raises(ValueError, match="extra_body"):
        priority.check(3)
    with pytest.raises(ValueError, match="priority"):
        priority.check("urgent")
    with pytest.raises(ValueError, match="priority_field"):
        priority.check_field("yes")


def test_the_header_follows_the_option_and_the_field_only_low_generation_calls() -> None:
    headers: dict[str, str] = {}
    priority.header(headers, "low")
    assert headers == {priority.HEADER: "low"}
    priority.header(headers, None)
    assert headers == {priority.HEADER: "low"}                  # the app's own header stays
    priority.header(headers, "normal")
    assert headers == {}
    low = {priority.HEADER: "low"}
    assert priority.body_value(low, "/chat/completions", {"model": "m"}, True) == priority.VLLM_LOW
    assert priority.body_value(low, "/completions", {"model": "m"}, True) == priority.VLLM_LOW
    assert priority.body_value({}, "/chat/completions", {"model": "m"}, True) is None
    assert priority.body_value(low, "/embeddings", {"model": "m"}, True) == priority.VLLM_LOW
    assert priority.body_value(low, "/responses", {"model": "m"}, True) == priority.VLLM_LOW
    assert priority.body_value(low, "/models", {"model": "m"}, True) is None
    assert priority.body_value(low, "/chat/completions", {"priority": 7}, True) is None  # the app's own
    assert priority.body_value(low, "/chat/completions", {"model": "m"}, False) is None  # refused before


def test_a_refusal_is_a_400_or_422_naming_the_field() -> None:
    assert priority.refused(400, b'{"error":{"message":"Got priority 1 but Priority scheduling is not enabled."}}')
    assert priority.refused(422, b'{"detail":[{"loc":["body","priority"],"type":"extra_forbidden"}]}')
    assert not priority.refused(400, b'{"error":{"message":"max_tokens is too large"}}')
    assert not priority.refused(500, b"priority")


# -- the reference server's policies ------------------------------------------------------------

def _post(server: RefServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", json={"model": MODEL, "messages": MSGS,
                                                                   "max_tokens": 4, **body},
                      headers={"authorization": "Bearer k", **headers}, timeout=30)


def test_fcfs_refuses_a_non_zero_priority_as_vllm_does_and_priority_takes_it(fcfs: RefServer, prio: RefServer) -> None:
    refused = _post(fcfs, {"priority": 1})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "Got priority 1 but Priority scheduling is not enabled."
    assert refused.json()["error"]["param"] == "priority"
    assert _post(fcfs, {"priority": 0}).status_code == 200
    assert _post(fcfs, {}, **{"x-llm-priority": "low"}).status_code == 200  # the header is no error
    assert _post(prio, {"priority": 1}).status_code == 200
    assert _post(prio, {"priority": -5}).status_code == 200
    bad = _post(prio, {"priority": "high"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "priority"


# -- llmclient --------------------------------------------------------------------------------------

def test_priority_low_sends_the_header_per_client_and_per_call_and_normal_clears_it(drive: Drive, fcfs: RefServer) -> None:
    sent = Sent()
    batch = _client(drive, fcfs, sent, priority="low")
    _ask(drive, batch)
    _ask(drive, batch, priority="normal")
    plain = _client(drive, fcfs, sent)
    _ask(drive, plain, priority="low")
    _ask(drive, plain)
    assert sent.header(priority.HEADER) == ["low", None, "low", None]
    assert sent.field(priority.FIELD) == [None] * 4                       # the body field is opt-in
    assert all("priority" not in b for b in sent.bodies)
    assert batch.with_options(timeout=5)._options.priority == "low"  # a copy keeps it
    with pytest.raises(ValueError, match="priority"):
        drive.client(api_key="k", base_url=fcfs.base_url, priority="background")


def test_an_fcfs_origin_refuses_the_field_once_and_is_never_sent_it_again(drive: Drive, fcfs: RefServer) -> None:
    sent = Sent()
    client = _client(drive, fcfs, sent, priority="low", priority_field=True)
    first = _ask(drive, client)                  # 400 naming the field, then once more without it
    assert first.choices[0].message.content
    assert first.timings.retries == 1 and first.timings.priority_field is None
    _ask(drive, client)
    stream = drive(client.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=4, stream=True))
    assert drive.iterate(stream)
    assert sent.field(priority.FIELD) == [priority.VLLM_LOW, None, None, None]
    assert sent.header(priority.HEADER) == ["low"] * 4                    # the header stays on every attempt
    # the app's own field is the app's business: the 400 is raised, not worked around
    with pytest.raises(llmclient.BadRequestError, match="Priority scheduling is not enabled"):
        _ask(drive, client, extra_body={"priority": 3})


def test_a_priority_origin_takes_the_field_on_low_calls_only(drive: Drive, prio: RefServer) -> None:
    sent = Sent()
    client = _client(drive, prio, sent, priority_field=True)
    normal = _ask(drive, client)
    low = _ask(drive, client, priority="low")
    assert sent.field(priority.FIELD) == [None, priority.VLLM_LOW]
    assert normal.timings.priority_field is None and low.timings.priority_field == priority.VLLM_LOW
    assert low.timings.retries == 0


def test_embeddings_and_responses_carry_the_field_too(drive: Drive, fcfs: RefServer, prio: RefServer) -> None:
    sent = Sent()
    client = _client(drive, prio, sent, priority="low", priority_field=True)
    vectors = drive(client.embeddings.create(model=EMBED_MODEL, input="a low-priority document"))
    answer = drive(client.responses.create(model=MODEL, input="hi", max_output_tokens=16))
    assert sent.field(priority.FIELD) == [priority.VLLM_LOW, priority.VLLM_LOW]
    assert vectors.timings.priority_field == answer.timings.priority_field == priority.VLLM_LOW
    refusing = Sent()
    client = _client(drive, fcfs, refusing, priority="low", priority_field=True)
    vectors = drive(client.embeddings.create(model=EMBED_MODEL, input="a low-priority document"))
    assert vectors.data[0].embedding and vectors.timings.retries == 1
    assert refusing.field(priority.FIELD) == [priority.VLLM_LOW, None]   # refused once, sent again without it


def _metric(server: RefServer, name: str) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    return next(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


def test_a_normal_call_preempts_a_low_batch_that_holds_every_slot(tmp_path: Path) -> None:
    """a100-175b's costs (16 slots, ~37 ms a step) with answers that run to max_tokens: 16 low
    streams of 1000 tokens (~37 s each) hold every slot; a normal call still answers while they
    run, because the server preempts one of them (its counter says so), which the same server
    under fcfs could not do."""
    profile = orjson.loads((PROFILE_DIR / "a100-175b.json").read_bytes())
    profile.update(output_len_median=100_000.0, output_len_sigma=0.0, cold_start_s=0.0)
    path = tmp_path / "long-answers.json"
    path.write_bytes(orjson.dumps(profile))
    server = start_ref_server("--scheduling-policy", "priority", profile=str(path))
    try:
        batch = llmclient.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, priority="low")
        streams = [batch.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"item {i}"}],
                                                 max_tokens=1000, stream=True) for i in range(16)]
        readers = [iter(s) for s in streams]      # kept: a dropped iterator closes its stream
        for r in readers:                          # each has its first token: all 16 are running
            while not next(r).choices[0].delta.content:
                pass
        assert _metric(server, "llm_requests_running") == 16
        with llmclient.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as app:
            answer = app.chat.completions.create(model=MODEL, messages=MSGS, max_tokens=4)
        assert answer.choices[0].finish_reason in ("stop", "length")
        assert _metric(server, "llm_priority_preemptions_total") >= 1
        assert _metric(server, "llm_requests_running") + _metric(server, "llm_requests_waiting") >= 16  # batch not done
        for s in streams:
            s.close()
        batch.close()
    finally:
        stop_ref_server(server)
