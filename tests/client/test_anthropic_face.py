"""``llmclient.Anthropic`` / ``AsyncAnthropic``: code written for the official anthropic client runs
unchanged on llmclient's face, against real reference-server processes.

The control is the official client itself: the README-usage tests of
tests/server/test_anthropic_api.py (create, ``stream=True``, the ``messages.stream()`` helper, tool
use, errors, raw responses, count_tokens, models), which the official client passes there, run
here again with llmclient's face built in their place (``_client`` patched), sync and async. Then
what the face adds: the headers on the wire, bad input raised before sending, the watchdog that
a ``ping`` does not fool, overload retried, the cache keyed over the whole request.
"""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import time
from typing import Any

import anthropic
import httpx
import pytest

import llmclient
from tests._both import Drive
from tests.conftest import RefServer
from tests.server import test_anthropic_api as api
from tests.server.test_anthropic_api import ASK, KEY, MODEL, cached, limited, server  # noqa: F401  (fixtures)


def _face(drive: Drive, srv: RefServer, **kw: object) -> Any:
    options: dict[str, object] = {"base_url": srv.url, "api_key": KEY, "max_retries": 0, **kw}
    return drive.client(llmclient, face="Anthropic", **options)


@pytest.fixture(autouse=True)
def _llmclient_in_place_of_the_official(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "_client", _face)


# -- the official client's README usage, on llmclient's face ------------------------------------
test_create_answers_a_message_with_usage_and_request_id = api.test_create_answers_a_message_with_usage_and_request_id
test_stream_true_sends_the_event_grammar_and_the_same_text = api.test_stream_true_sends_the_event_grammar_and_the_same_text
test_the_stream_helper_accumulates_the_answer = api.test_the_stream_helper_accumulates_the_answer
test_a_stop_sequence_ends_the_answer_and_is_named = api.test_a_stop_sequence_ends_the_answer_and_is_named
test_a_system_prompt_as_text_or_blocks_counts_alike = api.test_a_system_prompt_as_text_or_blocks_counts_alike
test_a_final_assistant_turn_is_continued = api.test_a_final_assistant_turn_is_continued
test_an_output_format_gives_a_document_that_follows_it = api.test_an_output_format_gives_a_document_that_follows_it
test_tool_use_round_trip = api.test_tool_use_round_trip
test_thinking_comes_first_signed_and_goes_back = api.test_thinking_comes_first_signed_and_goes_back
test_fault_statuses_raise_the_official_errors = api.test_fault_statuses_raise_the_official_errors
test_one_overload_is_retried = api.test_the_official_retry_gets_past_one_overload
test_auth_model_and_request_errors = api.test_auth_model_and_request_errors
test_an_overload_mid_stream_is_an_error_event = api.test_an_overload_mid_stream_is_an_error_event
test_with_raw_response_gives_the_headers = api.test_with_raw_response_gives_the_headers
test_count_tokens_agrees_with_the_answers_usage = api.test_count_tokens_agrees_with_the_answers_usage
test_models_list_pages_and_retrieve = api.test_models_list_pages_and_retrieve
test_a_repeated_prefix_is_read_from_the_prefix_cache = api.test_a_repeated_prefix_is_read_from_the_prefix_cache
test_rate_limits_in_anthropics_headers_then_429 = api.test_rate_limits_in_anthropics_headers_then_429


# -- the face's own ----------------------------------------------------------------------------
def test_the_client_and_its_errors_are_the_official_kind(drive: Drive, server: RefServer) -> None:  # noqa: F811
    c = _face(drive, server)
    assert isinstance(c, anthropic.AsyncAnthropic if drive.is_async else anthropic.Anthropic)
    assert issubclass(llmclient.OverloadedError, anthropic.OverloadedError)
    assert issubclass(llmclient.RateLimitError, anthropic.RateLimitError)
    assert issubclass(llmclient.APIStatusError, anthropic.APIStatusError)
    assert issubclass(llmclient.OpenAIError, anthropic.AnthropicError)


