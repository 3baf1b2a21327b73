"""The protobuf wire end to end against the reference server (a real subprocess).

The server's answers are read with plain httpx; the client test runs through ``OpenAI`` and
``AsyncOpenAI`` (``drive``: it runs on both).
"""

from __future__ import annotations

import struct
from typing import Any

import httpx
import pytest

from llmclient._errors import IncompleteStreamError, MalformedResponseError
from llmclient.wire.compression import compress, supported_encodings
from llmclient.wire.protobuf import PROTOBUF_CODEC, PROTOBUF_CONTENT_TYPE
from tests._both import Drive

PB_HEADERS = {"content-type": PROTOBUF_CONTENT_TYPE, "accept": PROTOBUF_CODEC.accept}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello there"}],
        "max_tokens": 8, "seed": 3, "temperature": 0}


@pytest.fixture(scope="module")
def http(ref_server: Any) -> Any:
    with httpx.Client(base_url=ref_server.base_url, timeout=30) as client:
        yield client


def _pb_post(http: httpx.Client, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return http.post(path, content=PROTOBUF_CODEC.encode(path, body), headers={**PB_HEADERS, **headers})


def _decode(r: httpx.Response, path: str) -> dict[str, Any]:
    return PROTOBUF_CODEC.decode(path, r.content, r.headers["content-type"])


def _stable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in ("id", "created")}


def _stream(r: httpx.Response) -> list[dict[str, Any]]:
    dec = PROTOBUF_CODEC.stream_decoder(r.headers["content-type"])
    out = dec.feed(r.content)
    dec.close()
    return [_stable(c) for c in out]


def test_chat_answer_in_protobuf_equals_the_json_answer(http: httpx.Client) -> None:
    r = _pb_post(http, "/chat/completions", CHAT)
    assert r.status_code == 200 and r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    assert _stable(_decode(r, "/chat/completions")) == _stable(http.post("/chat/completions", json=CHAT).json())


def test_text_completion_in_protobuf_equals_the_json_answer(http: httpx.Client) -> None:
    body = {"model": "gpt-4o-mini", "prompt": "Once upon a time", "max_tokens": 6, "seed": 2}
    r = _pb_post(http, "/completions", body)
    assert r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    assert _stable(_decode(r, "/completions")) == _stable(http.post("/completions", json=body).json())


@pytest.mark.parametrize("chat", [True, False])
def test_streams_in_protobuf_equal_the_sse_chunks(http: httpx.Client, chat: bool) -> None:
    path = "/chat/completions" if chat else "/completions"
    body = {**(CHAT if chat else {"model": "gpt-4o-mini", "prompt": "Hi", "max_tokens": 8, "seed": 3}),
            "stream": True, "stream_options": {"include_usage": True}}
    r = _pb_post(http, path, body)
    assert r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    sse = http.post(path, json=body)
    assert sse.headers["content-type"].startswith("text/event-stream")
    expected = PROTOBUF_CODEC.stream_decoder(sse.headers["content-type"]).feed(sse.content)
    got = _stream(r)
    assert got == [_stable(c) for c in expected] and len(got) > 3
    assert len(r.content) * 4 < len(sse.content)


def test_embeddings_in_protobuf_equal_the_json_at_float32(http: httpx.Client) -> None:
    body = {"model": "text-embedding-3-small", "input": ["a cat", "a dog"], "encoding_format": "float"}
    got = _decode(_pb_post(http, "/embeddings", body), "/embeddings")
    want = http.post("/embeddings", json=body).json()
    for item in want["data"]:
        item["embedding"] = [struct.unpack("<f", struct.pack("<f", x))[0] for x in item["embedding"]]
    assert got == want


def test_models_in_protobuf(http: httpx.Client) -> None:
    r = http.get("/models", headers={"accept": PROTOBUF_CODEC.accept})
    assert r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    assert _decode(r, "/models") == http.get("/models").json()


def test_every_response_advertises_protobuf_and_codings(http: httpx.Client) -> None:
    for r in (http.get("/models"), http.post("/chat/completions", json={"model": "nope"})):
        assert "protobuf" in r.headers["x-llm-wire"]
        assert PROTOBUF_CONTENT_TYPE in r.headers["accept-post"]
        assert set(supported_encodings()) <= {c.strip() for c in r.headers["accept-encoding"].split(",")}


@pytest.mark.parametrize("coding", supported_encodings())
def test_compressed_request_bodies_are_read(http: httpx.Client, coding: str) -> None:
    data = compress(PROTOBUF_CODEC.encode("/chat/completions", CHAT), coding)
    r = http.post("/chat/completions", content=data, headers={**PB_HEADERS, "content-encoding": coding})
    assert r.status_code == 200, r.text


