"""The torch engine under load, in-process: the GPU memory curve and the sim engine held to it.

    python -m benchmarks.server.gpu_sweep --config 1b --profile measured.json --out sweep.json

For each concurrency (1, 2, 4, ... up to ``--max-concurrency`` or the first out-of-memory) it
sends that many requests at once to a :class:`TorchEngine` (``--prompt-tokens`` of prompt,
``--output-tokens`` out, temperature 0) and records tokens per second, the median time to first
token and time per output token, the peak memory torch allocated, and what NVML reports for the
device (memory used, utilisation sampled every 50 ms). With ``--profile`` (a ``calibrate``
output) the ``sim`` engine then runs the same low-load levels with that profile, and the
result says how far its TTFT and TPOT are from the GPU's.

It needs only torch (and nvidia-ml-py for NVML figures): no HTTP server, no client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from .calibrate import synthetic_prompt, time_request
from .engine import EngineOOM, create_engine


class _NvmlSampler:
    """NVML's memory used and utilisation, every 50 ms while a level runs (``sample=False``:
    memory once, after it: on some machines NVML queries slow the engine's kernel launches)."""

    def __init__(self, sample: bool = True) -> None:
        self.sample = sample
        self.util: list[float] = []
        self.used: list[int] = []
        self._handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nv = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:
            self._handle = None

    def once(self) -> None:
        if self._handle is not None:
            self.used.append(int(self._nv.nvmlDeviceGetMemoryInfo(self._handle).used))

    async def run(self, stop: asyncio.Event) -> None:
        while self._handle is not None and self.sample and not stop.is_set():
            self.util.append(float(self._nv.nvmlDeviceGetUtilizationRates(self._handle).gpu))
            self.used.append(int(self._nv.nvmlDeviceGetMemoryInfo(self._handle).used))
            await asyncio.sleep(0.05)


class _StepTimes:
    """Where a torch engine's step time goes: each step, and its prefill, decode and sampling
    parts, timed around the engine's own methods (wall clock in the engine's worker thread)."""

    def __init__(self, engine: Any) -> None:
        self.times: dict[str, list[float]] = {"step": [], "prefill": [], "decode": [], "sample": []}
        self.batches: list[int] = []
        self.step_starts: list[float] = []
        for name in self.times:
            original = getattr(engine, f"_{name}")
            setattr(engine, f"_{name}", self._timed(name, original))
        self._engine = engine

    def _timed(self, name: str, fn: Any) -> Any:
        def run(*args: Any) -> Any:
            t0 = time.perf_counter()
            if name == "step":
                self.step_starts.append(t0)
                self.batches.append(len(self._engine._running))
            try:
                return fn(*args)
            finally:
                self.times[name].append((time.perf_counter() - t0) * 1000)
        return run

    def take(self) -> dict[str, Any]:
        out: dict[str, Any] = {f"{k}_ms_mean": round(statistics.fmean(v), 3) for k, v in self.times.items() if v}
        out["steps"] = len(self.times["step"])
        if len(self.step_starts) > 1:
            gaps = [(b - a) * 1000 - d for a, b, d in zip(self.step_starts, self.step_starts[1:], self.times["step"], strict=False)]
            out["gap_between_steps_ms_mean"] = round(statistics.fmean(gaps), 3)
        if self.batches:
            out["running_mean"] = round(statistics.fmean(self.batches), 2)
        for v in self.times.values():
            v.clear()
        self.batches.clear()
        self.step_starts.clear()
        return out