def _recording(drive: Drive) -> tuple[Any, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    return drive.http_client(event_hooks={"request": [seen.append]}), seen


def test_the_wire_carries_anthropics_headers(drive: Drive, server: RefServer) -> None:  # noqa: F811
    http, seen = _recording(drive)
    c = _face(drive, server, http_client=http)
    drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, betas=["prompt-caching-2024-07-31"]))
    [request] = seen
    assert request.url.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert c.auth_headers == {"x-api-key": KEY}


def test_the_environment_gives_key_and_base_url(drive: Drive, server: RefServer,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    c = drive.client(llmclient, face="Anthropic", max_retries=0)
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK))
    assert m.content[0].text and m.timings.http_version == "HTTP/2"  # h2c: the server offers it
    assert c.timeout == httpx.Timeout(600.0, connect=5.0) and c.max_retries == 0


def test_bad_input_raises_before_anything_is_sent(drive: Drive, server: RefServer,  # noqa: F811
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(anthropic.AnthropicError, match="ANTHROPIC_API_KEY"):
        drive.client(llmclient, face="Anthropic", base_url=server.url)
    with pytest.raises(TypeError, match=r"'max_retires'.*'max_retries'"):
        drive.client(llmclient, face="Anthropic", base_url=server.url, api_key=KEY, max_retires=3)
    http, seen = _recording(drive)
    c = _face(drive, server, http_client=http)
    with pytest.raises(TypeError, match="missing required keyword argument: 'max_tokens'"):
        drive(c.messages.create(model=MODEL, messages=ASK))
    with pytest.raises(TypeError, match=r"'max_token'.*did you mean 'max_tokens'"):
        drive(c.messages.create(model=MODEL, max_tokens=4, max_token=4, messages=ASK))
    with pytest.raises(TypeError, match=r"'stop_sequence'.*did you mean 'stop_sequences'"):
        c.messages.stream(model=MODEL, max_tokens=4, messages=ASK, stop_sequence=["x"])
    assert seen == []  # nothing went out


def test_a_stream_whose_content_stops_while_pings_go_on_fails_with_its_partial(
        drive: Drive, server: RefServer) -> None:  # noqa: F811
    """Issue 45's case: one delta, then only pings for 25 s. The official client's read timeout
    is reset by each ping (tests/server/test_anthropic_api.py shows it waiting); llmclient's
    watchdog counts content events only, so the stream fails after ``stream_idle_timeout`` with
    what had arrived. Had the pings counted, the stream would have completed after 25 s."""
    c = _face(drive, server, stream_idle_timeout=1.0)
    stream = drive(c.messages.create(model=MODEL, max_tokens=20, messages=ASK, stream=True,
                                     **api._fault("pings_after=4;ping_ms=250;resume_ms=25000")))
    with pytest.raises(anthropic.APITimeoutError) as caught:  # the server would have resumed at 25 s
        drive.iterate(stream)
    assert "stream_idle_timeout" in str(caught.value) or "idle" in str(caught.value)
    partial = caught.value.partial
    assert partial is not None and partial.events >= 3
    assert partial.choices[0].text  # the text delta that came before the pings


def test_overload_is_retried_honouring_retry_after(drive: Drive, server: RefServer) -> None:  # noqa: F811
    c = _face(drive, server, max_retries=2)
    token = f"face-529-{time.monotonic_ns()}-{drive.kind}"
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK,
                                **api._fault(f"status=529;retry_after=0;once={token}")))
    assert m.content[0].text and m.timings.retries == 1
    http, seen = _recording(drive)
    c = _face(drive, server, max_retries=2, http_client=http)
    with pytest.raises(anthropic.OverloadedError):  # every answer a 529: the retries are spent
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, **api._fault("status=529;retry_after=0")))
    assert len(seen) == 3


