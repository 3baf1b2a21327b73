"""Shipped profiles load, say where their figures come from, and their cost model hits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.server.profile_check import main, percentile, virtual_sweep
from benchmarks.server.profiles import PROFILE_DIR, Profile, list_profiles, load_profile

SHIPPED = ("a100-175b", "h100-8b", "h100-8b-lean", "h100x8-70b", "tiny-fast", "zero")


def test_the_issue_profiles_ship() -> None:
    assert set(SHIPPED) <= set(list_profiles())


@pytest.mark.parametrize("name", SHIPPED)
def test_each_profile_loads_and_names_its_calibration(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    assert len(profile.calibrated_from) > 40
    assert profile.block_size * profile.kv_blocks >= profile.context_window


@pytest.mark.parametrize("name", ["h100-8b", "h100-8b-lean", "h100x8-70b"])
def test_low_load_model_matches_the_target_figures(name: str) -> None:
    p = load_profile(name)
    assert p.predicted_ttft_ms(256) == pytest.approx(p.targets["ttft_ms_256"], rel=0.01)
    assert p.predicted_tpot_ms(1) == pytest.approx(p.targets["tpot_ms"], rel=0.01)


def test_zero_profile_costs_nothing() -> None:
    p = load_profile("zero")
    assert p.cold_start_s == 0 and p.predicted_ttft_ms(4096) == 0 and p.predicted_tpot_ms(64) == 0


def test_a100_sweep_on_a_virtual_clock_shows_the_knee() -> None:
    p = load_profile("a100-175b")
    assert p.cold_start_s == 8.3
    low, near, past = virtual_sweep(p, [13.0, 30.0, 45.0], duration_s=10.0)
    assert 3.5 <= low.mean_batch <= 4.5
    assert low.p99_ms == pytest.approx(p.targets["p99_ms_at_batch4"], rel=0.1)
    assert past.p99_ms > 3 * near.p99_ms          # beyond the knee latency runs away


def test_unknown_profile_lists_the_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown profile 'nope'.*h100-8b"):
        load_profile("nope")


def test_bad_profile_files_name_the_problem(tmp_path: Path) -> None:
    good = json.loads((PROFILE_DIR / "tiny-fast.json").read_text())
    cases = {
        "extra.json": ({**good, "turbo": True}, r"unknown field.*turbo"),
        "missing.json": ({k: v for k, v in good.items() if k != "kv_blocks"}, r"missing field.*kv_blocks"),
        "negative.json": ({**good, "prefill_ms_per_token": -1}, "prefill_ms_per_token must be"),
        "zero.json": ({**good, "max_batch": 0}, "max_batch must be at least 1"),
    }
    for fname, (data, message) in cases.items():
        path = tmp_path / fname
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=message):
            load_profile(path)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="cannot read"):
        load_profile(tmp_path / "broken.json")


def test_step_cost_grows_with_batch_and_quadratically_with_prompt() -> None:
    p = Profile(name="x", model="x", device="x", calibrated_from="test", context_window=8192,
                max_batch=8, kv_blocks=1024, prefill_ms_per_token=1.0,
                prefill_attn_ms_per_token_kctx=1.0, decode_base_ms=5.0, decode_ms_per_seq=2.0)
    assert p.decode_ms(0) == 0 and p.decode_ms(1) == 7.0 and p.decode_ms(4) == 13.0
    assert p.prefill_ms([(0, 1000)]) == 1000 + 1000 * 500 / 1000
    assert p.prefill_ms([(1000, 1000)]) - p.prefill_ms([(0, 1000)]) == 1000.0


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 101))
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50, 99, 100)


def test_profile_check_cli_runs_a_virtual_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--profile", "tiny-fast", "--sweep", "--virtual", "--rates", "20,5000",
                 "--duration", "1", "--prompt-tokens", "16", "--max-tokens", "4"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[0] for row in rows] == ["20.0", "5000.0"]
    assert int(rows[1][2]) > 0                    # 5000 req/s overflows tiny-fast's queue: 429s


def test_profile_check_rejects_unknown_profiles() -> None:
    with pytest.raises(SystemExit):
        main(["--profile", "nope"])
