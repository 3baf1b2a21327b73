"""The body's wire and coding adapt to what the origin reads, without failing a call.

Against the reference server (which reads protobuf and zstd/gzip bodies) and against the
fake server, which, like vLLM or llama.cpp, reads only plain JSON; through ``OpenAI`` and
``AsyncOpenAI`` (``drive``: each test runs on both).
"""

from __future__ import annotations

from typing import Any

import pytest

from llmclient.wire.compression import MIN_COMPRESS_BYTES, supported_encodings
from tests._both import Drive

from .fakeserver import HypercornServer

LONG = " ".join(f"word{i}" for i in range(800))  # ~7 KB of prompt: worth compressing
CHAT = {"model": "gpt-4o-mini", "temperature": 0, "max_tokens": 8}


def _chat(content: str) -> dict[str, Any]:
    return {**CHAT, "messages": [{"role": "user", "content": content}]}


def test_big_bodies_are_compressed_once_the_origin_says_it_reads_a_coding(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0)
    first = drive(client.chat.completions.create(**_chat(LONG)))
    assert first.timings.request_encoding is None  # nothing known of the origin yet
    second = drive(client.chat.completions.create(**_chat(LONG)))
    assert second.timings.request_encoding == supported_encodings()[0]
    assert second.timings.bytes_sent < len(LONG) // 2
    assert second.choices[0].message.content == first.choices[0].message.content
    small = drive(client.chat.completions.create(**_chat("hi")))
    assert small.timings.request_encoding is None  # below MIN_COMPRESS_BYTES
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       drive.iterate(drive(client.chat.completions.create(**_chat(LONG), stream=True)))
                       if c.choices)
    assert streamed == first.choices[0].message.content


def test_compress_false_sends_bodies_as_they_are(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", compress=False)
    drive(client.models.list())
    reply = drive(client.chat.completions.create(**_chat(LONG)))
    assert reply.timings.request_encoding is None and reply.timings.bytes_sent > len(LONG)
    assert drive(client.with_options(timeout=5).chat.completions.create(
        **_chat(LONG))).timings.request_encoding is None


def test_protobuf_refused_by_a_json_only_server_is_resent_as_json(drive: Drive, fake: HypercornServer) -> None:
    base = fake.base_url
    client = drive.client(base_url=base, api_key="k", max_retries=0, wire="protobuf")
    before = len(fake.app.refused)
    reply = drive(client.chat.completions.create(**_chat("hello")))
    assert reply.choices[0].message.content
    assert reply.timings.wire == "json"
    assert fake.app.refused[before:] == [("application/x-protobuf", None)]
    drive(client.chat.completions.create(**_chat("again")))
    assert len(fake.app.refused) == before + 1  # remembered: JSON from then on


def test_a_coding_claimed_then_refused_is_resent_plain_and_dropped(drive: Drive, fake: HypercornServer) -> None:
    base = fake.base_url
    claim = {"x-test-fault": "claim_gzip"}
    assert len(LONG) > MIN_COMPRESS_BYTES
    client = drive.client(base_url=base, api_key="k", max_retries=0)
    drive(client.chat.completions.create(**_chat("hi"), extra_headers=claim))
    before = len(fake.app.refused)
    reply = drive(client.chat.completions.create(**_chat(LONG), extra_headers=claim))
    assert reply.timings.request_encoding is None
    assert fake.app.refused[before:] == [("application/json", "gzip")]
    assert fake.app.last("/chat/completions").body["messages"][0]["content"] == LONG
    drive(client.chat.completions.create(**_chat(LONG)))
    assert len(fake.app.refused) == before + 1


@pytest.mark.parametrize("wire", ["json", "protobuf"])
def test_compressed_and_protobuf_answers_match_plain_json(drive: Drive, ref_server: Any, wire: str) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", wire=wire)
    drive(client.models.list())  # learn the origin's codings
    reply = drive(client.chat.completions.create(**_chat(LONG)))
    assert reply.timings.request_encoding is not None and reply.timings.wire == wire
    plain = drive.client(base_url=ref_server.base_url, api_key="k")
    assert drive(plain.chat.completions.create(**_chat(LONG))).choices[0].message.content == \
        reply.choices[0].message.content