def test_a_burst_of_overload_answers_keeps_the_retry_budget(drive: Drive, server: RefServer) -> None:  # noqa: F811
    # 16 calls, each refused once by a 529 and then answered: at a token a failure they would
    # take the default bucket (20, back 0.2 a success) to 10 and the 13th retry would be refused; a
    # 529 (a shed answer) takes a quarter (features/admit/retry_budget.py), so all are retried.
    c = _face(drive, server, max_retries=2)
    for i in range(16):
        token = f"face-529-burst-{time.monotonic_ns()}-{drive.kind}-{i}"
        m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK,
                                    **api._fault(f"status=529;retry_after=0;once={token}")))
        assert m.content[0].text and m.timings.retries == 1
    [state] = c.retry_budgets.values()
    assert not state["spent"] and state["refused"] == 0 and state["tokens"] >= 20 - 16 * 0.25


def test_the_cache_keys_over_the_whole_request(drive: Drive, server: RefServer, tmp_path: Any) -> None:  # noqa: F811
    c = _face(drive, server, cache=True)
    base = {"model": MODEL, "max_tokens": 8, "messages": ASK, "extra_body": api.GREEDY}
    first = drive(c.messages.create(**base, system="Be brief."))
    again = drive(c.messages.create(**base, system="Be brief."))
    assert (first.timings.cache, again.timings.cache) == ("miss", "hit")
    assert again.content[0].text == first.content[0].text and isinstance(again, anthropic.types.Message)
    other_system = drive(c.messages.create(**base, system="Be long."))
    marked = drive(c.messages.create(**base, system=[{"type": "text", "text": "Be brief.",
                                                      "cache_control": {"type": "ephemeral"}}]))
    tooled = drive(c.messages.create(**base, system="Be brief.", tools=[api.WEATHER]))
    assert [r.timings.cache for r in (other_system, marked, tooled)] == ["miss", "miss", "miss"]
    streamed = drive.iterate(drive(c.messages.create(**base, system="Stream.", stream=True)))
    replayed = drive.iterate(drive(c.messages.create(**base, system="Stream.", stream=True)))
    assert [e.type for e in replayed] == [e.type for e in streamed] and replayed[-1].type == "message_stop"
    assert "ping" not in [e.type for e in replayed]
    # one entry answers either shape: a whole answer told again as events, events merged into one
    told = drive.iterate(drive(c.messages.create(**base, system="Be brief.", stream=True)))
    assert told[0].type == "message_start" and told[-1].type == "message_stop"
    text = "".join(e.delta.text for e in told if e.type == "content_block_delta")
    assert text == first.content[0].text
    merged = drive(c.messages.create(**base, system="Stream."))
    assert merged.timings.cache == "hit" and merged.content[0].text == "".join(
        e.delta.text for e in streamed if e.type == "content_block_delta")
    assert merged.stop_reason == next(e for e in streamed if e.type == "message_delta").delta.stop_reason


def test_with_options_and_the_pass_through(drive: Drive, server: RefServer) -> None:  # noqa: F811
    c = _face(drive, server)
    copy = c.with_options(max_retries=5, default_headers={"x-team": "a"})
    assert copy.max_retries == 5 and copy.default_headers["x-team"] == "a"
    assert copy.default_headers["x-api-key"] == KEY and isinstance(copy, type(c))
    assert drive(copy.messages.create(model=MODEL, max_tokens=4, messages=ASK)).content[0].text
    batches = c.messages.batches  # not run by llmclient: the official client's own resource
    assert batches.__class__.__module__.startswith("anthropic.resources")  # Passed stands for it


def test_import_llmclient_does_not_import_anthropic() -> None:
    code = "import sys, llmclient; llmclient.Anthropic; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.stdout.strip() == "False"


