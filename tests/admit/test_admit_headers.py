"""The admit stage reads rate limits from headers: OpenAI's, the IETF draft's, Retry-After;
anything malformed or absurd is dropped, never raised."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmclient.features.admit.headers import MAX_RESET_S, Limits, parse_duration, parse_headers


@pytest.mark.parametrize(("raw", "seconds"), [
    ("6m0s", 360.0), ("1.5s", 1.5), ("20ms", 0.02), ("1s", 1.0), ("2h3m4.5s", 7384.5),
    ("12ms", 0.012), ("0s", 0.0), ("7", 7.0), ("0.25", 0.25), ("1m30ms", 60.03),
])
def test_go_durations_as_openai_sends_them(raw: str, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "abc", "-1s", "1d", "5 minutes", "nan", "inf", "30h", "1e9"])
def test_durations_that_are_not_are_none(raw: str) -> None:
    assert parse_duration(raw) is None


@given(st.text(max_size=30))
def test_any_text_parses_or_is_none_never_raises(raw: str) -> None:
    value = parse_duration(raw)
    assert value is None or 0.0 <= value <= MAX_RESET_S


OPENAI = {
    "x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-reset-requests": "12ms", "x-ratelimit-limit-tokens": "160000",
    "x-ratelimit-remaining-tokens": "159976", "x-ratelimit-reset-tokens": "9ms",
}


def test_openai_headers_give_both_budgets_per_minute() -> None:
    obs = parse_headers(OPENAI)
    assert obs.requests == Limits(5000, 4999, 0.012, 60.0)
    assert obs.tokens == Limits(160000, 159976, 0.009, 60.0)
    assert obs.retry_after_s is None


def test_ietf_policy_names_the_window_and_state_the_remaining() -> None:
    obs = parse_headers({"ratelimit-policy": '"requests";q=100;w=10, "tokens";q=1000;w=10',
                         "ratelimit": '"requests";r=98;t=1, "tokens";r=597;t=5'})
    assert obs.requests == Limits(100, 98, 1.0, 10.0)
    assert obs.tokens == Limits(1000, 597, 5.0, 10.0)


def test_openai_counts_with_the_ietf_window() -> None:
    obs = parse_headers({**OPENAI, "ratelimit-policy": '"tokens";q=160000;w=30'})
    assert obs.tokens is not None and obs.tokens.window_s == 30.0
    assert obs.requests is not None and obs.requests.window_s == 60.0


def test_retry_after_ms_first_then_seconds_then_a_date() -> None:
    assert parse_headers({"retry-after-ms": "1500", "retry-after": "9"}).retry_after_s == 1.5
    assert parse_headers({"retry-after": "9"}).retry_after_s == 9.0
    date = "Sun, 06 Dec 2026 03:00:10 GMT"
    import email.utils
    now = email.utils.parsedate_to_datetime(date).timestamp() - 4.0
    assert parse_headers({"retry-after": date}, now=now).retry_after_s == pytest.approx(4.0)


@pytest.mark.parametrize("bad", [
    {"x-ratelimit-limit-tokens": "0", "x-ratelimit-remaining-tokens": "0"},          # zero
    {"x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "200"},      # contradictory
    {"x-ratelimit-limit-tokens": "-5", "x-ratelimit-remaining-tokens": "1"},         # negative
    {"x-ratelimit-limit-tokens": "ten", "x-ratelimit-remaining-tokens": "1"},        # malformed
    {"x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "1",
     "x-ratelimit-reset-tokens": "9999h"},                                            # days away
    {"x-ratelimit-limit-tokens": "1" + "0" * 20, "x-ratelimit-remaining-tokens": "1"},  # absurd
])
def test_bad_budgets_are_ignored_with_a_debug_log(bad: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="llmclient.admit"):
        obs = parse_headers(bad)
    assert obs.tokens is None
    assert any("ignored" in r.message for r in caplog.records)


@pytest.mark.parametrize("bad", ["-3", "abc", "99999999999", "Thu, 01 Jan 2099 00:00:00 GMT"])
def test_bad_retry_after_is_ignored(bad: str) -> None:
    assert parse_headers({"retry-after": bad}).retry_after_s is None


def test_headers_without_limits_cost_nothing_and_say_nothing() -> None:
    obs = parse_headers({"content-type": "application/json"})
    assert obs.empty


HEADER_NAMES = ["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
                "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
                "ratelimit", "ratelimit-policy", "retry-after", "retry-after-ms"]


@given(st.dictionaries(st.sampled_from(HEADER_NAMES), st.text(max_size=40)))
def test_any_header_values_never_raise_and_stay_consistent(headers: dict[str, str]) -> None:
    obs = parse_headers(headers)
    for limits in (obs.requests, obs.tokens):
        if limits is not None:
            assert 0 <= limits.remaining <= limits.limit and limits.limit > 0 and limits.window_s > 0
            assert limits.reset_s is None or 0 <= limits.reset_s <= MAX_RESET_S
    assert obs.retry_after_s is None or 0 <= obs.retry_after_s <= MAX_RESET_S


def test_anthropics_headers_are_read_with_their_rfc3339_reset() -> None:
    """``anthropic-ratelimit-*`` (docs.anthropic.com/en/api/rate-limits): counts, and a reset as
    the time the budget is whole again; a reset that is no time drops that budget."""
    import datetime

    from llmclient.features.admit.headers import Limits, parse_headers

    now = 1_700_000_000.0
    at = datetime.datetime.fromtimestamp(now + 12, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    seen = parse_headers({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
                          "anthropic-ratelimit-requests-reset": at,
                          "anthropic-ratelimit-tokens-limit": "1000", "anthropic-ratelimit-tokens-remaining": "10",
                          "anthropic-ratelimit-tokens-reset": "soon"}, now)
    assert seen.requests == Limits(50, 49, 12.0, 60.0) and seen.tokens is None
    past = parse_headers({"anthropic-ratelimit-tokens-limit": "1000", "anthropic-ratelimit-tokens-remaining": "1001"}, now)
    assert past.tokens is None  # remaining above the limit: contradictory, dropped
