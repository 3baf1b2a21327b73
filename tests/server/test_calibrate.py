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
