"""Engine profiles: the figures a simulated GPU reproduces, shipped as JSON data.

A profile (``benchmarks/server/profiles/<name>.json``) holds the model's limits (context window,
batch slots, KV blocks, waiting-queue bound), the cost model of one engine step and the figures
it was calibrated from (``calibrated_from``, ``targets``). One step of the simulated GPU costs::

    step_ms = step_overhead_ms
            + prefill_ms_per_token * prefill_tokens
            + prefill_attn_ms_per_token_kctx * sum(chunk * (chunk_start + chunk / 2)) / 1000
            + (decode_base_ms + decode_ms_per_seq * decoding_sequences)   if any sequence decodes

The attention term makes prefill grow quadratically with prompt length (each new token attends
to every earlier one). ``api_overhead_ms`` is per-request latency outside the GPU (HTTP server,
detokenizer, scheduler hand-off in a real stack): a request becomes schedulable that long after
it arrives, without occupying the GPU.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["PROFILE_DIR", "Profile", "list_profiles", "load_profile"]

PROFILE_DIR = Path(__file__).with_name("profiles")


@dataclass(frozen=True)
class Profile:
    """One simulated deployment. Times in milliseconds unless the name says otherwise."""

    name: str
    model: str                      # the id /v1/models lists
    device: str                     # shown as Engine.device
    calibrated_from: str            # which figures, from where
    context_window: int
    max_batch: int                  # running sequences per step
    kv_blocks: int                  # KV cache capacity in blocks
    block_size: int = 16            # tokens per KV block
    max_batched_tokens: int = 2048  # per-step token budget (decode tokens + prefill chunks)
    max_waiting: int = 1024         # waiting-queue bound; beyond it submit raises EngineOverloaded
    cold_start_s: float = 0.0
    api_overhead_ms: float = 0.0
    step_overhead_ms: float = 0.0
    prefill_ms_per_token: float = 0.0
    prefill_attn_ms_per_token_kctx: float = 0.0
    decode_base_ms: float = 0.0
    decode_ms_per_seq: float = 0.0
    prefix_caching: bool = True
    output_len_median: float = 200.0  # natural answer length (lognormal), capped by max_tokens
    output_len_sigma: float = 0.8
    embedding_dim: int = 1024
    description: str = ""
    targets: dict[str, float] = field(default_factory=dict)  # figures profile_check compares to

    def __post_init__(self) -> None:
        for name in ("context_window", "max_batch", "kv_blocks", "block_size",
                     "max_batched_tokens", "max_waiting", "embedding_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"profile {self.name!r}: {name} must be at least 1")
        for name in ("cold_start_s", "api_overhead_ms", "step_overhead_ms", "prefill_ms_per_token",
                     "prefill_attn_ms_per_token_kctx", "decode_base_ms", "decode_ms_per_seq",
                     "output_len_sigma"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"profile {self.name!r}: {name} must be a finite number >= 0")
        if self.output_len_median < 1:
            raise ValueError(f"profile {self.name!r}: output_len_median must be at least 1")

    # -- the cost model (pure) ------------------------------------------------------------
    def prefill_ms(self, chunks: list[tuple[int, int]]) -> float:
        """Cost of prefill chunks given as ``(chunk_start, chunk_tokens)``."""
        tokens = sum(n for _, n in chunks)
        attn = sum(n * (start + n / 2) for start, n in chunks) / 1000.0
        return self.prefill_ms_per_token * tokens + self.prefill_attn_ms_per_token_kctx * attn

    def decode_ms(self, batch: int) -> float:
        """Cost of one decode token for each of ``batch`` sequences (0 when none decode)."""
        return self.decode_base_ms + self.decode_ms_per_seq * batch if batch > 0 else 0.0

    def step_ms(self, chunks: list[tuple[int, int]], decoding: int) -> float:
        return self.step_overhead_ms + self.prefill_ms(chunks) + self.decode_ms(decoding)

    def predicted_ttft_ms(self, prompt_tokens: int) -> float:
        """TTFT of a lone request at idle: API overhead plus one prefill step (or several chunks)."""
        total, start = self.api_overhead_ms, 0
        while start < prompt_tokens:
            n = min(self.max_batched_tokens, prompt_tokens - start)
            total += self.step_ms([(start, n)], 0)
            start += n
        return total

    def predicted_tpot_ms(self, batch: int = 1) -> float:
        """Time per output token after the first, with ``batch`` sequences decoding."""
        return self.step_ms([], batch)


def list_profiles() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def _from_dict(data: dict[str, Any], source: str) -> Profile:
    known = {f.name for f in fields(Profile)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"profile {source}: unknown field(s) {', '.join(unknown)}")
    missing = sorted(f.name for f in fields(Profile) if f.name not in data
                     and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise ValueError(f"profile {source}: missing field(s) {', '.join(missing)}")
    try:
        return Profile(**data)
    except TypeError as exc:
        raise ValueError(f"profile {source}: {exc}") from None


def load_profile(name_or_path: str | Path) -> Profile:
    """A shipped profile by name (``"h100-8b"``) or any profile JSON file by path."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = PROFILE_DIR / f"{name_or_path}.json"
        if not path.is_file():
            raise ValueError(
                f"unknown profile {str(name_or_path)!r}; choose one of {', '.join(list_profiles())}"
                " or give a path to a .json file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"profile {path}: cannot read it ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"profile {path}: the top level must be a JSON object")
    return _from_dict(data, str(path))