def test_bad_bodies_get_clear_4xx_answers(http: httpx.Client) -> None:
    r = http.post("/chat/completions", content=b"\xff\xff\xff", headers=PB_HEADERS)
    assert r.status_code == 400 and "protobuf" in r.json()["error"]["message"]
    r = http.post("/chat/completions", content=b"x", headers={**PB_HEADERS, "content-encoding": "br"})
    assert r.status_code == 415
    r = http.post("/chat/completions", content=b"x", headers={**PB_HEADERS, "content-encoding": "gzip"})
    assert r.status_code == 400 and "gzip" in r.json()["error"]["message"]
    r = http.post("/chat/completions", content=b"<x/>", headers={"content-type": "application/xml"})
    assert r.status_code == 415


@pytest.mark.parametrize("coding", supported_encodings())
def test_a_body_that_decompresses_past_the_limit_is_413_like_a_plain_one(http: httpx.Client, coding: str) -> None:
    """33 MB of JSON compresses to a few KB; decompressed it is past the 32 MiB body limit, and
    the answer is the plain body's 413, not a 400 that reads as a malformed request."""
    big = b'{"model": "sim-zero", "messages": [{"role": "user", "content": "' + b"a" * (33 << 20) + b'"}]}'
    plain = http.post("/chat/completions", content=big, headers={"content-type": "application/json"})
    # The server stopped reading the plain body at the limit: that connection ends with its
    # answer, and says so, so the next call goes to a new one (plain httpx re-sends nothing, and
    # two full runs failed here with "Server disconnected" before the server said it).
    assert plain.headers.get("connection") == "close"
    packed = http.post("/chat/completions", content=compress(big, coding),
                       headers={"content-type": "application/json", "content-encoding": coding})
    assert plain.status_code == packed.status_code == 413, (plain.text, packed.text)
    assert packed.headers.get("connection") != "close"  # read whole: the connection stays
    assert "decompresses to more than" in packed.json()["error"]["message"]


def test_the_client_sees_the_same_413_either_way(ref_server: Any) -> None:
    """llmclient compresses the big body (zstd); the official client sends it plain: both get
    413 (``APIStatusError``), not one a 400 (``BadRequestError``)."""
    import openai

    import llmclient

    text = "lorem ipsum " * (3 << 20)  # 36 MB of prompt
    msgs = [{"role": "user", "content": text}]
    short = [{"role": "user", "content": "hi"}]
    errors = []
    for module in (llmclient, openai):
        client = module.OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="sim-zero", messages=short, max_tokens=2)  # learns zstd
        with pytest.raises(module.APIStatusError) as info:
            client.chat.completions.create(model="sim-zero", messages=msgs, max_tokens=2)
        errors.append(info.value)
    assert [e.status_code for e in errors] == [413, 413]
    assert errors[0].timings.request_encoding in ("zstd", "gzip")  # llmclient's went compressed
    assert type(errors[0]).__name__ == type(errors[1]).__name__


@pytest.mark.parametrize("wire", ["protobuf", "auto"])
def test_the_client_gives_the_same_objects_over_protobuf(drive: Drive, ref_server: Any, wire: str) -> None:
    with drive.enter(drive.client(base_url=ref_server.base_url, api_key="k")) as j, \
         drive.enter(drive.client(base_url=ref_server.base_url, api_key="k", wire=wire)) as p:
        for _ in range(2):  # "auto" learns on the first call
            a = drive(j.chat.completions.create(**CHAT))
            b = drive(p.chat.completions.create(**CHAT))
        assert b.timings.wire == "protobuf"
        assert _stable(a.model_dump()) == _stable(b.model_dump())
        sa = [_stable(c.model_dump()) for c in drive.iterate(drive(j.chat.completions.create(**CHAT, stream=True)))]
        sb = [_stable(c.model_dump()) for c in drive.iterate(drive(p.chat.completions.create(**CHAT, stream=True)))]
        assert sa == sb and len(sa) > 3


def test_a_stream_cut_by_the_server_is_incomplete(http: httpx.Client) -> None:
    r = _pb_post(http, "/chat/completions", {**CHAT, "stream": True}, **{"x-fault": "cut_after=3"})
    assert r.headers["content-type"] == PROTOBUF_CONTENT_TYPE
    dec = PROTOBUF_CODEC.stream_decoder(r.headers["content-type"])
    assert len(dec.feed(r.content)) == 3
    with pytest.raises(IncompleteStreamError):
        dec.close()


def test_a_mangled_stream_frame_is_a_decode_error(http: httpx.Client) -> None:
    r = _pb_post(http, "/chat/completions", {**CHAT, "max_tokens": 30, "stream": True},
                 **{"x-fault": "malformed_sse"})
    dec = PROTOBUF_CODEC.stream_decoder(r.headers["content-type"])
    with pytest.raises((MalformedResponseError, IncompleteStreamError)):
        dec.feed(r.content)
        dec.close()