def test_light_types_without_importing_anthropic(server: RefServer) -> None:  # noqa: F811
    """``LLMCLIENT_TYPES=light`` (as without anthropic installed): llmclient's own views, the
    keyword check from the names it knows, and ``anthropic`` never imported."""
    code = f"""
import sys, llmclient
c = llmclient.Anthropic(base_url={server.url!r}, api_key={KEY!r}, max_retries=0)
m = c.messages.create(model={MODEL!r}, max_tokens=5, messages={ASK!r})
kinds = [e.type for e in c.messages.create(model={MODEL!r}, max_tokens=3, messages={ASK!r}, stream=True)]
try:
    c.messages.create(model={MODEL!r}, max_tokens=5, messages={ASK!r}, stop_sequence=["x"])
except TypeError as exc:
    refused = str(exc)
print(type(m).__module__, bool(m.content[0].text), m.usage.output_tokens, kinds[0], kinds[-1],
      "stop_sequences" in refused, "anthropic" in sys.modules)
"""
    env = {**os.environ, "LLMCLIENT_TYPES": "light", "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["llmclient.api.models", "True", "5", "message_start", "message_stop",
                                  "True", "False"]


def test_pacing_learns_from_anthropics_rate_limit_headers(drive: Drive, limited: RefServer) -> None:  # noqa: F811
    c = _face(drive, limited, api_key=f"key-pace-{drive.kind}-{time.monotonic_ns()}")  # its own budget
    drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK))
    [budgets] = c.rate_limits.values()
    assert budgets["requests"]["limit"] == 3 and budgets["requests"]["remaining"] <= 2


def test_an_image_block_counts_by_anthropics_rule(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """The official test's image, on the face: the same tokens. A block whose ``media_type``
    names another format than its data goes out prepared, its type now the data's, and is
    answered; with ``images=False`` it goes as given and the API refuses it, as for the official
    client (tests/server/test_anthropic_api.py)."""
    import base64
    import io

    from PIL import Image

    from benchmarks.server.tokenizer import count_tokens

    buf = io.BytesIO()
    Image.new("RGB", (300, 200), (10, 120, 200)).save(buf, "PNG")
    data = base64.b64encode(buf.getvalue()).decode()
    c = _face(drive, server)
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}]))
    assert m.usage.input_tokens == count_tokens("user: What is this?") + -(-300 * 200 // 750)
    mislabelled = [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}]}]
    assert drive(c.messages.create(model=MODEL, max_tokens=4, messages=mislabelled)).content[0].text
    with pytest.raises(anthropic.BadRequestError, match="does not match the provided media type"):
        drive(_face(drive, server, images=False).messages.create(model=MODEL, max_tokens=4, messages=mislabelled))


def test_a_large_image_block_is_prepared_for_claudes_limits(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """``preprocess``'s ``anthropic`` target on Anthropic's own image blocks: a 2400x1600 photo-like
    image of 8 MB goes out prepared under Claude's limits and is answered, the caller's message
    left alone; ``images=False`` sends it as it is, as the official client does, and the API
    refuses it (5 MB per image)."""
    import base64
    import io
    import random

    from PIL import Image

    rng = random.Random(45)
    img = Image.new("RGB", (240, 160))
    img.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(240 * 160)])
    buf = io.BytesIO()
    img.resize((2400, 1600)).save(buf, "PNG")
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(buf.getvalue()).decode()}}
    ask = [{"role": "user", "content": [block, {"type": "text", "text": "What is this?"}]}]
    m = drive(_face(drive, server).messages.create(model=MODEL, max_tokens=4, messages=ask))
    assert m.timings.image_bytes_saved > 3_000_000 and m.content[0].text
    with pytest.raises(anthropic.BadRequestError, match="exceeds 5 MB"):
        drive(_face(drive, server, images=False).messages.create(model=MODEL, max_tokens=4, messages=ask))
    assert block["source"]["media_type"] == "image/png" and len(block["source"]["data"]) > 1_000_000


@pytest.mark.parametrize("stream", [False, True])
def test_a_late_call_is_hedged_and_the_copy_wins(drive: Drive, server: RefServer, stream: bool) -> None:  # noqa: F811
    """The first copy stalls 5 s (``once``: only the first request with the token); the second,
    sent after 100 ms, answers: a whole answer or a stream (racing on its first text delta)."""
    c = _face(drive, server, hedge=llmclient.HedgeConfig(after_ms=100))
    token = f"hedge-{stream}-{drive.kind}-{time.monotonic_ns()}"
    got = drive(c.messages.create(model=MODEL, max_tokens=6, messages=ASK, stream=stream,
                                  **api._fault(f"stall_ms=5000;once={token}")))
    if stream:
        events = drive.iterate(got)
        assert events[-1].type == "message_stop"
    assert got.timings.hedged and got.timings.hedge_won  # the copy's answer, not the stalled one's


