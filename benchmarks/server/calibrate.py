"""Measure the torch engine on this machine and write what it measured as a ``sim`` profile.

    python -m benchmarks.server.calibrate --config 1b --out benchmarks/server/profiles/measured.json

It times real forward passes (prefill at several prompt lengths; one batched decode step at
several batch sizes), fits the simulated engine's cost model to them by least squares, and writes
a profile whose ``calibrated_from`` names the device, date and raw measurements. The ``sim``
engine then reproduces this GPU on machines without one (``--profile path/to/measured.json``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROMPT_LENGTHS = (64, 128, 256, 512, 1024, 2048)
BATCH_SIZES = (1, 2, 4, 8, 16, 32)


def solve_least_squares(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Coefficients minimising ||rows @ c - ys|| (normal equations; small, well-posed fits)."""
    k = len(rows[0])
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    aty = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(k)]
    # Gaussian elimination with partial pivoting.
    m = [[*row, b] for row, b in zip(ata, aty, strict=True)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-12:
            raise ValueError("measurements do not determine the fit (singular system)")
        for r in range(k):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col], strict=True)]
    return [m[i][k] / m[i][i] for i in range(k)]


def fit_profile(prefill: dict[int, float], decode: dict[int, float]) -> dict[str, float]:
    """Fit ``step_overhead + a*n + c*n^2/2000`` to prefill and ``base + per_seq*b`` to decode.

    Coefficients are clamped at zero: noise must not produce a negative cost.
    """
    rows = [[1.0, float(n), n * n / 2000.0] for n in prefill]
    overhead, per_token, attn = solve_least_squares(rows, list(prefill.values()))
    base, per_seq = solve_least_squares([[1.0, float(b)] for b in decode], list(decode.values()))
    return {
        "step_overhead_ms": max(0.0, overhead),
        "prefill_ms_per_token": max(0.0, per_token),
        "prefill_attn_ms_per_token_kctx": max(0.0, attn),
        "decode_base_ms": max(0.0, base),
        "decode_ms_per_seq": max(0.0, per_seq),
    }


def _timed(fn: Any, sync: Any, repeats: int) -> float:
    fn()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


E2E_PROMPT_TOKENS = 128  # the end-to-end requests' prompt and answer lengths
E2E_OUTPUT_TOKENS = 32


def synthetic_prompt(i: int, n: int, vocab: int) -> tuple[int, ...]:
    """The ``i``-th of a family of distinct ``n``-token prompts (no shared prefix to reuse)."""
    return tuple((i * 7919 + j * 104729 + 13) % (vocab - 1) + 1 for j in range(n))


async def time_request(engine: Any, prompt: tuple[int, ...], output_tokens: int, rid: str) -> tuple[float, float, int]:
    """(TTFT ms, TPOT ms, tokens) of one greedy request through a running engine."""
    from .engine.base import EngineRequest

    t0 = time.perf_counter()
    first: float | None = None
    last = t0
    n = 0
    async for event in engine.submit(EngineRequest(rid, prompt, output_tokens, temperature=0.0, seed=0)):
        if event.token_ids:
            last = time.perf_counter()
            first = first if first is not None else last
            n += len(event.token_ids)
    first = first if first is not None else last
    return (first - t0) * 1000, (last - first) * 1000 / (n - 1) if n > 1 else 0.0, n


async def _engine_latency(engine: Any, repeats: int) -> tuple[float, float]:
    """Median (TTFT, TPOT) in ms of single requests through the running engine (its step loop,
    scheduling and sampling included, which bare forward passes leave out)."""
    vocab = engine.cfg.vocab_size
    ttfts, tpots = [], []
    for i in range(repeats + 1):  # the first is a warm-up
        ttft, tpot, n = await time_request(engine, synthetic_prompt(i, E2E_PROMPT_TOKENS, vocab),
                                           E2E_OUTPUT_TOKENS, f"cal-{i}")
        if i and n > 1:
            ttfts.append(ttft)
            tpots.append(tpot)
    return statistics.median(ttfts), statistics.median(tpots)


def measure(config: str, device: str, repeats: int, max_batch: int) -> dict[str, Any]:
    import asyncio

    return asyncio.run(_measure(config, device, repeats, max_batch))


