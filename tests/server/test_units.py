"""Pure parts of the HTTP layer: vision rule, wire codec, metrics text, Server-Timing, stops."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from benchmarks.server import wire
from benchmarks.server._http import error_body, server_timing
from benchmarks.server._textstream import TextStream, tool_arguments
from benchmarks.server.engine.base import EngineStats
from benchmarks.server.metrics import GpuSample, HttpCounters, render_metrics
from benchmarks.server.tokenizer import encode
from benchmarks.server.vision import (
    ImageError,
    decode_data_url,
    high_detail_size,
    image_tokens,
    process_image,
)


@pytest.mark.parametrize("size,detail,tokens", [
    ((1024, 1024), "high", 765),     # OpenAI's worked example: 768x768, 4 tiles
    ((2048, 4096), "high", 1105),    # OpenAI's worked example: 768x1536, 6 tiles
    ((4096, 8192), "auto", 1105),
    ((300, 200), "high", 255),       # never upscaled: one tile
    ((4096, 8192), "low", 85),
])
def test_openai_high_detail_rule(size, detail, tokens):
    assert image_tokens(*size, detail) == tokens


def test_high_detail_size_fits_then_shortens():
    assert high_detail_size(2048, 4096) == (768, 1536)
    assert high_detail_size(500, 400) == (500, 400)


def _encoded(fmt: str, size=(1600, 900)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buf, fmt)
    return buf.getvalue()


def test_process_image_really_resizes():
    r = process_image(_encoded("JPEG"), "high")
    assert (r.width, r.height, r.resized_width, r.resized_height) == (1600, 900, 1365, 768)
    assert r.tokens == 85 + 170 * 3 * 2
    assert r.digest == process_image(_encoded("JPEG"), "low").digest


def test_unsupported_and_corrupt_images():
    with pytest.raises(ImageError, match="unsupported image format"):
        process_image(_encoded("BMP", (10, 10)), "high")
    with pytest.raises(ImageError, match="decoded"):
        process_image(_encoded("PNG")[:100], "high")


def test_data_url_parsing():
    raw = _encoded("PNG", (4, 4))
    assert decode_data_url("data:image/png;base64," + base64.b64encode(raw).decode()) == raw
    with pytest.raises(ImageError, match="data: URL"):
        decode_data_url("ftp://x")


def test_wire_json_round_trip_and_errors():
    body, ctype = wire.encode_response({"a": [1, 2]}, None)
    assert ctype == "application/json"
    assert wire.decode_request(body, "application/json; charset=utf-8") == {"a": [1, 2]}
    assert wire.decode_request(body, None) == {"a": [1, 2]}
    assert wire.encode_stream_chunk({"x": 1}, None) == b'data: {"x":1}\n\n'
    assert wire.stream_done(None) == b"data: [DONE]\n\n"
    with pytest.raises(wire.UnsupportedMediaType):
        wire.decode_request(body, "text/csv")
    with pytest.raises(wire.WireDecodeError):
        wire.decode_request(b"[]", None)


def test_server_timing_order_and_format():
    assert server_timing({"total": 3.0, "prefill": 1.25, "queue": 0.5}) == (
        "queue;dur=0.5, prefill;dur=1.25, total;dur=3")


def test_error_body_shape():
    assert error_body(429, "slow down", code="rate_limit_exceeded") == {"error": {
        "message": "slow down", "type": "rate_limit_exceeded", "param": None,
        "code": "rate_limit_exceeded"}}
    assert error_body(502, "x")["error"]["type"] == "server_error"


def test_metrics_gpu_series_absent_without_gpu():
    http = HttpCounters()
    http.record(200)
    http.record(503)
    stats = EngineStats(running=2, waiting=1, kv_blocks_used=5, kv_blocks_total=10,
                        prefix_cache_queries=4, prefix_cache_hits=1)
    text = render_metrics(stats, http, None, True)
    assert "llm_kv_cache_usage_ratio 0.5" in text and "llm_prefix_cache_hit_ratio 0.25" in text
    assert 'http_requests_total{status="200"} 1' in text
    assert 'http_errors_total{status="503"} 1' in text and 'http_errors_total{status="200"}' not in text
    assert "gpu_" not in text
    gpu = GpuSample(0, "NVIDIA H100", 10, 80, 42.0)
    assert 'gpu_utilization_percent{gpu="0",name="NVIDIA H100"} 42' in render_metrics(stats, http, [gpu], True)


def test_stop_sequence_split_across_steps_is_held_back():
    ids = encode("the cat sat on the mat")
    ts = TextStream(("sat on",))
    out = [ts.feed([i]) for i in ids]
    assert "".join(out) + ts.flush() == "The cat "
    assert ts.stopped


def test_tool_arguments_follow_the_schema():
    schema = {"type": "object", "properties": {"q": {"type": "string"}, "k": {"type": "integer"},
                                               "tags": {"type": "array", "items": {"type": "string"}},
                                               "mode": {"enum": ["fast", "slow"]}}}
    args = tool_arguments(schema, ["alpha", "beta"])
    assert args == {"q": "alpha", "k": 4, "tags": ["alpha"], "mode": "fast"}
    assert tool_arguments(schema, ["alpha", "beta"]) == args


def test_read_body_enforces_the_size_limit():
    import asyncio

    from benchmarks.server._http import BodyTooLarge, read_body

    def receiver(chunks: list[bytes]):
        messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                    for i, c in enumerate(chunks)]

        async def receive():
            return messages.pop(0)
        return receive

    assert asyncio.run(read_body(receiver([b"ab", b"cd"]), 4)) == b"abcd"
    with pytest.raises(BodyTooLarge, match="exceeds 3 bytes"):
        asyncio.run(read_body(receiver([b"ab", b"cd"]), 3))