def test_an_auth_token_goes_as_a_bearer_and_survives_a_copy(drive: Drive, cached: RefServer,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    http, seen = _recording(drive)
    c = drive.client(llmclient, face="Anthropic", base_url=cached.url, auth_token="tok-1", http_client=http)
    copy = c.with_options(max_retries=1)
    for client in (c, copy):
        assert drive(client.messages.create(model=MODEL, max_tokens=2, messages=ASK)).content[0].text
    assert [r.headers.get("authorization") for r in seen] == ["Bearer tok-1"] * 2
    assert not any("x-api-key" in r.headers for r in seen) and c.api_key is None


def test_the_pass_through_sends_over_llmclients_connections(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """``beta``, ``messages.batches`` ... are the official client's, sent through llmclient's shared
    connections (anthropic 2.x sends with httpx2: an httpx2 transport hands each request across).
    The proof is on the wire: the caller's ``traceparent`` is continued and its trace id comes back
    as the server's ``x-request-id``, which llmclient sets and the official client alone does not."""
    c = _face(drive, server)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    raw = drive(c.beta.models.with_raw_response.list(extra_headers=parent))
    assert raw.headers["x-request-id"].replace("-", "") == trace_id  # llmclient writes it as a UUID
    page = drive(raw.parse())
    assert MODEL in [m.id for m in page.data]
    # without a caller's traceparent: a fresh trace per request, still llmclient's
    first = drive(c.beta.models.with_raw_response.list()).headers["x-request-id"]
    second = drive(c.beta.models.with_raw_response.list()).headers["x-request-id"]
    assert first != second and len(first.replace("-", "")) == 32
    with pytest.raises(llmclient.NotFoundError) as caught:  # the official error, as llmclient's class
        drive(c.messages.batches.retrieve("msgbatch_nope", extra_headers=parent))
    assert isinstance(caught.value, anthropic.NotFoundError) and caught.value.trace_id == trace_id


def test_a_pass_through_call_to_a_dead_port_is_a_connection_error(drive: Drive) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = drive.client(llmclient, face="Anthropic", base_url=f"http://127.0.0.1:{port}", api_key=KEY, max_retries=0)
    with pytest.raises(llmclient.APIConnectionError) as caught:  # httpx2's error, as the official client reads it
        drive(c.beta.models.list())
    assert isinstance(caught.value, anthropic.APIConnectionError) and f":{port}" in str(caught.value)


def test_the_official_timeout_class_is_taken_at_construction_and_per_call(drive: Drive,
                                                                         server: RefServer) -> None:  # noqa: F811
    """anthropic 2.x's own ``anthropic.Timeout`` (httpx2's), as code written for it passes it
    (pydantic-ai per call): the client's timeout of its values, and a call's own honoured (a
    first byte 3 s late against a 0.3 s read timeout times out)."""
    c = _face(drive, server, timeout=anthropic.Timeout(10.0, connect=2.0))
    assert c.timeout == httpx.Timeout(10.0, connect=2.0)
    assert c.with_options(timeout=anthropic.Timeout(7.0)).timeout == httpx.Timeout(7.0)
    m = drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, timeout=anthropic.Timeout(30.0, connect=5.0)))
    assert m.content[0].text
    with pytest.raises(anthropic.APITimeoutError):
        drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, timeout=anthropic.Timeout(0.3, connect=5.0),
                                extra_headers={"x-fault": "stall_ms=3000"}))


