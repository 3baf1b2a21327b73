"""benchmarks.client_overhead: the ratios it reports and its ``--instructions`` mode, whose
valgrind runs are real (a worker process under callgrind against the reference server)."""

from __future__ import annotations

import pytest

from benchmarks import client_overhead as co
from tests.conftest import RefServer


def test_per_call_instructions_is_the_difference_over_the_extra_calls() -> None:
    assert co.per_call_instructions(1_000_000, 3_000_000, 10, 30) == pytest.approx(100_000)


def test_per_call_instructions_refuses_runs_that_cannot_be_compared() -> None:
    with pytest.raises(ValueError, match="more calls"):
        co.per_call_instructions(1_000, 2_000, 30, 30)
    with pytest.raises(ValueError, match="fewer instructions"):
        co.per_call_instructions(2_000, 1_000, 10, 30)


def _rows(field: str, values: dict[str, tuple[float, float]]) -> dict[str, dict[str, float]]:
    return {kind: {f"{field}call": call, f"{field}stream": stream} for kind, (call, stream) in values.items()}


def test_otel_ratios_in_cpu_and_in_instructions() -> None:
    values = {"llmclient": (1.0, 4.0), "llmclient-otel": (1.5, 4.4), "llmclient-sdk": (1.4, 4.6)}
    cpu = co.otel_ratios(_rows("cpu_ms_", values))
    instr = co.otel_ratios(_rows("instr_", values), "instr")
    assert cpu["otel_cpu_call_vs_llmclient"] == pytest.approx(1.5)
    assert instr["otel_instr_call_vs_llmclient"] == pytest.approx(1.5)
    assert instr["sdk_floor_instr_stream_vs_llmclient"] == pytest.approx(1.15)
    assert instr["otel_instr_stream_vs_sdk_floor"] == pytest.approx(4.4 / 4.6)


def test_every_reported_ratio_has_a_target() -> None:
    # table() looks each ratio up in TARGETS: a ratio without one would fail the run at its end.
    values = {kind: (1.0, 2.0) for kind in ("llmclient", "openai", *co.OTEL_KINDS)}
    reported = co.instruction_ratios(_rows("instr_", values)) | co.otel_ratios(_rows("cpu_ms_", values))
    assert {"instr_call_vs_openai", "otel_sampled_instr_call_vs_llmclient"} <= reported.keys()
    assert reported.keys() <= co.TARGETS.keys()
    assert co.TARGETS["instr_call_vs_openai"] == co.TARGETS["cpu_call_vs_openai"]
    rows = {kind: {"instr_call": 1.0, "instr_stream": 2.0} for kind in values}
    text = co.table(rows, co.instruction_ratios(rows))
    assert "M instr/call" in text and "CPU/call ms" not in text


def test_unknown_client_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        co.main(["--clients", "llmclient,opneai", "--url", "http://127.0.0.1:9/v1"])
    assert "unknown client 'opneai'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.interop  # about a minute under valgrind: the slow suite (.ci/run runs it)
@pytest.mark.timeout(900)  # two callgrind runs (~50x slower than native): a busy machine took >120 s
def test_instructions_per_call_under_valgrind(ref_server: RefServer) -> None:
    """Two real callgrind runs of llmclient's worker: more calls count more instructions, and
    the difference is a plausible cost for one call (far from zero, far from a whole import)."""
    few = co.count_instructions("llmclient", "call", 2, ref_server.base_url, "sim-zero", 8)
    more = co.count_instructions("llmclient", "call", 12, ref_server.base_url, "sim-zero", 8)
    per_call = co.per_call_instructions(few, more, 2, 12)
    assert 100_000 < per_call < 20_000_000, per_call
    assert per_call * 10 < few  # the set-up the difference removes is most of each run
