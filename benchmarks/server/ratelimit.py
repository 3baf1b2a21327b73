"""Rate limits per API key, as OpenAI enforces and reports them (``--rpm``, ``--tpm``).

Each key (the Authorization header, hashed; anonymous requests share one budget) has a
requests budget and a tokens budget. Each refills continuously over the window (a sliding
window: what was spent ``window`` seconds ago is back, in proportion; at 5000 RPM one request's
reset is 12 ms, as OpenAI's headers show), kept as one GCRA timestamp per budget. A request is
counted when it arrives, before it runs, for its prompt estimated from its characters (4 a
token) plus its generation cap (``max_tokens`` / ``max_completion_tokens`` /
``max_output_tokens``, times ``n``), as OpenAI describes its TPM accounting; a request that
does not fit either budget is refused with 429 in OpenAI's error shape (``rate_limit_exceeded``,
"Limit L, Used U, Requested R. Please try again in Xs.") and ``retry-after-ms``/``retry-after``,
and counts against neither. Every answer to a POST on /v1 carries the budgets in OpenAI's
headers (``x-ratelimit-limit|remaining|reset-requests|tokens``, resets as Go durations) and in
the IETF draft's ``RateLimit-Policy`` / ``RateLimit`` (which also name the window).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RateLimiter", "Verdict", "add_arguments", "estimate_tokens", "format_duration", "from_args"]

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text
IMAGE_TOKENS = 85  # an image part, counted as a low-detail image
_MAX_KEYS = 100_000  # budgets kept; beyond, the oldest key is forgotten (it starts whole again)


def _chars(value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        return len(value), 0
    if isinstance(value, Mapping):
        if value.get("type") in ("image_url", "input_image"):
            return 0, 1
        totals = [_chars(value.get(k)) for k in ("content", "text", "input_text", "arguments")]
        return sum(c for c, _ in totals), sum(i for _, i in totals)
    if isinstance(value, (list, tuple)):
        chars = images = 0
        for item in value:
            c, i = (CHARS_PER_TOKEN, 0) if isinstance(item, int) else _chars(item)
            chars, images = chars + c, images + i
        return chars, images
    return 0, 0


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """What a request is counted for against the tokens budget (see the module docstring)."""
    chars = images = 0
    for key in ("messages", "prompt", "input", "instructions"):
        c, i = _chars(body.get(key))
        chars, images = chars + c, images + i
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("max_output_tokens") or 0
    n = body.get("n") or 1
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else 0
    n = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
    return -(-chars // CHARS_PER_TOKEN) + images * IMAGE_TOKENS + cap * n


def format_duration(seconds: float) -> str:
    """OpenAI's form of a reset: ``12ms``, ``1.5s``, ``6m0s``, ``1h2m3s``."""
    if seconds < 1.0:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    if seconds < 60.0:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    whole = math.ceil(seconds)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + f"{m}m{s}s"


@dataclass
class _Budget:
    limit: int
    window_s: float
    tat: float = 0.0

    def debt(self, now: float) -> float:
        return max(0.0, self.tat - now)

    def wait(self, cost: int, now: float) -> float:
        return max(0.0, max(self.tat, now) + cost * self.window_s / self.limit - self.window_s - now)

    def take(self, cost: int, now: float) -> None:
        self.tat = max(self.tat, now) + cost * self.window_s / self.limit

    def remaining(self, now: float) -> int:
        return max(0, self.limit - math.ceil(self.debt(now) * self.limit / self.window_s - 1e-6))


@dataclass
class Verdict:
    ok: bool
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # on every answer
    retry_after_s: float = 0.0
    message: str = ""
    kind: str = ""  # "requests" or "tokens": the budget that refused


