"""Response body compression end to end: the reference server compresses whole bodies of 1 KiB
and more with the best coding the request's Accept-Encoding lists; llmclient asks for it on
whole bodies (never on streams), undoes it through httpx, and counts the bytes as they were
on the wire. The llmclient tests run through ``OpenAI`` and ``AsyncOpenAI`` (``drive``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llmclient.wire.compression import (
    MIN_COMPRESS_BYTES,
    accept_encoding,
    decompress,
    supported_encodings,
)
from llmclient.wire.protobuf import PROTOBUF_CODEC, PROTOBUF_CONTENT_TYPE
from tests._both import Drive
from tests.conftest import start_ref_server, stop_ref_server

EMB = {"model": "text-embedding-3-small", "input": ["the cat sat on the mat", "a dog ran"]}
SMALL_CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
              "max_tokens": 4, "seed": 1}


def _raw(ref_server: Any, path: str, body: dict[str, Any], coding: str, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=ref_server.base_url, timeout=30) as http:
        req = http.build_request("POST", path, json=body,
                                 headers={"accept-encoding": coding, **headers})
        r = http.send(req, stream=True)
        r.read()  # decoded by httpx ...
        r.close()
        return r


@pytest.mark.parametrize("coding", supported_encodings())
def test_large_bodies_come_compressed_with_the_coding_asked_for(ref_server: Any, coding: str) -> None:
    r = _raw(ref_server, "/embeddings", EMB, coding)
    assert r.headers["content-encoding"] == coding
    assert r.headers["vary"].lower() == "accept-encoding"
    assert r.num_bytes_downloaded < len(r.content)  # ... from fewer bytes on the wire
    plain = _raw(ref_server, "/embeddings", EMB, "identity")
    assert "content-encoding" not in plain.headers
    assert r.json()["data"] == plain.json()["data"]


def test_protobuf_bodies_are_compressed_too(ref_server: Any) -> None:
    coding = supported_encodings()[0]
    with httpx.Client(base_url=ref_server.base_url, timeout=30) as http:
        r = http.post("/embeddings", content=PROTOBUF_CODEC.encode("/embeddings", EMB),
                      headers={"content-type": PROTOBUF_CONTENT_TYPE, "accept": PROTOBUF_CONTENT_TYPE,
                               "accept-encoding": coding})
    assert r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    assert r.headers["content-encoding"] == coding
    assert len(PROTOBUF_CODEC.decode("/embeddings", r.content, PROTOBUF_CONTENT_TYPE)["data"]) == 2


def test_small_bodies_streams_and_silent_clients_go_plain(ref_server: Any) -> None:
    small = _raw(ref_server, "/chat/completions", SMALL_CHAT, "zstd, gzip")
    assert len(small.content) < MIN_COMPRESS_BYTES and "content-encoding" not in small.headers
    stream = _raw(ref_server, "/chat/completions", {**SMALL_CHAT, "stream": True, "max_tokens": 200},
                  "zstd, gzip")
    assert len(stream.content) > MIN_COMPRESS_BYTES and "content-encoding" not in stream.headers
    refused = _raw(ref_server, "/embeddings", EMB, "gzip;q=0, zstd;q=0")
    assert "content-encoding" not in refused.headers


def test_the_server_can_be_told_not_to_compress() -> None:
    srv = start_ref_server("--no-compress")
    try:
        r = _raw(srv, "/embeddings", EMB, "zstd, gzip")
        assert "content-encoding" not in r.headers and r.json()["data"]
    finally:
        stop_ref_server(srv)


@pytest.mark.parametrize("wire", ["auto", "protobuf"])
def test_llmclient_asks_for_compressed_whole_bodies_and_counts_wire_bytes(
        drive: Drive, ref_server: Any, wire: str) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", wire=wire)
    raw = drive(client.embeddings.with_raw_response.create(**EMB))
    r = drive(raw.parse())
    assert raw.headers["content-encoding"] == supported_encodings()[0]
    assert [len(d.embedding) for d in r.data] == [1536, 1536]
    decoded = len(decompress(_body_bytes(ref_server, supported_encodings()[0]), supported_encodings()[0]))
    assert r.timings.bytes_received < decoded  # wire bytes, not the decoded size


def _body_bytes(ref_server: Any, coding: str) -> bytes:
    with httpx.Client(base_url=ref_server.base_url, timeout=30) as http, \
            http.stream("POST", "/embeddings", json=EMB, headers={"accept-encoding": coding}) as r:
        return b"".join(r.iter_raw())


def test_llmclient_streams_ask_for_identity_and_callers_may_choose(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    call = client._build_call("POST", "/chat/completions", SMALL_CHAT, stream=True)
    assert call.headers["accept-encoding"] == "identity"
    call = client._build_call("POST", "/embeddings", EMB)
    assert call.headers["accept-encoding"] == accept_encoding()
    call = client._build_call("POST", "/embeddings", EMB, extra_headers={"Accept-Encoding": "gzip"})
    assert call.headers["accept-encoding"] == "gzip"
    raw = drive(client.embeddings.with_raw_response.create(**EMB, extra_headers={"accept-encoding": "gzip"}))
    assert raw.headers["content-encoding"] == "gzip" and len(drive(raw.parse()).data) == 2
    chunks = drive.iterate(drive(client.chat.completions.create(**{**SMALL_CHAT, "max_tokens": 300}, stream=True)))
    assert chunks and chunks[-1].choices[0].finish_reason


def test_reference_embeddings_are_dense_and_similar_texts_are_close(drive: Drive, ref_server: Any) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k")
    vecs = [d.embedding for d in drive(client.embeddings.create(
        model="text-embedding-3-small",
        input=["the cat sat on the mat", "the cat sat on a mat", "stock prices fell sharply"],
    )).data]
    assert sum(1 for v in vecs[0] if v != 0.0) > 0.95 * len(vecs[0])  # dense, as real models give

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(vecs[0], vecs[1]) > cos(vecs[0], vecs[2]) + 0.3
