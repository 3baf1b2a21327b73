"""What a server says about its rate limits, read from one response's headers (pure).

Three dialects, all optional, read together:

* OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (platform.openai.com,
  "Rate limits in headers", recorded 2026-12): counts as integers, resets as Go durations
  (``1s``, ``6m0s``, ``20ms``, ``1.5s``, ``2h3m4.5s``): "the time until the rate limit ...
  resets to its initial state", i.e. the budget refills continuously (``reset`` of one request
  at 5000 RPM is 12 ms).
* IETF httpapi-ratelimit-headers (draft-ietf-httpapi-ratelimit-headers-08, section 3 and 4):
  ``RateLimit-Policy: "tokens";q=10000;w=60`` (quota ``q`` per window ``w`` seconds) and
  ``RateLimit: "tokens";r=812;t=3`` (``r`` remaining, ``t`` seconds to reset). Policy names
  ``requests``/``tokens`` (or containing them) map to the two budgets; others are ignored.
* Anthropic's ``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}``
  (docs.anthropic.com/en/api/rate-limits, "Response headers", read 2026-12-07): counts as
  integers, the reset an RFC 3339 time "when the rate limit will be fully replenished"; its
  limits are per minute (RPM; ``tokens`` is the most restrictive token limit in effect).
* ``retry-after-ms`` (OpenAI) and ``Retry-After`` (RFC 9110 section 10.2.3), through
  :func:`llmclient.pipeline.retry.retry_after_seconds`'s rules (read here without importing it).

Anything malformed, negative, contradictory (remaining above limit) or absurd (a reset more
than :data:`MAX_RESET_S` away, a limit above :data:`MAX_LIMIT`) is dropped with a debug log: a
bad header must never crash a call or make it wait for ever.
"""

from __future__ import annotations

import datetime
import email.utils
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MAX_LIMIT", "MAX_RESET_S", "Limits", "Observation", "parse_duration", "parse_headers"]

log = logging.getLogger("llmclient.admit")

# A reset further away than this is not a pacing hint (OpenAI's per-day limits reset within
# 24 h; a header saying "days" is broken or a different kind of quota): ignored.
MAX_RESET_S = 24 * 3600.0
# Above this a "limit" is no limit worth pacing for (and likely garbage): ignored.
MAX_LIMIT = 10**12
# When a server names no window (OpenAI's headers do not), its limits are per minute (RPM, TPM).
DEFAULT_WINDOW_S = 60.0

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")
_KINDS = ("requests", "tokens")


def parse_duration(raw: str | None) -> float | None:
    """Seconds in a Go-style duration (``6m0s``, ``1.5s``, ``20ms``, ``1h2m``) or a bare number
    of seconds; None for anything else (empty, negative, unknown units)."""
    if raw is None:
        return None
    text = raw.strip().lower()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        m = _DURATION.fullmatch(text)
        if m is None or not any(m.groups()):
            return None
        h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
        value = h * 3600.0 + mi * 60.0 + s + ms / 1000.0
    if not (0.0 <= value <= MAX_RESET_S) or value != value:
        return None
    return value