class RateLimiter:
    """Budgets per API key. ``rpm``/``tpm``: units per ``window_s`` (60 s: per minute); None:
    that budget is not enforced (nor reported)."""

    def __init__(self, rpm: int | None, tpm: int | None, window_s: float = 60.0) -> None:
        if rpm is None and tpm is None:
            raise ValueError("a rate limiter needs rpm or tpm")
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._keys: dict[str, dict[str, _Budget]] = {}
        self._lock = threading.Lock()
        self.refused = 0
        self.admitted = 0

    def _budgets(self, authorization: str) -> dict[str, _Budget]:
        key = hashlib.sha256(authorization.encode("utf-8", "surrogateescape")).hexdigest()
        budgets = self._keys.get(key)
        if budgets is None:
            if len(self._keys) >= _MAX_KEYS:
                self._keys.pop(next(iter(self._keys)))
            budgets = {}
            if self.rpm is not None:
                budgets["requests"] = _Budget(self.rpm, self.window_s)
            if self.tpm is not None:
                budgets["tokens"] = _Budget(self.tpm, self.window_s)
            self._keys[key] = budgets
        return budgets

    def admit(self, authorization: str, body: Mapping[str, Any], now: float | None = None) -> Verdict:
        t = time.monotonic() if now is None else now
        costs = {"requests": 1, "tokens": estimate_tokens(body)}
        with self._lock:
            budgets = self._budgets(authorization)
            waits = {kind: b.wait(costs[kind], t) for kind, b in budgets.items()}
            never = [kind for kind, b in budgets.items() if costs[kind] > b.limit]
            refused = never or [kind for kind, w in waits.items() if w > 0]
            if not refused:
                for kind, b in budgets.items():
                    b.take(costs[kind], t)
                self.admitted += 1
            else:
                self.refused += 1
            headers = self._headers(budgets, t)
        if not refused:
            return Verdict(True, headers)
        kind = refused[0]
        b = budgets[kind]
        used = b.limit - b.remaining(t)
        wait = waits[kind] if kind not in never else b.window_s
        unit = {"requests": "requests", "tokens": "tokens"}[kind]
        message = (f"Rate limit reached for {unit} per {self.window_s:g} s: Limit {b.limit}, Used {used}, "
                   f"Requested {costs[kind]}. Please try again in {format_duration(wait)}.")
        if kind in never:
            message = (f"Request too large for {unit} per {self.window_s:g} s: Limit {b.limit}, "
                       f"Requested {costs[kind]}. The input or output tokens must be reduced.")
        retry = [(b"retry-after-ms", str(math.ceil(wait * 1000)).encode()),
                 (b"retry-after", str(math.ceil(wait)).encode())]
        return Verdict(False, headers, wait, message, kind) if kind in never else \
            Verdict(False, headers + retry, wait, message, kind)

    def _headers(self, budgets: dict[str, _Budget], now: float) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        policy, state = [], []
        for kind, b in budgets.items():
            remaining, reset = b.remaining(now), b.debt(now)
            out += [(f"x-ratelimit-limit-{kind}".encode(), str(b.limit).encode()),
                    (f"x-ratelimit-remaining-{kind}".encode(), str(remaining).encode()),
                    (f"x-ratelimit-reset-{kind}".encode(), format_duration(reset).encode())]
            policy.append(f'"{kind}";q={b.limit};w={self.window_s:g}')
            state.append(f'"{kind}";r={remaining};t={math.ceil(reset)}')
        out += [(b"ratelimit-policy", ", ".join(policy).encode()), (b"ratelimit", ", ".join(state).encode())]
        return out


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {raw}")
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {raw}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("rate limits per API key (429 with retry-after-ms; x-ratelimit-* headers)")
    g.add_argument("--rpm", type=_positive_int, help="requests per window (default: not limited)")
    g.add_argument("--tpm", type=_positive_int,
                   help="tokens per window: prompt estimate + max_tokens, counted on arrival")
    g.add_argument("--ratelimit-window-s", type=_positive_float, default=60.0,
                   help="the window the budgets refill over (60: per minute, as OpenAI)")


def from_args(args: argparse.Namespace) -> RateLimiter | None:
    if args.rpm is None and args.tpm is None:
        return None
    return RateLimiter(args.rpm, args.tpm, args.ratelimit_window_s)