async def _measure(config: str, device: str, repeats: int, max_batch: int) -> dict[str, Any]:
    import torch

    from .engine.torch_engine import TorchEngine
    from .engine.torch_model import forward

    engine = TorchEngine(config, device=device, max_batch=max_batch)
    await engine.start()
    dev = engine._dev

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    lengths = [n for n in PROMPT_LENGTHS if n < engine.context_window - 8]
    prefill: dict[int, float] = {}
    for n in lengths:
        tokens = torch.randint(0, engine.cfg.vocab_size, (1, n), device=dev)
        prefill[n] = _timed(lambda t=tokens: forward(engine._net, engine._cache, engine._rope, [0], t, [0]), sync, repeats)
    decode: dict[int, float] = {}
    ctx = 256
    for b in [b for b in BATCH_SIZES if b <= max_batch]:
        tokens = torch.randint(0, engine.cfg.vocab_size, (b, 1), device=dev)
        slots = list(range(b))
        decode[b] = _timed(
            lambda t=tokens, s=slots: forward(engine._net, engine._cache, engine._rope, s, t, [ctx] * len(s)), sync, repeats
        )
    kv_bytes_per_token = 2 * engine.cfg.num_hidden_layers * engine.cfg.num_key_value_heads * engine.cfg.head_dim * (2 if dev.type == "cuda" else 4)
    free = None
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
    engine_ttft, engine_tpot = await _engine_latency(engine, repeats)
    await engine.stop()
    return {
        "device": engine.device,
        "config": config,
        "params_b": round(engine.cfg.parameter_count() / 1e9, 3),
        "dtype": str(engine.dtype),
        "context_window": engine.context_window,
        "prefill_ms": prefill,
        "decode_step_ms_at_ctx256": decode,
        "kv_bytes_per_token": kv_bytes_per_token,
        "free_bytes_after_load": free,
        "engine_ttft_ms": engine_ttft,
        "engine_tpot_ms": engine_tpot,
        "torch": torch.__version__,
    }


def build_profile(name: str, m: dict[str, Any], max_batch: int) -> dict[str, Any]:
    fit = fit_profile({int(k): v for k, v in m["prefill_ms"].items()}, {int(k): v for k, v in m["decode_step_ms_at_ctx256"].items()})
    block = 16
    if m["free_bytes_after_load"]:
        kv_blocks = int(m["free_bytes_after_load"] * 0.9 / m["kv_bytes_per_token"] / block)
    else:
        kv_blocks = max_batch * m["context_window"] // block
    def prefill(n: int) -> float:
        return fit["prefill_ms_per_token"] * n + fit["prefill_attn_ms_per_token_kctx"] * n * n / 2000

    # Bare forward passes leave out the engine's own time per step (the step loop, scheduling,
    # sampling, the thread hop) and per request: fitted from single requests end to end, so the
    # sim engine reproduces what a client of this engine waits for, not the kernels alone.
    api_overhead = 0.0
    if m.get("engine_tpot_ms") is not None:
        fitted_tpot = fit["step_overhead_ms"] + fit["decode_base_ms"] + fit["decode_ms_per_seq"]
        delta = m["engine_tpot_ms"] - fitted_tpot  # < 0 where the passes ran at more context
        step = fit["step_overhead_ms"] + delta
        if step < 0:  # what the step overhead cannot give back comes off the decode base
            fit["decode_base_ms"] = max(0.0, fit["decode_base_ms"] + step)
        fit["step_overhead_ms"] = max(0.0, step)
        fitted_ttft = fit["step_overhead_ms"] + prefill(E2E_PROMPT_TOKENS)
        api_overhead = max(0.0, m["engine_ttft_ms"] - fitted_ttft)
    ttft_256 = api_overhead + fit["step_overhead_ms"] + prefill(256)
    tpot = fit["step_overhead_ms"] + fit["decode_base_ms"] + fit["decode_ms_per_seq"]
    date = _dt.date.today().isoformat()
    return {
        "name": name,
        "model": f"torch-{m['config']}",
        "device": f"{m['device']} (measured)",
        "description": f"Measured torch engine, config {m['config']} ({m['params_b']}B params, {m['dtype']}).",
        "calibrated_from": (
            f"python -m benchmarks.server.calibrate on {m['device']}, {date}, torch {m['torch']}: "
            f"median prefill ms by prompt length {m['prefill_ms']}, median decode step ms by batch "
            f"size at 256 tokens of context {m['decode_step_ms_at_ctx256']}; least-squares fit of the "
            f"sim cost model; then single {E2E_PROMPT_TOKENS}-token requests through the engine "
            f"(TTFT {m.get('engine_ttft_ms')} ms, TPOT {m.get('engine_tpot_ms')} ms, medians) set the "
            "engine's own time per step (added to step_overhead_ms) and per request (api_overhead_ms)."
        ),
        "context_window": m["context_window"],
        "max_batch": max_batch,
        "kv_blocks": max(1, kv_blocks),
        "block_size": block,
        "max_batched_tokens": 2048,
        "max_waiting": 1024,
        "cold_start_s": 0.0,
        "api_overhead_ms": round(api_overhead, 5),
        **{k: round(v, 5) for k, v in fit.items()},
        "prefix_caching": True,
        "targets": {"ttft_ms_256": round(ttft_256, 3), "tpot_ms": round(tpot, 3)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.server.calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="auto", help="tiny, small, 1b, or a checkpoint directory (default: 1b on GPU, tiny on CPU)")
    p.add_argument("--device", default="auto")
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--name", default="measured")
    p.add_argument("--out", type=Path, help="where to write the profile JSON (default: print it)")
    args = p.parse_args(argv)
    try:
        m = measure(args.config, args.device, args.repeats, args.max_batch)
    except ImportError:
        print("calibrate needs torch: pip install 'llmclient[torch]'", file=sys.stderr)
        return 2
    profile = build_profile(args.name, m, args.max_batch)
    text = json.dumps(profile, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text)
    print(
        f"{m['device']}: TTFT(256 tokens) {profile['targets']['ttft_ms_256']:.2f} ms, "
        f"time per output token {profile['targets']['tpot_ms']:.2f} ms",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
