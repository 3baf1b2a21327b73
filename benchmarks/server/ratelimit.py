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

Anthropic's API limits input and output tokens per minute apart (``--itpm``/``--otpm``: the
prompt estimate, and the generation cap, counted on arrival as its rate-limits page says OTPM
is estimated from ``max_tokens``), and reports each budget in its own headers,
``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
with the reset as an RFC 3339 time (when the budget is whole again), and ``retry-after`` in
seconds on a 429 (docs.claude.com/en/api/rate-limits, "Response headers", read 2026-12):
:func:`anthropic_headers`. Remaining counts are exact here (the API rounds token counts to the
nearest thousand). A key is the ``Authorization`` header, or ``x-api-key`` (Anthropic's).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BudgetState", "RateLimiter", "Verdict", "add_arguments", "anthropic_headers", "estimate_tokens",
           "format_duration", "from_args"]

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text
IMAGE_TOKENS = 85  # an image part, counted as a low-detail image
# Image parts: OpenAI chat's and Responses', and Anthropic's ``image`` content block.
_IMAGE_TYPES = ("image_url", "input_image", "image")
# Budget kinds and the name each has in Anthropic's headers.
_ANTHROPIC_NAMES = {"requests": "requests", "tokens": "tokens", "input_tokens": "input-tokens",
                    "output_tokens": "output-tokens"}
_MAX_KEYS = 100_000  # budgets kept; beyond, the oldest key is forgotten (it starts whole again)


