"""The official ``anthropic`` client runs against the reference server's Messages API unchanged.

Each test drives the real client the way its README documents it (create, ``stream=True``, the
``messages.stream()`` helper, tool use, errors, ``with_raw_response``, ``count_tokens``,
``models``), on ``Anthropic`` and ``AsyncAnthropic`` (``drive``, tests/_both.py), against a
real server process. The raw wire (event names, error bodies, headers) is read with httpx.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import pytest

from benchmarks.harness.sampler import parse_prometheus
from benchmarks.server.tokenizer import count_tokens
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

KEY = "sk-ant-reference-test"
MODEL = "claude-haiku-4-5"
ASK = [{"role": "user", "content": "Tell me something about the sea."}]
ASK_TOKENS = count_tokens("user: Tell me something about the sea.\n")
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {
               "city": {"type": "string"}, "days": {"type": "integer"},
               "unit": {"type": "string", "enum": ["C", "F"]}}, "required": ["city"]}}
GREEDY = {"temperature": 0}  # not a keyword of anthropic 2.17's create(); the API takes it


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    srv = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield srv
    stop_ref_server(srv)


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefServer]:
    """The zero-cost profile with its prefix cache on (``zero`` turns it off)."""
    profile = json.loads((Path("benchmarks/server/profiles/zero.json")).read_text())
    path = tmp_path_factory.mktemp("profile") / "zero-cached.json"
    path.write_text(json.dumps({**profile, "name": "zero-cached", "prefix_caching": True}))
    srv = start_ref_server(profile=str(path))
    yield srv
    stop_ref_server(srv)


@pytest.fixture(scope="module")
def limited() -> Iterator[RefServer]:
    srv = start_ref_server("--rpm", "3", "--itpm", "5000", "--otpm", "400",
                           "--ratelimit-window-s", "600")
    yield srv
    stop_ref_server(srv)


def _client(drive: Drive, server: RefServer, **kw: object) -> anthropic.Anthropic:
    options: dict[str, object] = {"base_url": server.url, "api_key": KEY, "max_retries": 0, **kw}
    return drive.client(anthropic, face="Anthropic", **options)  # type: ignore[no-any-return]


def _fault(spec: str) -> dict[str, dict[str, str]]:
    return {"extra_headers": {"x-fault": spec}}


# -- create, stream, the stream helper ---------------------------------------------------------
def test_create_answers_a_message_with_usage_and_request_id(drive: Drive, server: RefServer) -> None:
    m = drive(_client(drive, server).messages.create(model=MODEL, max_tokens=24, messages=ASK))
    assert isinstance(m, anthropic.types.Message)
    assert m.type == "message" and m.role == "assistant" and m.model == MODEL
    assert m.id.startswith("msg_") and m._request_id and m._request_id.startswith("req_")
    [block] = m.content
    assert block.type == "text" and block.text
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None
    assert m.usage.input_tokens == ASK_TOKENS
    assert m.usage.output_tokens == count_tokens(block.text) <= 24
    assert m.usage.cache_read_input_tokens == 0 and m.usage.cache_creation_input_tokens == 0


def test_stream_true_sends_the_event_grammar_and_the_same_text(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    whole = drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK, extra_body=GREEDY))
    events = drive.iterate(drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK,
                                                   stream=True, extra_body=GREEDY)))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"}
    start, delta = events[0], events[-2]
    assert start.message.content == [] and start.message.stop_reason is None
    assert start.message.usage.input_tokens == ASK_TOKENS
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text == whole.content[0].text
    assert delta.delta.stop_reason == whole.stop_reason
    assert delta.usage.output_tokens == whole.usage.output_tokens


def test_the_stream_helper_accumulates_the_answer(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    whole = drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK, extra_body=GREEDY))
    with drive.enter(c.messages.stream(model=MODEL, max_tokens=30, messages=ASK, extra_body=GREEDY)) as s:
        pieces = drive.iterate(s.text_stream)
        final = drive(s.get_final_message())
        text = drive(s.get_final_text())
    assert "".join(pieces) == text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.input_tokens == whole.usage.input_tokens
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_a_stop_sequence_ends_the_answer_and_is_named(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    whole = drive(c.messages.create(model=MODEL, max_tokens=40, messages=ASK, extra_body=GREEDY))
    word = whole.content[0].text.split()[3]
    m = drive(c.messages.create(model=MODEL, max_tokens=40, messages=ASK, stop_sequences=[word],
                                extra_body=GREEDY))
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == word
    assert word not in m.content[0].text and whole.content[0].text.startswith(m.content[0].text)


def test_a_system_prompt_as_text_or_blocks_counts_alike(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    plain = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, system="Be brief."))
    blocks = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK,
                                     system=[{"type": "text", "text": "Be brief."}]))
    assert plain.usage.input_tokens == blocks.usage.input_tokens == ASK_TOKENS + count_tokens("system: Be brief.")


def test_a_final_assistant_turn_is_continued(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    whole = drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK, extra_body=GREEDY)).content[0].text
    prefill = " ".join(whole.split()[:3])
    rest = 30 - count_tokens(prefill)  # max_tokens counts what the answer adds
    m = drive(c.messages.create(model=MODEL, max_tokens=rest, extra_body=GREEDY,
                                messages=[*ASK, {"role": "assistant", "content": prefill}]))
    assert prefill + m.content[0].text == whole  # the answer goes on from the prefill
    assert m.usage.output_tokens == count_tokens(m.content[0].text)


def test_an_output_format_gives_a_document_that_follows_it(drive: Drive, server: RefServer) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}
    c = _client(drive, server)
    m = drive(c.messages.create(model=MODEL, max_tokens=40, messages=ASK, metadata={"user_id": "u-1"},
                                output_config={"format": {"type": "json_schema", "schema": schema}}))
    doc = json.loads(m.content[0].text)
    assert isinstance(doc["name"], str) and isinstance(doc["count"], int)
    assert m.stop_reason == "end_turn"


# -- tools and thinking ------------------------------------------------------------------------
def test_tool_use_round_trip(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    m = drive(c.messages.create(model=MODEL, max_tokens=12, messages=ASK, tools=[WEATHER],
                                tool_choice={"type": "any"}, extra_body=GREEDY))
    assert m.stop_reason == "tool_use"
    [call] = m.content
    assert call.type == "tool_use" and call.name == "get_weather" and call.id.startswith("toolu_")
    assert isinstance(call.input["city"], str) and isinstance(call.input["days"], int)
    assert call.input["unit"] == "C"
    with drive.enter(c.messages.stream(model=MODEL, max_tokens=12, messages=ASK, tools=[WEATHER],
                                       tool_choice={"type": "tool", "name": "get_weather"},
                                       extra_body=GREEDY)) as s:
        streamed = drive(s.get_final_message())
    assert streamed.stop_reason == "tool_use" and streamed.content[0].input == call.input
    answer = drive(c.messages.create(model=MODEL, max_tokens=12, tools=[WEATHER], messages=[
        *ASK, m.to_param(),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "21 C"}]}]))
    assert answer.content[0].type == "text" and answer.stop_reason in ("end_turn", "max_tokens")
    assert answer.usage.input_tokens > m.usage.input_tokens


def test_thinking_comes_first_signed_and_goes_back(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    m = drive(c.messages.create(model=MODEL, max_tokens=1100, messages=ASK, thinking=thinking))
    assert [b.type for b in m.content] == ["thinking", "text"]
    thought, text = m.content
    assert thought.thinking and thought.signature and text.text
    assert m.usage.output_tokens == count_tokens(thought.thinking) + count_tokens(text.text)
    events = drive.iterate(drive(c.messages.create(model=MODEL, max_tokens=1100, messages=ASK,
                                                   thinking=thinking, stream=True)))
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert deltas[0] == "thinking_delta" and "signature_delta" in deltas and deltas[-1] == "text_delta"
    assert [e.content_block.type for e in events if e.type == "content_block_start"] == ["thinking", "text"]
    later = [*ASK, m.to_param(), {"role": "user", "content": "And then?"}]
    assert drive(c.messages.create(model=MODEL, max_tokens=1100, messages=later, thinking=thinking)).content
    forged = [*ASK, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": thought.thinking + " edited", "signature": thought.signature},
        {"type": "text", "text": text.text}]}, {"role": "user", "content": "And then?"}]
    with pytest.raises(anthropic.BadRequestError, match="signature"):
        drive(c.messages.create(model=MODEL, max_tokens=1100, messages=forged, thinking=thinking))


def test_an_image_block_counts_by_anthropics_rule(drive: Drive, server: RefServer) -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (300, 200), (10, 120, 200)).save(buf, "PNG")
    data = base64.b64encode(buf.getvalue()).decode()
    c = _client(drive, server)
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}]))
    assert m.usage.input_tokens == count_tokens("user: What is this?") + -(-300 * 200 // 750)
    with pytest.raises(anthropic.BadRequestError, match="does not match the provided media type"):
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}]}]))


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "error", "kind"), [
    (429, anthropic.RateLimitError, "rate_limit_error"),
    (529, anthropic.OverloadedError, "overloaded_error"),
    (500, anthropic.InternalServerError, "api_error"),
    (403, anthropic.PermissionDeniedError, "permission_error"),
])
def test_fault_statuses_raise_the_official_errors(drive: Drive, server: RefServer, status: int,
                                                  error: type[anthropic.APIStatusError], kind: str) -> None:
    c = _client(drive, server)
    with pytest.raises(error) as caught:
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, **_fault(f"status={status}")))
    exc = caught.value
    assert isinstance(exc, anthropic.APIStatusError) and exc.status_code == status
    assert exc.body["type"] == "error" and exc.body["error"]["type"] == kind
    assert exc.request_id == exc.response.headers["request-id"] == exc.body["request_id"]
    if status in (429, 529):
        assert exc.response.headers["retry-after"] == "1"


def test_the_official_retry_gets_past_one_overload(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server, max_retries=1)
    token = f"once-{time.monotonic_ns()}-{drive.kind}"
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK,
                                **_fault(f"status=529;retry_after=0;once={token}")))
    assert m.content[0].text


def test_auth_model_and_request_errors(drive: Drive, server: RefServer) -> None:
    with pytest.raises(anthropic.AuthenticationError) as denied:
        drive(_client(drive, server, api_key="wrong").messages.create(model=MODEL, max_tokens=4, messages=ASK))
    assert denied.value.body["error"] == {"type": "authentication_error", "message": "invalid x-api-key"}
    c = _client(drive, server)
    with pytest.raises(anthropic.NotFoundError, match="model: claude-nonexistent"):
        drive(c.messages.create(model="claude-nonexistent", max_tokens=4, messages=ASK))
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.0\.role: Input should be 'user' or 'assistant'"):
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "system", "content": "x"}]))
    with pytest.raises(anthropic.BadRequestError, match="temperature: Input should be less than or equal to 1"):
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, extra_body={"temperature": 1.5}))


def test_an_overload_mid_stream_is_an_error_event(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    stream = drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK, stream=True,
                                     **_fault("error_after=4")))
    with pytest.raises(anthropic.APIStatusError) as caught:
        drive.iterate(stream)
    assert caught.value.body["error"]["type"] == "overloaded_error"


def test_a_cut_stream_ends_without_message_stop(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    events = drive.iterate(drive(c.messages.create(model=MODEL, max_tokens=30, messages=ASK, stream=True,
                                                   **_fault("cut_after=5"))))
    assert [e.type for e in events][:2] == ["message_start", "content_block_start"]
    assert len(events) == 4 and "message_stop" not in [e.type for e in events]  # the ping is not one


# -- the read timeout and pings ----------------------------------------------------------------
READ_TIMEOUT_S = 1.5
SILENT_MS = 4500  # three read timeouts without content


def test_pings_keep_the_official_client_waiting_past_its_read_timeout(drive: Drive, server: RefServer) -> None:
    """The official client's read timeout is per read: every ``ping`` resets it. A stream whose
    content stops for three timeouts while pings go on is still open for it (it completes when
    the content comes back); the same silence without pings times out."""
    c = _client(drive, server, timeout=READ_TIMEOUT_S)
    t0 = time.monotonic()
    with drive.enter(c.messages.stream(model=MODEL, max_tokens=20, messages=ASK,
                                       **_fault(f"pings_after=4;ping_ms=250;resume_ms={SILENT_MS}"))) as s:
        kinds = [event.type for event in drive.iterate(s)]
        final = drive(s.get_final_message())
    took = time.monotonic() - t0
    assert final.stop_reason is not None and kinds[-1] == "message_stop"  # no timeout on the way
    assert took >= SILENT_MS / 1000 > 2 * READ_TIMEOUT_S  # the server's silence, held for that long
    stalled = c.messages.stream(model=MODEL, max_tokens=20, messages=ASK,
                                **_fault(f"stall_after=4;resume_ms={SILENT_MS}"))
    with pytest.raises(anthropic.APITimeoutError), drive.enter(stalled) as s:
        drive.iterate(s)


# -- raw responses, count_tokens, models --------------------------------------------------------
def test_with_raw_response_gives_the_headers(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    raw = drive(c.messages.with_raw_response.create(model=MODEL, max_tokens=4, messages=ASK))
    m = drive(raw.parse())
    assert raw.headers["request-id"].startswith("req_") and m._request_id == raw.headers["request-id"]
    assert raw.headers["request-id"] == "req_" + raw.headers["x-request-id"]
    assert m.content[0].text


def test_count_tokens_agrees_with_the_answers_usage(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    ask = {"model": MODEL, "messages": ASK, "system": "Be brief.", "tools": [WEATHER]}
    counted = drive(c.messages.count_tokens(**ask))
    m = drive(c.messages.create(max_tokens=4, **ask))
    assert counted.input_tokens == m.usage.input_tokens > ASK_TOKENS


def test_models_list_pages_and_retrieve(drive: Drive, server: RefServer) -> None:
    c = _client(drive, server)
    first = drive(c.models.list(limit=2))
    assert len(first.data) == 2 and first.has_more and first.first_id == first.data[0].id
    assert first.last_id == first.data[1].id
    everything = drive.iterate(c.models.list(limit=2))  # the async paginator is async-iterable
    ids = [m.id for m in everything]
    assert MODEL in ids and len(ids) == len(set(ids)) > 2
    info = drive(c.models.retrieve(MODEL))
    assert info.type == "model" and info.id == MODEL and info.display_name == "Claude Haiku 4.5"
    assert info.created_at.tzinfo is not None
    with pytest.raises(anthropic.NotFoundError):
        drive(c.models.retrieve("claude-nonexistent"))


def test_models_keep_openais_shape_without_anthropic_version(server: RefServer) -> None:
    r = httpx.get(server.base_url + "/models", headers={"authorization": f"Bearer {KEY}"})
    assert r.status_code == 200 and r.json()["object"] == "list"
    assert MODEL not in [m["id"] for m in r.json()["data"]]  # the Claude ids are the Anthropic face's


# -- prompt caching ------------------------------------------------------------------------------
def test_a_repeated_prefix_is_read_from_the_prefix_cache(drive: Drive, cached: RefServer) -> None:
    c = _client(drive, cached)
    # Each kind's own prefix from its first token (blocks are hashed as a chain from the start).
    long = drive.kind + ": you answer questions about the sea, its tides and its fish. " * 12
    system = [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}]
    marked = count_tokens("system: " + long)
    first = drive(c.messages.create(model=MODEL, max_tokens=4, system=system, messages=ASK))
    u1 = first.usage
    total = u1.input_tokens + u1.cache_creation_input_tokens + u1.cache_read_input_tokens
    assert total == drive(c.messages.count_tokens(model=MODEL, system=system, messages=ASK)).input_tokens
    assert u1.cache_read_input_tokens == 0 and u1.cache_creation_input_tokens == marked
    assert u1.cache_creation.ephemeral_5m_input_tokens == marked
    events = drive.iterate(drive(c.messages.create(model=MODEL, max_tokens=4, system=system,
                                                   messages=ASK, stream=True)))
    u2 = events[0].message.usage  # message_start already says what the cache served
    assert u2.cache_read_input_tokens >= marked - 16  # whole blocks of 16 tokens
    assert u2.input_tokens + u2.cache_creation_input_tokens + u2.cache_read_input_tokens == total
    assert events[-2].usage.cache_read_input_tokens == u2.cache_read_input_tokens


def test_max_tokens_zero_fills_the_cache_and_generates_nothing(drive: Drive, cached: RefServer) -> None:
    c = _client(drive, cached)
    system = drive.kind + ": a long and stable system prompt about ships and harbours. " * 10
    warm = drive(c.messages.create(model=MODEL, max_tokens=0, system=system, messages=ASK))
    assert warm.content == [] and warm.stop_reason == "max_tokens" and warm.usage.output_tokens == 0
    assert warm.usage.cache_read_input_tokens == 0
    hit = drive(c.messages.create(model=MODEL, max_tokens=4, system=system, messages=ASK))
    assert hit.usage.cache_read_input_tokens >= count_tokens("system: " + system) - 16


# -- rate limits --------------------------------------------------------------------------------
def test_rate_limits_in_anthropics_headers_then_429(drive: Drive, limited: RefServer) -> None:
    c = drive.client(anthropic, face="Anthropic", base_url=limited.url, max_retries=0,
                     api_key=f"key-{drive.kind}-{time.monotonic_ns()}")
    raw = drive(c.messages.with_raw_response.create(model=MODEL, max_tokens=100, messages=ASK))
    h = raw.headers
    assert (h["anthropic-ratelimit-requests-limit"], h["anthropic-ratelimit-requests-remaining"]) == ("3", "2")
    assert h["anthropic-ratelimit-output-tokens-limit"] == "400"
    assert h["anthropic-ratelimit-output-tokens-remaining"] == "300"
    assert h["anthropic-ratelimit-input-tokens-limit"] == "5000"
    reset = datetime.datetime.fromisoformat(h["anthropic-ratelimit-requests-reset"].replace("Z", "+00:00"))
    assert reset > datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
    assert "x-ratelimit-limit-requests" not in h  # OpenAI's names are the OpenAI routes'
    for _ in range(2):
        drive(c.messages.create(model=MODEL, max_tokens=100, messages=ASK))
    with pytest.raises(anthropic.RateLimitError) as caught:
        drive(c.messages.create(model=MODEL, max_tokens=100, messages=ASK))
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert caught.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"


# -- overload ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefServer]:
    """One batch slot and one waiting place, and slow steps: a third request finds it full."""
    profile = json.loads((Path("benchmarks/server/profiles/tiny-fast.json")).read_text())
    path = tmp_path_factory.mktemp("profile") / "narrow.json"
    path.write_text(json.dumps({**profile, "name": "narrow", "max_batch": 1, "max_waiting": 1,
                                "decode_base_ms": 50.0, "output_len_median": 200, "output_len_sigma": 0.01}))
    srv = start_ref_server(profile=str(path))
    yield srv
    stop_ref_server(srv)


def _wait_until_idle(server: RefServer, deadline_s: float = 60.0) -> None:
    """Until the server runs and holds no request (its /metrics); a hang guard, not a timing."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        metrics = parse_prometheus(httpx.get(f"{server.url}/metrics", timeout=10).text,
                                   ("llm_requests_running", "llm_requests_waiting"))
        if metrics.get("llm_requests_running", 0) + metrics.get("llm_requests_waiting", 0) == 0:
            return
        time.sleep(0.05)
    raise AssertionError("the reference server still runs requests of an earlier test")


def test_a_full_engine_queue_is_a_529_overloaded_error(drive: Drive, narrow: RefServer) -> None:
    """The engine's waiting queue full is what the API calls overload (529), not a rate limit."""
    headers = {"anthropic-version": "2023-06-01"}
    body = {"model": MODEL, "max_tokens": 200, "messages": ASK, "stream": True}
    c = drive.client(anthropic, face="Anthropic", base_url=narrow.url, api_key="k", max_retries=0)
    _wait_until_idle(narrow)  # the other variant's requests may still hold the slot (a loaded machine)
    with httpx.Client(base_url=narrow.url, timeout=60) as http, \
            http.stream("POST", "/v1/messages", json=body, headers=headers) as running:
        lines = running.iter_lines()  # kept: a dropped line iterator closes the response
        assert next(lines) == "event: message_start"  # it holds the one batch slot
        with http.stream("POST", "/v1/messages", json=body, headers=headers) as waiting:
            assert waiting.status_code == 200  # admitted to the waiting queue
            with pytest.raises(anthropic.OverloadedError) as caught:
                drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK))
    assert caught.value.body["error"]["type"] == "overloaded_error"
    assert int(caught.value.response.headers["retry-after"]) >= 1
