"""When to retry a call and how long to wait: pure decisions, no I/O.

Matches the official client's policy (openai-python ``_should_retry`` / ``_calculate_retry_timeout``):
connection errors, 408, 409, 429 and 5xx are retried; a server's ``x-should-retry`` header
overrides; ``retry-after-ms`` (OpenAI) and ``Retry-After`` (RFC 9110 section 10.2.3, seconds or
an HTTP-date) are honoured up to :data:`MAX_RETRY_AFTER_S`; otherwise exponential backoff
with jitter. Once any stream content has reached the caller, nothing is retried.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Mapping

__all__ = [
    "INITIAL_BACKOFF_S",
    "MAX_BACKOFF_S",
    "MAX_FREE_RETRIES",
    "MAX_RETRY_AFTER_S",
    "backoff_delay",
    "free_retry",
    "is_retryable_status",
    "retry_after_seconds",
    "retry_delay",
]

INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# A server asking us to wait longer than this is treated as "not now": we fall back to our own
# backoff rather than hanging a call for minutes (the official client uses the same 60 s bound).
MAX_RETRY_AFTER_S = 60.0

_RETRY_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    should = headers.get("x-should-retry")
    if should == "true":
        return True
    if should == "false":
        return False
    return status in _RETRY_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's requested wait, if it gave a usable one within the cap."""
    value: float | None = None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = None
    if value is None:
        value = _parse_retry_after(headers.get("retry-after"), now)
    if value is None or not (0.0 <= value <= MAX_RETRY_AFTER_S):
        return None
    return value


def _parse_retry_after(raw: str | None, now: float | None) -> float | None:
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return parsed.timestamp() - (time.time() if now is None else now)


def backoff_delay(retries_done: int, rng: random.Random | None = None) -> float:
    """Exponential backoff 0.5, 1, 2, 4, 8 s (capped) with up to 25 % jitter downwards."""
    base = min(INITIAL_BACKOFF_S * (2.0**retries_done), MAX_BACKOFF_S)
    jitter = 1.0 - 0.25 * (rng or random).random()
    return base * jitter


def retry_delay(
    retries_done: int,
    max_retries: int,
    headers: Mapping[str, str] | None = None,
    rng: random.Random | None = None,
) -> float | None:
    """Seconds to wait before the next attempt, or None when the call must not be retried."""
    if retries_done >= max_retries:
        return None
    if headers is not None:
        after = retry_after_seconds(headers)
        if after is not None:
            return after
    return backoff_delay(retries_done, rng)


# Re-sends that do not use the caller's retry budget, because the request never ran. Each one
# goes to a fresh connection; several can be needed when many streams share a closing one.
MAX_FREE_RETRIES = 8
_GOAWAY_RE = re.compile(r"last_stream_id:\s*(\d+)")
_STALE_TEXT = ("Server disconnected", "Connection reset", "Broken pipe", "EOF")


def free_retry(error_kind: str, error_text: str, stream_id: int | None, reused: bool, used: int) -> bool:
    """Whether a failed send can be repeated at once on a fresh connection, outside max_retries.

    * RFC 9113 section 6.8: a stream above a GOAWAY's last-stream-id was not processed and
      "can be safely retried" (hypercorn sends GOAWAY after 1,000 requests per connection).
    * A GOAWAY that covers our stream but closes before answering it, once (see below).
    * A reused keep-alive connection that the server closed while it was idle fails on first
      use, before any response byte (the race RFC 9112 section 9.3.1 describes); the request
      also carries an Idempotency-Key, so a server that did see it will not run it twice.
    """
    if used >= MAX_FREE_RETRIES:
        return False
    match = _GOAWAY_RE.search(error_text)
    if match is not None:
        if stream_id is not None and stream_id > int(match.group(1)):
            return True  # never processed, by RFC 9113's guarantee
        # A GOAWAY whose last-stream-id covers our stream, then the connection closed with no
        # response headers on it. hypercorn does this to the request that exceeds
        # keep_alive_max_requests (1,000 by default), with NO_ERROR or, when our request body
        # was still arriving, PROTOCOL_ERROR: the request never reaches the app. One such
        # re-send is allowed; the request carries an Idempotency-Key, so a server that did
        # start it will not run it twice.
        return used == 0
    stale_kind = error_kind in ("RemoteProtocolError", "ReadError", "WriteError")
    return reused and stale_kind and used == 0 and any(t in error_text for t in _STALE_TEXT)
