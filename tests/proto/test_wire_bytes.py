"""The wire-bytes benchmark runs, and its byte counts (not timings) meet the benchmark's targets."""

from __future__ import annotations

import random
import struct

import orjson

from benchmarks import wire_bytes
from llmclient.wire.codec import JSON_CODEC
from llmclient.wire.protobuf import PROTOBUF_CODEC, PROTOBUF_CONTENT_TYPE, encode_response


def test_benchmark_runs_and_protobuf_saves_the_bytes_it_should() -> None:
    results = wire_bytes.measure(budget_s=0.001)

    def row(scenario: str, wire: str) -> dict[str, float]:
        return next(r for r in results[scenario] if r["wire"] == wire)

    stream = row("stream_64_chunks", "protobuf frames")["response_bytes"]
    assert stream <= 0.25 * row("stream_64_chunks", "orjson (SSE)")["response_bytes"]
    ten_turn = row("ten_turn", "protobuf+zstd")["request_bytes"]
    assert ten_turn <= 0.45 * row("ten_turn", "orjson")["request_bytes"]
    emb = row("embeddings_16x1536", "protobuf+zstd")["response_bytes"]
    assert emb <= 0.31 * row("embeddings_16x1536", "orjson")["response_bytes"]
    for scenario, wire in (("short_chat", "protobuf"), ("stream_64_chunks", "orjson (SSE)")):
        timed = row(scenario, wire)
        assert timed["decode_us"] > 0 and timed["dict_us"] > 0
    lines = wire_bytes.targets(results)
    assert any(line.startswith("stream bytes") for line in lines)
    assert sum("decode + reads" in line for line in lines) == 4


def _via(wire: str, resp: dict[str, object]) -> dict[str, object]:
    if wire == "json":
        return JSON_CODEC.decode("/v1/x", orjson.dumps(resp), "application/json")
    return PROTOBUF_CODEC.decode("/v1/x", encode_response(resp), PROTOBUF_CONTENT_TYPE)


def test_every_wire_reads_the_same_values_through_the_models() -> None:
    """The decode column times the same objects and reads for every wire: they must agree."""
    _, chat = wire_bytes.short_chat(random.Random(8))
    assert wire_bytes.read_chat(_via("json", chat)) == wire_bytes.read_chat(_via("protobuf", chat))
    _, emb = wire_bytes.embeddings(random.Random(8), n=2, dim=8)
    as_json, as_pb = (wire_bytes.read_embeddings(_via(w, emb)) for w in ("json", "protobuf"))
    assert isinstance(as_json, list) and isinstance(as_pb, list)
    # JSON spells each float32 as its shortest decimal; protobuf carries the float32 itself.
    f32 = [[struct.unpack("<f", struct.pack("<f", x))[0] for x in vec] for vec in as_json]
    assert f32 == as_pb