def _chars(value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        return len(value), 0
    if isinstance(value, Mapping):
        if value.get("type") in _IMAGE_TYPES:
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
    prompt, output = _estimate(body)
    return prompt + output


def _estimate(body: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt estimate, generation cap times ``n``) of a request. ``system`` is Anthropic's
    system prompt (a string or text blocks); OpenAI bodies have no such field."""
    chars = images = 0
    for key in ("messages", "prompt", "input", "instructions", "system"):
        c, i = _chars(body.get(key))
        chars, images = chars + c, images + i
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("max_output_tokens") or 0
    n = body.get("n") or 1
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else 0
    n = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
    return -(-chars // CHARS_PER_TOKEN) + images * IMAGE_TOKENS, cap * n


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


@dataclass(frozen=True)
class BudgetState:
    """One budget as an answer reports it: ``reset_s`` from now until it is whole again."""

    kind: str  # "requests", "tokens", "input_tokens" or "output_tokens"
    limit: int
    remaining: int
    reset_s: float


@dataclass
class Verdict:
    ok: bool
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # on every answer (OpenAI's)
    retry_after_s: float = 0.0
    message: str = ""
    kind: str = ""  # the budget that refused: "requests", "tokens", "input_tokens", "output_tokens"
    budgets: tuple[BudgetState, ...] = ()  # every budget after this request
    never: bool = False  # the request is larger than its budget: no wait makes it fit


class RateLimiter:
    """Budgets per API key. ``rpm``/``tpm``: units per ``window_s`` (60 s: per minute); None:
    that budget is not enforced (nor reported)."""

    def __init__(self, rpm: int | None, tpm: int | None, window_s: float = 60.0,
                 itpm: int | None = None, otpm: int | None = None) -> None:
        if rpm is None and tpm is None and itpm is None and otpm is None:
            raise ValueError("a rate limiter needs rpm, tpm, itpm or otpm")
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._limits = {"requests": rpm, "tokens": tpm, "input_tokens": itpm, "output_tokens": otpm}
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
            budgets = {kind: _Budget(limit, self.window_s) for kind, limit in self._limits.items()
                       if limit is not None}
            self._keys[key] = budgets
        return budgets

    def admit(self, authorization: str, body: Mapping[str, Any], now: float | None = None) -> Verdict:
        t = time.monotonic() if now is None else now
        prompt, output = _estimate(body)
        costs = {"requests": 1, "tokens": prompt + output, "input_tokens": prompt, "output_tokens": output}
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
            states = tuple(BudgetState(kind, b.limit, b.remaining(t), b.debt(t)) for kind, b in budgets.items())
        if not refused:
            return Verdict(True, headers, budgets=states)
        kind = refused[0]
        b = budgets[kind]
        used = b.limit - b.remaining(t)
        wait = waits[kind] if kind not in never else b.window_s
        unit = kind.replace("_", " ")
        message = (f"Rate limit reached for {unit} per {self.window_s:g} s: Limit {b.limit}, Used {used}, "
                   f"Requested {costs[kind]}. Please try again in {format_duration(wait)}.")
        if kind in never:
            message = (f"Request too large for {unit} per {self.window_s:g} s: Limit {b.limit}, "
                       f"Requested {costs[kind]}. The input or output tokens must be reduced.")
        retry = [(b"retry-after-ms", str(math.ceil(wait * 1000)).encode()),
                 (b"retry-after", str(math.ceil(wait)).encode())]
        if kind in never:
            return Verdict(False, headers, wait, message, kind, states, never=True)
        return Verdict(False, headers + retry, wait, message, kind, states)

    def _headers(self, budgets: dict[str, _Budget], now: float) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        policy, state = [], []
        for kind, b in budgets.items():
            remaining, reset = b.remaining(now), b.debt(now)
            if kind in ("requests", "tokens"):  # OpenAI's headers name only these two
                out += [(f"x-ratelimit-limit-{kind}".encode(), str(b.limit).encode()),
                        (f"x-ratelimit-remaining-{kind}".encode(), str(remaining).encode()),
                        (f"x-ratelimit-reset-{kind}".encode(), format_duration(reset).encode())]
            policy.append(f'"{kind}";q={b.limit};w={self.window_s:g}')
            state.append(f'"{kind}";r={remaining};t={math.ceil(reset)}')
        out += [(b"ratelimit-policy", ", ".join(policy).encode()), (b"ratelimit", ", ".join(state).encode())]
        return out


def anthropic_headers(verdict: Verdict, now_s: float | None = None) -> list[tuple[bytes, bytes]]:
    """Anthropic's rate-limit headers for ``verdict``'s budgets (``now_s``: the wall clock, Unix
    seconds), plus ``retry-after`` (whole seconds, rounded up) when it refused one that a wait
    makes fit."""
    now = time.time() if now_s is None else now_s
    out: list[tuple[bytes, bytes]] = []
    for b in verdict.budgets:
        name = _ANTHROPIC_NAMES[b.kind]
        reset = datetime.datetime.fromtimestamp(math.ceil(now + b.reset_s), datetime.timezone.utc)
        out += [(f"anthropic-ratelimit-{name}-limit".encode(), str(b.limit).encode()),
                (f"anthropic-ratelimit-{name}-remaining".encode(), str(b.remaining).encode()),
                (f"anthropic-ratelimit-{name}-reset".encode(), reset.strftime("%Y-%m-%dT%H:%M:%SZ").encode())]
    if not verdict.ok and not verdict.never:
        out.append((b"retry-after", str(max(1, math.ceil(verdict.retry_after_s))).encode()))
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
    g.add_argument("--itpm", type=_positive_int,
                   help="input tokens per window (Anthropic's ITPM): the prompt estimate, on arrival")
    g.add_argument("--otpm", type=_positive_int,
                   help="output tokens per window (Anthropic's OTPM): max_tokens, on arrival")
    g.add_argument("--ratelimit-window-s", type=_positive_float, default=60.0,
                   help="the window the budgets refill over (60: per minute, as OpenAI)")


def from_args(args: argparse.Namespace) -> RateLimiter | None:
    if args.rpm is None and args.tpm is None and args.itpm is None and args.otpm is None:
        return None
    return RateLimiter(args.rpm, args.tpm, args.ratelimit_window_s, args.itpm, args.otpm)