def test_the_default_timeout_equals_the_official_clients(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """``client.timeout == anthropic``'s ``DEFAULT_TIMEOUT`` (pydantic-ai streams a long answer at
    once where they differ, and sends it whole first with the official client); other values and
    other kinds compare as httpx's."""
    from anthropic._constants import DEFAULT_TIMEOUT

    c = _face(drive, server)
    official = anthropic.AsyncAnthropic if drive.is_async else anthropic.Anthropic
    assert official(api_key=KEY).timeout == DEFAULT_TIMEOUT  # the control
    # both operators, both ways round (pydantic-ai writes `client.timeout != DEFAULT_TIMEOUT`)
    assert operator.eq(c.timeout, DEFAULT_TIMEOUT) and not operator.ne(c.timeout, DEFAULT_TIMEOUT)
    assert operator.eq(DEFAULT_TIMEOUT, c.timeout) and not operator.ne(DEFAULT_TIMEOUT, c.timeout)
    assert c.timeout == httpx.Timeout(600.0, connect=5.0) == c.timeout
    assert c.timeout != anthropic.Timeout(60.0) and c.timeout != httpx.Timeout(60.0) and c.timeout != 600.0
    assert _face(drive, server, timeout=60.0).timeout != DEFAULT_TIMEOUT


def test_workspace_and_user_profile_go_as_headers_as_the_official_client_sends_them(
        drive: Drive, server: RefServer) -> None:  # noqa: F811
    """``workspace_id`` / ``user_profile_id`` are headers (``anthropic-workspace-id``,
    ``anthropic-user-profile-id``), not body fields, which the API refuses: on ``messages.create``,
    ``count_tokens``, ``models.list`` (with ``lifecycle`` in the query) and ``models.retrieve``,
    the caller's ``extra_headers`` winning; the official client (the control) sends the same."""
    import httpx2

    ids = {"workspace_id": "ws_1", "user_profile_id": "up_1"}
    wanted = {"anthropic-workspace-id": "ws_1", "anthropic-user-profile-id": "up_1"}
    official_seen: list[Any] = []
    official = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0,
                                   http_client=httpx2.Client(event_hooks={"request": [official_seen.append]}))
    official.messages.create(model=MODEL, max_tokens=4, messages=ASK, **ids)  # type: ignore[arg-type]
    assert {k: official_seen[-1].headers.get(k) for k in wanted} == wanted
    assert b"ws_1" not in official_seen[-1].content
    official.close()

    http, seen = _recording(drive)
    c = _face(drive, server, http_client=http)
    assert drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, **ids)).content[0].text
    assert {k: seen[-1].headers.get(k) for k in wanted} == wanted and b"ws_1" not in seen[-1].content
    drive(c.messages.count_tokens(model=MODEL, messages=ASK, **ids))
    assert {k: seen[-1].headers.get(k) for k in wanted} == wanted and b"up_1" not in seen[-1].content
    drive(c.messages.create(model=MODEL, max_tokens=4, messages=ASK, workspace_id="ws_1",
                            extra_headers={"anthropic-workspace-id": "ws_2"}))
    assert seen[-1].headers["anthropic-workspace-id"] == "ws_2"  # the caller's own header wins
    drive(c.models.list(limit=1, lifecycle="active", workspace_id="ws_1", _raw=True))
    assert seen[-1].headers["anthropic-workspace-id"] == "ws_1"
    assert dict(seen[-1].url.params) == {"limit": "1", "lifecycle": "active"}
    assert drive(c.models.retrieve(MODEL, workspace_id="ws_1")).id == MODEL
    assert seen[-1].headers["anthropic-workspace-id"] == "ws_1"
    with pytest.raises(TypeError, match="'lifecycel'"):
        c.models.list(lifecycel="active")


