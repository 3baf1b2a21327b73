"""When to retry a call and how long to wait: pure decisions, no I/O.

Matches the official client's policy (openai-python ``_should_retry`` / ``_calculate_retry_timeout``):
connection errors, 408, 409, 429 and 5xx are retried; a server's ``x-should-retry`` header
overrides; ``retry-after-ms`` (OpenAI) and ``Retry-After`` (RFC 9110 section 10.2.3, seconds or
an HTTP-date) are honoured up to :data:`MAX_RETRY_AFTER_S`; otherwise exponential backoff
with jitter. Once any stream content has reached the caller, nothing is retried. One departure:
a connection this machine itself refused (a loopback address) fails at once
(:func:`error_retry_delay`): nothing listens on that port, and seconds of backoff will not
start a server there, where a remote refusal can be a restart or a balancer's moment.

Where it differs, for overload (:data:`OVERLOAD_STATUSES`: 429, 503, and 529, Anthropic's
``overloaded_error``), in :func:`status_retry`: without a Retry-After the wait is *full*
jitter (uniform in [0, backoff]; AWS Architecture Blog, "Exponential Backoff And Jitter",
2015), so callers refused together spread out instead of coming back together; and a server
that asks for longer than :data:`MAX_RETRY_AFTER_S` is not retried sooner than it asked (the
official client retries after its own backoff then, into the same refusal): the error is
raised at once. How many retries an origin gets at all while it fails is the retry budget's
(``features/admit/retry_budget.py``, applied by the retry layer).
"""

from __future__ import annotations

import email.utils
import errno
import random
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx

from .._hints import is_loopback

__all__ = [
    "INITIAL_BACKOFF_S",
    "MAX_BACKOFF_S",
    "MAX_FREE_RETRIES",
    "MAX_RETRY_AFTER_S",
    "OVERLOAD_STATUSES",
    "backoff_delay",
    "error_retry",
    "error_retry_delay",
    "free_retry",
    "is_retryable_status",
    "refused",
    "retry_after_seconds",
    "retry_delay",
    "status_retry",
]

INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# A server asking us to wait longer than this is treated as "not now": we fall back to our own
# backoff rather than hanging a call for minutes (the official client uses the same 60 s bound).
MAX_RETRY_AFTER_S = 60.0

_RETRY_STATUSES = frozenset({408, 409, 429})
# "Slow down" answers: 429 (RFC 6585), 503 (RFC 9110 section 15.6.4), 529 (Anthropic's
# overloaded_error, https://docs.anthropic.com/en/api/errors, read 2026-12).
OVERLOAD_STATUSES = frozenset({429, 503, 529})


def is_retryable_status(status: int, headers: Mapping[str, str]) -> bool:
    should = headers.get("x-should-retry")
    if should == "true":
        return True
    if should == "false":
        return False
    return status in _RETRY_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's requested wait, if it gave a usable one within the cap."""
    value = _requested_wait(headers, now)
    if value is None or not (0.0 <= value <= MAX_RETRY_AFTER_S):
        return None
    return value


def _requested_wait(headers: Mapping[str, str], now: float | None) -> float | None:
    """``retry-after-ms`` (OpenAI's, milliseconds) or ``Retry-After``, uncapped; None when
    neither is there or readable."""
    value: float | None = None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = None
    if value is None:
        value = _parse_retry_after(headers.get("retry-after"), now)
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


def backoff_delay(retries_done: int, rng: random.Random | None = None, full_jitter: bool = False) -> float:
    """Exponential backoff 0.5, 1, 2, 4, 8 s (capped) with up to 25 % jitter downwards; with
    ``full_jitter``, anywhere between 0 and that (AWS Architecture Blog, "Exponential Backoff
    And Jitter", 2015: callers refused together spread out instead of returning together)."""
    base = min(INITIAL_BACKOFF_S * (2.0**retries_done), MAX_BACKOFF_S)
    if full_jitter:
        return base * (rng or random).random()
    jitter = 1.0 - 0.25 * (rng or random).random()
    return base * jitter


