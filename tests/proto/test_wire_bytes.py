"""The wire-bytes benchmark runs, and its byte counts (not timings) meet issue 8's targets."""

from __future__ import annotations

from benchmarks import wire_bytes


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
    lines = wire_bytes.targets(results)
    assert any(line.startswith("stream bytes") for line in lines)
