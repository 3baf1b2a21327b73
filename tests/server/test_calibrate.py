import json

import pytest

from benchmarks.server.calibrate import build_profile, fit_profile, solve_least_squares
from benchmarks.server.profiles import load_profile


def test_least_squares_recovers_known_coefficients():
    rows = [[1.0, x, x * x] for x in (1.0, 2.0, 3.0, 5.0, 8.0)]
    ys = [2 + 3 * r[1] + 0.5 * r[2] for r in rows]
    assert solve_least_squares(rows, ys) == pytest.approx([2, 3, 0.5])


def test_singular_measurements_are_refused():
    with pytest.raises(ValueError, match="singular"):
        solve_least_squares([[1.0, 2.0], [2.0, 4.0]], [1.0, 2.0])


def test_fit_profile_from_exact_cost_model():
    prefill = {n: 1.5 + 0.02 * n + 0.001 * n * n / 2000 for n in (64, 128, 256, 512, 1024)}
    decode = {b: 7.0 + 0.3 * b for b in (1, 2, 4, 8)}
    fit = fit_profile(prefill, decode)
    assert fit["step_overhead_ms"] == pytest.approx(1.5)
    assert fit["prefill_ms_per_token"] == pytest.approx(0.02)
    assert fit["decode_base_ms"] == pytest.approx(7.0) and fit["decode_ms_per_seq"] == pytest.approx(0.3)


def test_built_profile_loads_as_a_sim_profile(tmp_path):
    m = {
        "device": "cpu", "config": "tiny", "params_b": 0.002, "dtype": "torch.float32", "torch": "x",
        "context_window": 2048, "kv_bytes_per_token": 1024, "free_bytes_after_load": None,
        "prefill_ms": {64: 2.0, 128: 3.0, 256: 5.0, 512: 9.5},
        "decode_step_ms_at_ctx256": {1: 1.0, 2: 1.2, 4: 1.6},
    }
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(build_profile("measured", m, max_batch=8)))
    profile = load_profile(str(path))
    assert profile.max_batch == 8 and profile.kv_blocks == 8 * 2048 // 16
    assert "calibrate" in profile.calibrated_from and profile.targets["tpot_ms"] > 0


def _measured(engine_ttft: float, engine_tpot: float) -> dict:
    return {
        "device": "cpu", "config": "tiny", "params_b": 0.002, "dtype": "torch.float32", "torch": "x",
        "context_window": 2048, "kv_bytes_per_token": 1024, "free_bytes_after_load": None,
        "prefill_ms": {n: 1.5 + 0.02 * n for n in (64, 128, 256, 512)},
        "decode_step_ms_at_ctx256": {b: 7.0 + 0.3 * b for b in (1, 2, 4, 8)},
        "engine_ttft_ms": engine_ttft, "engine_tpot_ms": engine_tpot,
    }


@pytest.mark.parametrize(("ttft", "tpot"), [(40.0, 25.0), (6.0, 4.0)])
def test_the_profile_reproduces_single_requests_through_the_engine(ttft: float, tpot: float) -> None:
    """Bare forward passes leave out the engine's own time: the profile is fitted so that one
    request's TTFT and TPOT in the sim are what the engine gave end to end, more or less time
    than the passes alone."""
    from benchmarks.server.calibrate import E2E_PROMPT_TOKENS

    p = build_profile("m", _measured(ttft, tpot), max_batch=8)
    sim_tpot = p["step_overhead_ms"] + p["decode_base_ms"] + p["decode_ms_per_seq"]
    n = E2E_PROMPT_TOKENS
    sim_ttft = (p["api_overhead_ms"] + p["step_overhead_ms"] + p["prefill_ms_per_token"] * n
                + p["prefill_attn_ms_per_token_kctx"] * n * n / 2000)
    assert sim_tpot == pytest.approx(tpot, rel=1e-3)
    assert sim_ttft == pytest.approx(ttft, rel=1e-3)
    assert min(p["step_overhead_ms"], p["api_overhead_ms"], p["decode_base_ms"]) >= 0
    assert f"TPOT {tpot}" in p["calibrated_from"]


def test_gpu_sweep_runs_the_torch_engine_and_the_sim_beside_it(tmp_path) -> None:
    pytest.importorskip("torch")
    from benchmarks.server.calibrate import measure
    from benchmarks.server.gpu_sweep import main as sweep_main

    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(build_profile("cpu-tiny", measure("tiny", "cpu", 2, 4), max_batch=4)))
    out = tmp_path / "sweep.json"
    assert sweep_main(["--config", "tiny", "--device", "cpu", "--max-concurrency", "2", "--prompt-tokens", "16",
                       "--output-tokens", "8", "--profile", str(profile), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [row["concurrency"] for row in result["levels"]] == [1, 2]
    assert all(row["tokens_per_s"] > 0 and row["tpot_ms_p50"] > 0 for row in result["levels"])
    assert [row["concurrency"] for row in result["sim_vs_gpu"]] == [1, 2]


def test_a_batched_decode_step_equals_each_sequence_alone() -> None:
    """The batched forward pass (one cache scatter per layer for all rows) gives each row the
    logits and cache it gets alone, at different lengths and slots."""
    torch = pytest.importorskip("torch")
    from benchmarks.server.engine.torch_model import (
        KVCache,
        build,
        forward,
        load_config,
        rope_tables,
    )

    cfg, checkpoint = load_config("tiny")
    dev = torch.device("cpu")
    net, rope = build(cfg, checkpoint, dev, torch.float32, 0), rope_tables(cfg, dev)
    batched, alone = KVCache(cfg, 4, 128, dev, torch.float32), KVCache(cfg, 4, 128, dev, torch.float32)
    gen = torch.Generator().manual_seed(3)
    lengths = {3: 11, 1: 5}
    for slot, n in lengths.items():
        prompt = torch.randint(1, cfg.vocab_size, (1, n), generator=gen)
        forward(net, batched, rope, [slot], prompt, [0])
        forward(net, alone, rope, [slot], prompt, [0])
    for _ in range(3):
        step = torch.randint(1, cfg.vocab_size, (2, 1), generator=gen)
        slots, starts = list(lengths), list(lengths.values())
        together = forward(net, batched, rope, slots, step, starts)
        for row, (slot, start) in enumerate(zip(slots, starts, strict=True)):
            one = forward(net, alone, rope, [slot], step[row:row + 1], [start])
            assert torch.allclose(together[row], one[0], atol=1e-4)
        lengths = {slot: n + 1 for slot, n in lengths.items()}
    for layer in range(cfg.num_hidden_layers):
        assert torch.allclose(batched.k[layer], alone.k[layer], atol=1e-5)
        assert torch.allclose(batched.v[layer], alone.v[layer], atol=1e-5)