def retry_delay(
    retries_done: int,
    max_retries: int,
    headers: Mapping[str, str] | None = None,
    rng: random.Random | None = None,
    full_jitter: bool = False,
) -> float | None:
    """Seconds to wait before the next attempt, or None when the call must not be retried.
    ``full_jitter``: a refusal (429) without Retry-After waits a uniform share of the backoff."""
    if retries_done >= max_retries:
        return None
    if headers is not None:
        after = retry_after_seconds(headers)
        if after is not None:
            return after
    return backoff_delay(retries_done, rng, full_jitter)


def status_retry(status: int, headers: Mapping[str, str], attempt: int, max_retries: int,
                 rng: random.Random | None = None, now: float | None = None) -> float | None:
    """After an error status: seconds to wait before the next attempt, or None (raise it): not
    a retryable status, ``x-should-retry: false``, the retries used up, or an overload answer
    that asked for longer than :data:`MAX_RETRY_AFTER_S`. Overload without Retry-After waits a
    full-jitter share, so refused callers do not come back together."""
    if not is_retryable_status(status, headers) or attempt >= max_retries:
        return None
    requested = _requested_wait(headers, now)
    overload = status in OVERLOAD_STATUSES
    if requested is not None and requested > MAX_RETRY_AFTER_S and overload:
        return None  # it said not now: a retry within our cap would only be refused again
    return retry_delay(attempt, max_retries, headers, rng, full_jitter=overload)


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a refused TCP connect."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def error_retry_delay(exc: BaseException, url: str, retries_done: int, max_retries: int,
                      rng: random.Random | None = None) -> float | None:
    """The wait before retrying a call whose request failed with ``exc`` (a transport error),
    or None: not retried. A refused connection to a loopback address is not retried at all
    (nothing listens on that port of this machine: waiting 0.5 + 1 s for it only delays the
    error); anything else as :func:`retry_delay`."""
    # a proxy's refusal is about the proxy's address (the transport's ProxyError names it)
    proxy = getattr(exc, "proxy", None)
    where = proxy if isinstance(proxy, str) and "://" in proxy else url
    if refused(exc) and is_loopback(urlsplit(where).hostname):
        return None
    return retry_delay(retries_done, max_retries, rng=rng)


# Re-sends that do not use the caller's max_retries, because the request never ran. Each one
# goes to a fresh connection; several can be needed when many streams share a closing one.
MAX_FREE_RETRIES = 8


def free_retry(exc: BaseException, used: int) -> bool:
    """Whether a failed send can be repeated at once, outside ``max_retries``: only where the
    protocol guarantees the server did not process the request (the transport's errors say so
    in ``unprocessed``):

    * RFC 9113 section 6.8: a stream above a GOAWAY's last-stream-id "can be safely retried";
    * RFC 9113 section 8.7: RST_STREAM(REFUSED_STREAM);
    * a server that does not speak HTTP/2 at all answered our h2c preface;
    * a connection that could no longer take the stream when it came to it (GOAWAY read, the
      stream cap, closing: ``http2.errors.ConnectionUnusable``), or an HTTP/1.1 connection
      closed before any byte of the request was written (``http1_parser.ClosedBeforeSent``).

    Anything else (a connection closed before the answer, a GOAWAY that covers the stream, a
    cut stream) may have run on the server: inference servers do not honour Idempotency-Key,
    so a re-send is a second generation, billed. Those go through ``max_retries`` with
    backoff, as the official client does, or fail.

    Our transport already places such a request on another connection itself (up to
    ``MAX_FREE_RETRIES`` times, ``transport.lanes``) and says how often in ``replaced``: those
    count here, so the two never multiply.
    """
    return used + int(getattr(exc, "replaced", 0)) < MAX_FREE_RETRIES and bool(getattr(exc, "unprocessed", False))


def error_retry(exc: BaseException, attempt: int, max_retries: int, free_used: int,
                url: str = "") -> tuple[float | None, bool]:
    """After a failed send: (the delay before the next attempt or None, whether that retry is
    free: the request never ran on the server). Only a transport error is retried, and not a
    URL the transport cannot speak; a refused connect to this machine (``url``) not at all
    (:func:`error_retry_delay`)."""
    if not isinstance(exc, httpx.TransportError) or isinstance(exc, httpx.UnsupportedProtocol):
        return None, False
    if free_retry(exc, free_used):
        return 0.0, True
    return error_retry_delay(exc, url, attempt, max_retries), False
