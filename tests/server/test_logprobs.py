"""``logprobs`` / ``top_logprobs`` on the reference server, read by the official ``openai`` client
(and by llmclient's ``OpenAI`` and ``AsyncOpenAI`` (``drive``), which must give the same numbers,
over JSON and protobuf)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob, TopLogprob

import llmclient
from tests._both import Drive

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Tell me about the sea."}]
CHAT: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "max_tokens": 24, "seed": 11}


def _client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)


def _dump(entries: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump() for e in entries]


def _check_entries(entries: list[ChatCompletionTokenLogprob], top: int) -> None:
    """What OpenAI promises of each entry: its bytes, top alternatives sorted, sampled included."""
    for e in entries:
        assert isinstance(e, ChatCompletionTokenLogprob)
        assert e.bytes == list(e.token.encode("utf-8"))
        assert e.logprob <= 0
        assert len(e.top_logprobs) == top
        if top:
            assert all(isinstance(t, TopLogprob) for t in e.top_logprobs)
            assert (e.top_logprobs[0].token, e.top_logprobs[0].logprob) == (e.token, e.logprob)
            lps = [t.logprob for t in e.top_logprobs]
            assert lps == sorted(lps, reverse=True) and all(lp <= 0 for lp in lps)
            assert len({t.token for t in e.top_logprobs}) == top
            assert all(t.bytes == list(t.token.encode("utf-8")) for t in e.top_logprobs)


def test_chat_logprobs_one_entry_per_token_in_openai_types(ref_server: Any) -> None:
    c = _client(ref_server)
    r = c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=5)
    choice = r.choices[0]
    entries = choice.logprobs.content
    assert choice.logprobs.refusal is None
    assert len(entries) == r.usage.completion_tokens == 24
    assert "".join(e.token for e in entries) == choice.message.content
    _check_entries(entries, 5)
    assert isinstance(choice.logprobs.content[0].top_logprobs[0].logprob, float)
    # Deterministic for a seed and prompt; another seed gives other tokens and numbers.
    again = c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=5)
    assert _dump(again.choices[0].logprobs.content) == _dump(entries)
    other = c.chat.completions.create(**{**CHAT, "seed": 12}, logprobs=True, top_logprobs=5)
    assert _dump(other.choices[0].logprobs.content) != _dump(entries)


def test_without_logprobs_choices_carry_null(ref_server: Any) -> None:
    c = _client(ref_server)
    assert c.chat.completions.create(**CHAT).choices[0].logprobs is None
    assert c.chat.completions.create(**CHAT, logprobs=False).choices[0].logprobs is None
    chunks = list(c.chat.completions.create(**CHAT, stream=True))
    assert all(ch.choices[0].logprobs is None for ch in chunks)
    assert c.completions.create(model=MODEL, prompt="Hello", max_tokens=4).choices[0].logprobs is None


def test_top_logprobs_zero_and_twenty(ref_server: Any) -> None:
    c = _client(ref_server)
    bare = c.chat.completions.create(**CHAT, logprobs=True)
    _check_entries(bare.choices[0].logprobs.content, 0)
    zero = c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=0)
    assert _dump(zero.choices[0].logprobs.content) == _dump(bare.choices[0].logprobs.content)
    full = c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=20)
    _check_entries(full.choices[0].logprobs.content, 20)
    # The sampled token's logprob does not depend on how many alternatives were asked for.
    assert ([e.logprob for e in full.choices[0].logprobs.content]
            == [e.logprob for e in bare.choices[0].logprobs.content])


def test_n_choices_each_carry_their_own(ref_server: Any) -> None:
    r = _client(ref_server).chat.completions.create(**CHAT, n=3, logprobs=True, top_logprobs=2)
    for choice in r.choices:
        assert "".join(e.token for e in choice.logprobs.content) == choice.message.content
        _check_entries(choice.logprobs.content, 2)
    assert _dump(r.choices[0].logprobs.content) != _dump(r.choices[1].logprobs.content)


def test_async_stream_chunks_carry_their_tokens_and_match_non_stream(ref_server: Any) -> None:
    async def main() -> tuple[Any, list[Any]]:
        async with openai.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0) as c:
            full = await c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=3)
            stream = await c.chat.completions.create(**CHAT, logprobs=True, top_logprobs=3, stream=True)
            return full, [ch async for ch in stream]

    full, chunks = asyncio.run(main())
    streamed = []
    for ch in chunks:
        choice = ch.choices[0]
        if choice.delta.content:
            entries = choice.logprobs.content
            assert "".join(e.token for e in entries) == choice.delta.content
            streamed += entries
    assert _dump(streamed) == _dump(full.choices[0].logprobs.content)


def test_sync_stream_and_async_non_stream_agree_with_a_stop_sequence(ref_server: Any) -> None:
    c = _client(ref_server)
    unstopped = c.chat.completions.create(**CHAT, logprobs=True).choices[0]
    tokens = [e.token for e in unstopped.logprobs.content]
    stop = unstopped.message.content.split()[5]
    body = {**CHAT, "stop": [stop], "logprobs": True, "top_logprobs": 1}

    async def non_stream() -> Any:
        async with openai.AsyncOpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0) as a:
            return await a.chat.completions.create(**body)

    full = asyncio.run(non_stream())
    content = full.choices[0].message.content
    assert full.choices[0].finish_reason == "stop" and stop not in content
    joined = "".join(e.token for e in full.choices[0].logprobs.content)
    # Every token whose text the content holds; the one the stop sequence cut is left out.
    entries = full.choices[0].logprobs.content
    assert [e.token for e in entries] == tokens[:len(entries)]
    assert content.startswith(joined) and tokens[len(entries)].startswith(content[len(joined):])
    chunks = list(c.chat.completions.create(**body, stream=True))
    streamed = [e for ch in chunks if ch.choices[0].logprobs for e in ch.choices[0].logprobs.content]
    assert _dump(streamed) == _dump(full.choices[0].logprobs.content)


def test_tool_calls_and_json_documents(ref_server: Any) -> None:
    c = _client(ref_server)
    tools: Any = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    r = c.chat.completions.create(**CHAT, tools=tools, tool_choice="required", logprobs=True)
    assert r.choices[0].message.tool_calls and r.choices[0].logprobs.content is None
    doc = c.chat.completions.create(**CHAT, response_format={"type": "json_object"}, logprobs=True,
                                    top_logprobs=2)
    content = doc.choices[0].message.content
    json.loads(content)
    assert "".join(e.token for e in doc.choices[0].logprobs.content) == content
    _check_entries(doc.choices[0].logprobs.content, 2)


@pytest.mark.parametrize(("extra", "param"), [
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"logprobs": False, "top_logprobs": 3}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": 2.5}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": "3"}, "top_logprobs"),
    ({"logprobs": "yes"}, "logprobs"),
    ({"logprobs": 1}, "logprobs"),
])
def test_bad_chat_logprobs_are_400_naming_the_field(ref_server: Any, extra: dict[str, Any],
                                                    param: str) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        _client(ref_server).chat.completions.create(**CHAT, extra_body=extra)
    error: Any = bad.value.body
    assert bad.value.status_code == 400
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert f"'{param}'" in error["message"]


@pytest.mark.parametrize("value", [6, -1, True, 1.5, "2"])
def test_bad_completion_logprobs_are_400_naming_the_field(ref_server: Any, value: Any) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        _client(ref_server).completions.create(model=MODEL, prompt="Hi", max_tokens=3,
                                               extra_body={"logprobs": value})
    error: Any = bad.value.body
    assert bad.value.status_code == 400 and error["param"] == "logprobs"
    assert "'logprobs'" in error["message"]


def test_completions_legacy_shape(ref_server: Any) -> None:
    c = _client(ref_server)
    r = c.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=12, seed=5, logprobs=3)
    choice = r.choices[0]
    lp: Any = choice.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 12
    assert "".join(lp.tokens) == choice.text
    assert lp.text_offset == [choice.text.index(t, at) for t, at in zip(lp.tokens, lp.text_offset, strict=True)]
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[0] == 0
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert logprob <= 0 and len(top) == 3 and top[token] == logprob == max(top.values())
    streamed = list(c.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=12, seed=5,
                                         logprobs=3, stream=True))
    parts: list[Any] = [ch.choices[0].logprobs for ch in streamed if ch.choices[0].text]
    assert [t for p in parts for t in p.tokens] == lp.tokens
    assert [v for p in parts for v in p.token_logprobs] == lp.token_logprobs
    assert [o for p in parts for o in p.text_offset] == lp.text_offset


def test_completions_echo_puts_the_prompt_tokens_first(ref_server: Any) -> None:
    c = _client(ref_server)
    prompt = "Once upon a time, there"
    plain = c.completions.create(model=MODEL, prompt=prompt, max_tokens=6, seed=5, logprobs=0)
    echoed = c.completions.create(model=MODEL, prompt=prompt, max_tokens=6, seed=5, logprobs=0, echo=True)
    lp: Any = echoed.choices[0].logprobs
    plain_lp: Any = plain.choices[0].logprobs
    assert lp.tokens[:6] == ["Once", " upon", " a", " time", ",", " there"]
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(v <= 0 for v in lp.token_logprobs[1:]) and all(t == {} for t in lp.top_logprobs[1:])
    assert lp.tokens[6:] == plain_lp.tokens
    assert lp.token_logprobs[6:] == plain_lp.token_logprobs
    assert lp.text_offset[6:] == [len(prompt) + o for o in plain_lp.text_offset]
    assert all(echoed.choices[0].text.startswith(t, o) for t, o in zip(lp.tokens, lp.text_offset, strict=True))


def _numbers(logprobs: Any) -> list[tuple[str, float, list[int], list[tuple[str, float]]]]:
    """A choice's logprobs read through attributes (both clients' objects allow it)."""
    return [(e.token, e.logprob, list(e.bytes), [(t.token, t.logprob) for t in e.top_logprobs])
            for e in logprobs.content]


@pytest.mark.parametrize("wire", ["json", "protobuf"])
def test_llmclient_gives_the_official_clients_logprobs(drive: Drive, ref_server: Any, wire: str) -> None:
    body = {**CHAT, "logprobs": True, "top_logprobs": 4}
    want = _client(ref_server).chat.completions.create(**body)
    ours = drive.client(llmclient, base_url=ref_server.base_url, api_key="k", wire=wire)
    got = drive(ours.chat.completions.create(**body))
    assert got.timings.wire == wire
    assert _numbers(got.choices[0].logprobs) == _numbers(want.choices[0].logprobs)
    assert got.choices[0].logprobs.refusal is None
    chunks = drive.iterate(drive(ours.chat.completions.create(**body, stream=True)))
    streamed = [e for ch in chunks if ch.choices and ch.choices[0].logprobs
                for e in _numbers(ch.choices[0].logprobs)]
    assert streamed == _numbers(want.choices[0].logprobs)