async def level(engine: Any, concurrency: int, prompt_tokens: int, output_tokens: int, vocab: int,
                torch_mod: Any = None, steps: _StepTimes | None = None, nvml_sample: bool = True) -> dict[str, Any]:
    prompts = [synthetic_prompt(i, prompt_tokens, vocab) for i in range(concurrency)]
    cuda = torch_mod is not None and torch_mod.cuda.is_available()
    if cuda:
        torch_mod.cuda.reset_peak_memory_stats()
    sampler = _NvmlSampler(nvml_sample) if cuda else None
    stop = asyncio.Event()
    watch = asyncio.create_task(sampler.run(stop)) if sampler is not None else None
    t0 = time.perf_counter()
    results = await asyncio.gather(*(time_request(engine, p, output_tokens, f"c{concurrency}-{i}")
                                     for i, p in enumerate(prompts)))
    wall = time.perf_counter() - t0
    stop.set()
    if watch is not None:
        await watch
    if sampler is not None and not nvml_sample:
        sampler.once()
    row: dict[str, Any] = {
        "concurrency": concurrency,
        "tokens_per_s": round(sum(r[2] for r in results) / wall, 1),
        "ttft_ms_p50": round(statistics.median(r[0] for r in results), 3),
        "tpot_ms_p50": round(statistics.median(r[1] for r in results), 3),
        "wall_s": round(wall, 3),
    }
    if cuda:
        row["torch_peak_allocated_mib"] = round(torch_mod.cuda.max_memory_allocated() / 2**20, 1)
    if steps is not None:
        row["engine_steps"] = steps.take()
    if sampler is not None and sampler.used:
        row["nvml_used_mib_max"] = round(max(sampler.used) / 2**20, 1)
        if sampler.util:
            row["gpu_util_pct_mean"] = round(statistics.fmean(sampler.util), 1)
            row["gpu_util_pct_max"] = max(sampler.util)
    return row


async def sweep(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    engine = create_engine("torch", args.config, device=args.device, max_batch=args.max_concurrency)
    t0 = time.perf_counter()
    await engine.start()
    load_s = time.perf_counter() - t0
    vocab = engine.cfg.vocab_size  # type: ignore[attr-defined]
    out: dict[str, Any] = {"device": engine.device, "config": args.config, "load_s": round(load_s, 2),
                           "prompt_tokens": args.prompt_tokens, "output_tokens": args.output_tokens,
                           "torch": torch.__version__, "levels": []}
    steps = _StepTimes(engine) if args.trace_steps else None
    await level(engine, 1, args.prompt_tokens, args.output_tokens, vocab, torch, steps, not args.no_nvml)  # warm-up
    c = 1
    while c <= args.max_concurrency:
        try:
            row = await level(engine, c, args.prompt_tokens, args.output_tokens, vocab, torch, steps,
                              not args.no_nvml)
        except (EngineOOM, torch.cuda.OutOfMemoryError) as exc:
            out["stopped"] = f"out of memory at concurrency {c}: {exc}"
            break
        out["levels"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        c *= 2
    await engine.stop()
    if args.profile:
        sim = create_engine("sim", str(args.profile), cold_start_s=0.0)
        await sim.start()
        compare = []
        for c in (1, 2, 4):
            srow = await level(sim, c, args.prompt_tokens, args.output_tokens, vocab)
            grow = next((r for r in out["levels"] if r["concurrency"] == c), None)
            if grow is None:
                continue
            compare.append({
                "concurrency": c,
                "gpu_ttft_ms": grow["ttft_ms_p50"], "sim_ttft_ms": srow["ttft_ms_p50"],
                "ttft_ratio": round(srow["ttft_ms_p50"] / grow["ttft_ms_p50"], 3) if grow["ttft_ms_p50"] else None,
                "gpu_tpot_ms": grow["tpot_ms_p50"], "sim_tpot_ms": srow["tpot_ms_p50"],
                "tpot_ratio": round(srow["tpot_ms_p50"] / grow["tpot_ms_p50"], 3) if grow["tpot_ms_p50"] else None,
            })
        await sim.stop()
        out["sim_vs_gpu"] = compare
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.server.gpu_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="auto", help="tiny, small, 1b (default: 1b on GPU, tiny on CPU)")
    p.add_argument("--device", default="auto")
    p.add_argument("--max-concurrency", type=int, default=256)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--profile", type=Path, help="a calibrate output: compare the sim engine with it")
    p.add_argument("--no-nvml", action="store_true",
                   help="read NVML once per level, not every 50 ms (no utilisation figures)")
    p.add_argument("--trace-steps", action="store_true",
                   help="time the engine's steps and their parts (prefill, decode, sampling) per level")
    p.add_argument("--out", type=Path, help="where to write the JSON (default: print it)")
    args = p.parse_args(argv)
    try:
        result = asyncio.run(sweep(args))
    except ImportError:
        print("gpu_sweep needs torch: pip install 'llmclient[torch]'", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