def test_beta_messages_create_runs_on_llmclients_chain(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """``client.beta.messages.create`` (where pydantic-ai's ``AnthropicModel`` sends every call):
    llmclient's own call, whole and streamed, its answers the official beta types with llmclient's
    trace id, the ``betas`` in ``anthropic-beta``, the beta keywords checked before sending; the
    official client (the control) gives the same types. The rest of ``beta`` is passed through."""
    official = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
    control = official.beta.messages.create(model=MODEL, max_tokens=4, messages=ASK, betas=["b-1"])
    official.close()

    http, seen = _recording(drive)
    c = _face(drive, server, http_client=http)
    m = drive(c.beta.messages.create(model=MODEL, max_tokens=4, messages=ASK, betas=["b-1", "b-2"],
                                     speed=anthropic.omit, system=anthropic.omit))
    assert type(m) is type(control) is anthropic.types.beta.BetaMessage
    assert type(m.content[0]) is type(control.content[0]) and m.content[0].text and m.trace_id
    assert m._request_id and m.usage.output_tokens == control.usage.output_tokens == 4
    assert seen[-1].url.path == "/v1/messages" and seen[-1].headers["anthropic-beta"] == "b-1,b-2"
    assert b"speed" not in seen[-1].content  # an omitted keyword is not sent
    events = drive.iterate(drive(c.beta.messages.create(model=MODEL, max_tokens=8, messages=ASK, stream=True)))
    assert [type(e).__name__ for e in events[:2]] == ["BetaRawMessageStartEvent", "BetaRawContentBlockStartEvent"]
    assert "".join(e.delta.text for e in events if e.type == "content_block_delta")
    @anthropic.beta_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    forced = {"type": "tool", "name": "weather"}  # a @beta_tool function goes as its entry
    used = drive(c.beta.messages.create(model=MODEL, max_tokens=64, messages=ASK, tools=[weather], tool_choice=forced))
    assert used.content[0].type == "tool_use" and isinstance(used.content[0].input["city"], str)
    raw = drive(c.beta.messages.with_raw_response.create(model=MODEL, max_tokens=4, messages=ASK))
    assert isinstance(raw.parse(), anthropic.types.beta.BetaMessage) and raw.headers["request-id"]
    sent = len(seen)
    with pytest.raises(TypeError, match=r"'speeed'.*did you mean 'speed'"):
        drive(c.beta.messages.create(model=MODEL, max_tokens=4, messages=ASK, speeed="fast"))
    assert len(seen) == sent  # nothing sent
    c = _face(drive, server)  # (the pass-through takes no httpx client: anthropic 2.x sends with httpx2)
    assert drive(c.beta.messages.count_tokens(model=MODEL, messages=ASK)).input_tokens  # passed through
    assert c.beta.messages.batches.__class__.__module__.startswith("anthropic.resources.beta")  # the official one
    assert c.beta is c.beta


@pytest.mark.parametrize(("kw", "refused"), [
    ({"max_tokens": 21_334}, True),  # over 10 minutes at an hour per 128k tokens
    ({"max_tokens": 21_333}, False),
    ({"max_tokens": 9_000, "model": "claude-opus-4-0"}, True),  # over the model's non-streaming limit
    ({"max_tokens": 64_000, "stream": True}, False),
    ({"max_tokens": 64_000, "timeout": 900.0}, False),  # a timeout of the call's own
    ({"max_tokens": 64_000, "client_timeout": 900.0}, False),  # not the default timeout
])
def test_a_long_whole_answer_is_refused_as_the_official_client_refuses_it(
        drive: Drive, kw: dict[str, Any], refused: bool) -> None:
    """A whole answer that may take over 10 minutes, with the default timeout: the official
    ValueError before sending (pydantic-ai streams the call when it sees it); otherwise sent
    (here to a closed port: a connection error). The official client is the control."""
    kw = dict(kw)
    options: dict[str, Any] = {"base_url": "http://127.0.0.1:9", "api_key": KEY, "max_retries": 0}
    if "client_timeout" in kw:
        options["timeout"] = kw.pop("client_timeout")
    call = {"model": MODEL, "messages": ASK, **kw}
    outcomes = []
    for face in (drive.client(anthropic, face="Anthropic", **options), drive.client(llmclient, face="Anthropic", **options)):
        with pytest.raises((ValueError, anthropic.APIConnectionError)) as caught:
            drive(face.messages.create(**call))
        outcomes.append((type(caught.value) is ValueError, "Streaming is required" in str(caught.value)))
    assert outcomes[0] == outcomes[1] == (refused, refused)
