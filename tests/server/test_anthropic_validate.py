"""Messages API requests as the API validates them (pure: ``_anthropic_validate``), the usage
and paging arithmetic (pure), and the wire-level answers an SDK hides (raw httpx: a missing
``anthropic-version``, a missing key, the error body's shape)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchmarks.server._anthropic_validate import (
    check_version,
    parse_count_tokens,
    parse_messages,
    sign_thinking,
)
from benchmarks.server._validate import InvalidRequest
from benchmarks.server.anthropic import Prompt, models_page, usage
from benchmarks.server.ratelimit import RateLimiter, anthropic_headers
from benchmarks.server.tokenizer import count_tokens
from tests.conftest import RefServer, start_ref_server, stop_ref_server

WINDOW = 4096
BASE: dict[str, Any] = {"model": "claude-haiku-4-5", "max_tokens": 64,
                        "messages": [{"role": "user", "content": "hello"}]}
TOOL = {"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
USE = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": "x"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


def _with(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def _msgs(*messages: Any) -> dict[str, Any]:
    return _with(messages=list(messages))


@pytest.mark.parametrize(("body", "needle"), [
    (_with(max_tokens=None), "max_tokens: Field required"),
    (_with(max_tokens="5"), "max_tokens: Input should be a valid integer"),
    (_with(max_tokens=-1), "max_tokens: Input should be greater than or equal to 0"),
    (_with(max_tokens=WINDOW + 1), f"max_tokens: {WINDOW + 1} > {WINDOW}"),
    (_with(model=None), "model: Field required"),
    (_with(messages=None), "messages: Field required"),
    (_with(messages=[]), "messages: at least one message is required"),
    (_msgs({"role": "system", "content": "x"}), "messages.0.role: Input should be 'user' or 'assistant'"),
    (_msgs({"role": "user"}), "messages.0.content: Field required"),
    (_msgs({"role": "user", "content": ""}), "messages.0: all messages must have non-empty content"),
    (_msgs({"role": "user", "content": [{"type": "text", "text": ""}]}), "text content blocks must be non-empty"),
    (_msgs({"role": "user", "content": [{"type": "document"}]}), "messages.0.content.0.type"),
    (_msgs({"role": "user", "content": "a"}, {"role": "assistant", "content": "b "}),
     "final assistant content cannot end with trailing whitespace"),
    (_msgs({"role": "user", "content": [RESULT]}), "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
    (_with(tools=[TOOL], messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": [USE]},
                                   {"role": "user", "content": "no result"}]),
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    (_msgs({"role": "user", "content": [USE]}), "'tool_use' blocks are not allowed in user messages"),
    (_with(foo=1), "foo: Extra inputs are not permitted"),
    (_with(metadata={"user_id": "u", "email": "e"}), "metadata.email: Extra inputs are not permitted"),
    (_with(temperature=1.5), "temperature: Input should be less than or equal to 1"),
    (_with(top_k=-1), "top_k"),
    (_with(stream="yes"), "stream: Input should be a valid boolean"),
    (_with(stop_sequences=[" "]), "stop_sequences: each stop sequence must contain non-whitespace"),
    (_with(tools=[{**TOOL, "name": "bad name"}]), "tools.0.name: String should match pattern"),
    (_with(tools=[{"name": "f"}]), "tools.0.input_schema: Field required"),
    (_with(tools=[TOOL, TOOL]), "tools: Tool names must be unique."),
    (_with(tools=[{"type": "web_search_20250305", "name": "web_search"}]), "not supported by this server"),
    (_with(tool_choice={"type": "any"}), "needs 'tools'"),
    (_with(tools=[TOOL], tool_choice={"type": "tool", "name": "g"}), "tool_choice.tool.name"),
    (_with(thinking={"type": "enabled", "budget_tokens": 1000}),
     "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    (_with(thinking={"type": "enabled", "budget_tokens": 1024}), "`max_tokens` must be greater than"),
    (_with(max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024}, tools=[TOOL],
           tool_choice={"type": "any"}), "Thinking may not be enabled when tool_choice forces tool use."),
    (_with(max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024}, temperature=0.5),
     "`temperature` may only be set to 1 when thinking is enabled"),
    (_with(system=[{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}] * 5),
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    (_with(cache_control={"type": "persistent"}), "cache_control.type: Input should be 'ephemeral'"),
    (_msgs({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/bmp",
                                                                      "data": "AA=="}}]}),
     "messages.0.content.0.source.base64.media_type"),
    (_msgs({"role": "user", "content": [{"type": "image", "source": {"type": "url",
                                                                      "url": "https://example.com/a.png"}}]}),
     "image URLs are not fetched by this server"),
    (_msgs({"role": "user", "content": "a"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "forged"}]}, {"role": "user", "content": "b"}),
     "Invalid `signature` in `thinking` block"),
    (_with(container="c"), "container: not supported by this server"),
])
def test_a_bad_request_is_named_as_the_api_names_it(body: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_messages(body, WINDOW)
    assert needle in caught.value.message and caught.value.status == 400


def test_consecutive_turns_of_one_role_are_combined_not_refused() -> None:
    split = parse_messages(_msgs({"role": "user", "content": "one"}, {"role": "user", "content": "two"}), WINDOW)
    joined = parse_messages(_msgs({"role": "user", "content": [{"type": "text", "text": "one"},
                                                               {"type": "text", "text": "two"}]}), WINDOW)
    assert split.prompt_text == joined.prompt_text == "user: one two\n"


def test_the_prompt_is_tools_then_system_then_turns_and_a_final_assistant_turn_is_a_prefill() -> None:
    p = parse_messages(_with(tools=[TOOL], system="Be brief.", messages=[
        {"role": "user", "content": "a"}, {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [RESULT]}, {"role": "assistant", "content": "The answer is"}]), WINDOW)
    lines = p.prompt_text.splitlines()
    assert lines[0].startswith("tools: ") and lines[1] == "system: Be brief."
    assert lines[2:] == ["user: a", 'assistant: {"tool_use":"f","input":{"a":"x"}}', "user: tool_result: ok"]
    assert p.prefill == "The answer is"


def test_cache_breakpoints_mark_the_prefix_up_to_the_last_one() -> None:
    marked = {"type": "ephemeral", "ttl": "1h"}
    p = parse_messages(_with(system=[{"type": "text", "text": "stable part", "cache_control": marked},
                                     {"type": "text", "text": "changing part"}]), WINDOW)
    assert p.prompt_text[:p.marked_chars] == "system: stable part" and p.cache_ttl == "1h"
    whole = parse_messages(_with(cache_control={"type": "ephemeral"}), WINDOW)
    assert whole.marked_chars == len(whole.prompt_text)
    assert parse_messages(BASE, WINDOW).marked_chars == 0


def test_forced_tools_thinking_and_output_format_are_read() -> None:
    forced = parse_messages(_with(tools=[TOOL], tool_choice={"type": "tool", "name": "f"}), WINDOW)
    assert forced.tool is not None and forced.tool.name == "f" and forced.tool.parameters == TOOL["input_schema"]
    assert parse_messages(_with(tools=[TOOL], tool_choice={"type": "auto"}), WINDOW).tool is None
    thinking = parse_messages(_with(max_tokens=3000, thinking={"type": "enabled", "budget_tokens": 2048,
                                                               "display": "omitted"}), WINDOW)
    assert thinking.thinking_budget == 2048 and not thinking.thinking_shown
    assert parse_messages(_with(max_tokens=400, thinking={"type": "adaptive"}), WINDOW).thinking_budget == 100
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    fmt = parse_messages(_with(output_config={"format": {"type": "json_schema", "schema": schema}}), WINDOW)
    assert fmt.json_schema == schema
    assert parse_messages(_with(max_tokens=0), WINDOW).max_tokens == 0  # fills the cache only


def test_count_tokens_takes_no_generation_fields() -> None:
    with pytest.raises(InvalidRequest, match="max_tokens: Extra inputs are not permitted"):
        parse_count_tokens(BASE, WINDOW)
    counted = parse_count_tokens({k: v for k, v in BASE.items() if k != "max_tokens"}, WINDOW)
    assert counted.prompt_text == "user: hello\n"


def test_a_thinking_signature_checks_its_text_only() -> None:
    sig = sign_thinking("Let me think.")
    assert sig == sign_thinking("Let me think.") != sign_thinking("Let me think!")
    good = _msgs({"role": "user", "content": "a"},
                 {"role": "assistant", "content": [{"type": "thinking", "thinking": "Let me think.", "signature": sig},
                                                   {"type": "text", "text": "b"}]},
                 {"role": "user", "content": "c"})
    assert "Let me think" not in parse_messages(good, WINDOW).prompt_text  # earlier thinking leaves the context


@pytest.mark.parametrize(("value", "ok"), [(None, False), ("2023-06-01", True), ("2026-10-21", True),
                                           ("latest", False)])
def test_the_version_header_is_required_and_a_date(value: str | None, ok: bool) -> None:
    assert (check_version(value) is None) == ok


def test_usage_splits_the_prompt_into_read_written_and_the_rest() -> None:
    prompt = Prompt(tuple(range(100)), 20, "d", marked=90, ttl="5m")
    u = usage(prompt, cached=64, output_tokens=7)
    assert (u["cache_read_input_tokens"], u["cache_creation_input_tokens"], u["input_tokens"]) == (64, 26, 30)
    assert u["cache_creation"] == {"ephemeral_5m_input_tokens": 26, "ephemeral_1h_input_tokens": 0}
    unmarked = usage(Prompt(tuple(range(100)), 0, "", None, "5m"), cached=96, output_tokens=1)
    assert (unmarked["cache_read_input_tokens"], unmarked["cache_creation_input_tokens"],
            unmarked["input_tokens"]) == (96, 0, 4)


def test_models_pages_forward_and_back() -> None:
    ids = ("a", "b", "c", "d", "e")
    page = models_page(ids, {"limit": "2"}, lambda m: {"id": m})
    assert (page["first_id"], page["last_id"], page["has_more"]) == ("a", "b", True)
    page = models_page(ids, {"limit": "2", "after_id": "d"}, lambda m: {"id": m})
    assert [m["id"] for m in page["data"]] == ["e"] and not page["has_more"]
    page = models_page(ids, {"limit": "2", "before_id": "d"}, lambda m: {"id": m})
    assert [m["id"] for m in page["data"]] == ["b", "c"] and page["has_more"]
    for bad in ({"limit": "0"}, {"limit": "1001"}, {"after_id": "zz"}):
        with pytest.raises(InvalidRequest):
            models_page(ids, bad, lambda m: {"id": m})


def test_anthropic_rate_limit_headers_name_each_budget_and_the_wait() -> None:
    lim = RateLimiter(rpm=2, tpm=None, window_s=60.0, itpm=1000, otpm=100)
    body = {"messages": [{"role": "user", "content": "abcd" * 10}], "max_tokens": 40}
    first = dict(anthropic_headers(lim.admit("k", body, now=0.0), now_s=1_800_000_000.0))
    assert first[b"anthropic-ratelimit-requests-remaining"] == b"1"
    assert first[b"anthropic-ratelimit-input-tokens-remaining"] == b"990"
    assert first[b"anthropic-ratelimit-output-tokens-remaining"] == b"60"
    assert first[b"anthropic-ratelimit-output-tokens-reset"] == b"2027-01-15T08:00:24Z"
    assert b"retry-after" not in first
    lim.admit("k", body, now=0.0)
    refused = lim.admit("k", body, now=0.0)
    assert not refused.ok and refused.kind == "requests"
    assert dict(anthropic_headers(refused, now_s=0.0))[b"retry-after"] == b"30"


# -- the wire -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def keyed() -> Iterator[RefServer]:
    srv = start_ref_server("--api-key", "sk-ant-k")
    yield srv
    stop_ref_server(srv)


def _post(server: RefServer, headers: dict[str, str], path: str = "/v1/messages",
          body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(server.url + path, json=BASE if body is None else body, headers=headers, timeout=30)


def test_the_version_header_and_the_key_are_required(keyed: RefServer) -> None:
    r = _post(keyed, {"x-api-key": "sk-ant-k"})
    assert r.status_code == 400
    assert r.json() == {"type": "error", "request_id": r.headers["request-id"], "error": {
        "type": "invalid_request_error", "message": "anthropic-version: header is required"}}
    r = _post(keyed, {"anthropic-version": "2023-06-01"})
    assert r.status_code == 401 and r.json()["error"] == {"type": "authentication_error",
                                                          "message": "x-api-key header is required"}
    r = _post(keyed, {"anthropic-version": "2023-06-01", "authorization": "Bearer sk-ant-k"})
    assert r.status_code == 200 and r.json()["type"] == "message"  # auth_token's header works too


def test_wire_errors_keep_anthropics_shape(keyed: RefServer) -> None:
    ok = {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-k"}
    r = httpx.post(keyed.url + "/v1/messages", content=b"{not json", headers={**ok, "content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.get(keyed.url + "/v1/messages", headers=ok)
    assert r.status_code == 405 and r.json()["type"] == "error"
    r = httpx.post(keyed.url + "/v1/messages/batches", json={}, headers=ok)
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    r = httpx.post(keyed.url + "/v1/messages", content=b"x" * (33 * 1024 * 1024), headers=ok)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
    r = _post(keyed, ok, body={**BASE, "messages": [{"role": "user", "content": "word " * 5000}]})
    assert r.status_code == 200 and r.json()["usage"]["input_tokens"] == count_tokens("user: " + "word " * 5000)