def _count(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        try:
            f = float(raw.strip())
        except ValueError:
            return None
        if f != f or not f.is_integer():
            return None
        value = int(f)
    return value if 0 <= value <= MAX_LIMIT else None


@dataclass(frozen=True, slots=True)
class Limits:
    """One budget (requests or tokens) as one answer described it."""

    limit: int  # the budget's size: what a full window allows
    remaining: int  # what was left once this answer's request was counted
    reset_s: float | None  # until the budget is whole again (None: not said)
    window_s: float  # the period ``limit`` refills over


@dataclass(frozen=True, slots=True)
class Observation:
    """What one answer said: each budget (None where it said nothing usable) and how long it
    asked us to wait (``retry-after(-ms)``)."""

    requests: Limits | None = None
    tokens: Limits | None = None
    retry_after_s: float | None = None

    @property
    def empty(self) -> bool:
        return self.requests is None and self.tokens is None and self.retry_after_s is None


def _openai(headers: Mapping[str, str], kind: str, window: float) -> Limits | None:
    raw_limit = headers.get(f"x-ratelimit-limit-{kind}")
    raw_remaining = headers.get(f"x-ratelimit-remaining-{kind}")
    if raw_limit is None or raw_remaining is None:
        return None
    limit, remaining = _count(raw_limit), _count(raw_remaining)
    raw_reset = headers.get(f"x-ratelimit-reset-{kind}")
    reset = parse_duration(raw_reset)
    if limit is None or remaining is None or limit == 0 or remaining > limit or (raw_reset is not None and reset is None):
        log.debug("ignored x-ratelimit-*-%s headers: limit=%r remaining=%r reset=%r",
                  kind, raw_limit, raw_remaining, raw_reset)
        return None
    return Limits(limit, remaining, reset, window)


def _anthropic(headers: Mapping[str, str], kind: str, now: float | None) -> Limits | None:
    raw_limit = headers.get(f"anthropic-ratelimit-{kind}-limit")
    raw_remaining = headers.get(f"anthropic-ratelimit-{kind}-remaining")
    if raw_limit is None or raw_remaining is None:
        return None
    limit, remaining = _count(raw_limit), _count(raw_remaining)
    raw_reset = headers.get(f"anthropic-ratelimit-{kind}-reset")
    reset: float | None = None
    if raw_reset is not None:
        try:
            at = datetime.datetime.fromisoformat(raw_reset.strip().replace("Z", "+00:00"))
            if at.tzinfo is not None:
                reset = max(0.0, at.timestamp() - (time.time() if now is None else now))
        except ValueError:
            reset = None
        if reset is not None and reset > MAX_RESET_S:
            reset = None
    if limit is None or remaining is None or limit == 0 or remaining > limit or (raw_reset is not None and reset is None):
        log.debug("ignored anthropic-ratelimit-%s-* headers: limit=%r remaining=%r reset=%r",
                  kind, raw_limit, raw_remaining, raw_reset)
        return None
    return Limits(limit, remaining, reset, DEFAULT_WINDOW_S)


def _ietf_items(raw: str | None) -> dict[str, dict[str, str]]:
    """``"name";k=v;k=v, "other";k=v`` (an RFC 8941 list of strings with parameters)."""
    items: dict[str, dict[str, str]] = {}
    if not raw:
        return items
    for part in raw.split(","):
        fields = [f.strip() for f in part.split(";")]
        name = fields[0].strip('"').lower()
        if not name:
            continue
        params = {}
        for f in fields[1:]:
            key, _, value = f.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        items[name] = params
    return items


def _ietf_kind(name: str) -> str | None:
    for kind in _KINDS:
        if kind in name or (kind == "requests" and name in ("default", "req")):
            return kind
    return None


def _ietf(headers: Mapping[str, str]) -> tuple[dict[str, Limits], dict[str, float]]:
    """Budgets from ``RateLimit`` + ``RateLimit-Policy``, and the windows the policy names."""
    policies = _ietf_items(headers.get("ratelimit-policy"))
    states = _ietf_items(headers.get("ratelimit"))
    windows: dict[str, float] = {}
    quotas: dict[str, int] = {}
    for name, params in policies.items():
        kind = _ietf_kind(name)
        q, w = _count(params.get("q")), parse_duration(params.get("w"))
        if kind is None or q is None or q == 0 or w is None or w == 0:
            log.debug("ignored RateLimit-Policy item %r: %r", name, params)
            continue
        windows[kind], quotas[kind] = w, q
    out: dict[str, Limits] = {}
    for name, params in states.items():
        kind = _ietf_kind(name)
        remaining, reset = _count(params.get("r")), parse_duration(params.get("t"))
        if kind is None or kind not in quotas or remaining is None or remaining > quotas[kind]:
            log.debug("ignored RateLimit item %r: %r", name, params)
            continue
        out[kind] = Limits(quotas[kind], remaining, reset, windows[kind])
    return out, windows


def _retry_after(headers: Mapping[str, str], now: float | None) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = -1.0
        if 0.0 <= value <= MAX_RESET_S:
            return value
        log.debug("ignored retry-after-ms %r", ms)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = parse_duration(raw) if raw.strip().replace(".", "", 1).isdigit() else None
    if seconds is None:
        try:
            seconds = email.utils.parsedate_to_datetime(raw).timestamp() - (time.time() if now is None else now)
        except (TypeError, ValueError, IndexError, OverflowError):
            seconds = None
        if seconds is not None and not (0.0 <= seconds <= MAX_RESET_S):
            seconds = 0.0 if -MAX_RESET_S <= seconds < 0.0 else None  # a date just passed: now
    if seconds is None:
        log.debug("ignored retry-after %r", raw)
    return seconds


def parse_headers(headers: Mapping[str, str], now: float | None = None) -> Observation:
    """The :class:`Observation` in one answer's headers (lower-case names, as httpx gives
    them; any Mapping works). Never raises on a header's value. ``now`` (epoch seconds) only
    matters for an HTTP-date Retry-After."""
    if _MARKERS.isdisjoint(headers.keys()):  # one pass over the names: most answers say nothing
        return _NOTHING
    ietf, windows = _ietf(headers)
    budgets = {}
    for kind in _KINDS:
        found = (_openai(headers, kind, windows.get(kind, DEFAULT_WINDOW_S)) or _anthropic(headers, kind, now)
                 or ietf.get(kind))
        budgets[kind] = found
    return Observation(budgets["requests"], budgets["tokens"], _retry_after(headers, now))


_MARKERS = frozenset({"x-ratelimit-limit-requests", "x-ratelimit-limit-tokens", "anthropic-ratelimit-requests-limit",
                      "anthropic-ratelimit-tokens-limit", "ratelimit", "ratelimit-policy",
                      "retry-after", "retry-after-ms"})
_NOTHING = Observation()
