"""The reference server's rate limits per API key (``--rpm``/``--tpm``): OpenAI's headers on
every answer, 429 in OpenAI's shape with ``retry-after-ms``, one budget per key. Against the
real server process, plus the limiter's arithmetic on a given clock."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from benchmarks.server.ratelimit import RateLimiter, estimate_tokens, format_duration
from llmclient.features.admit.headers import parse_duration, parse_headers
from tests.conftest import RefServer, start_ref_server, stop_ref_server

# A window long enough that nothing refills noticeably during a test on a busy machine.
WINDOW_S = 600


@pytest.fixture(scope="module")
def limited() -> Iterator[RefServer]:
    server = start_ref_server("--rpm", "50", "--tpm", "1000", "--ratelimit-window-s", str(WINDOW_S))
    yield server
    stop_ref_server(server)


def _chat(server: RefServer, key: str, max_tokens: int) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", headers={"authorization": f"Bearer {key}"},
                      json={"model": "gpt-4o-mini", "max_tokens": max_tokens,
                            "messages": [{"role": "user", "content": "abcd" * 10}]}, timeout=30)


@pytest.mark.parametrize("seconds", [0.0, 0.012, 0.5, 1.5, 59.9, 60.0, 360.0, 3723.0])
def test_resets_are_written_as_openai_writes_them_and_read_back(seconds: float) -> None:
    text = format_duration(seconds)
    back = parse_duration(text)
    assert back is not None and abs(back - seconds) <= 1.0


def test_the_limiter_refuses_what_does_not_fit_and_counts_it_against_nothing() -> None:
    lim = RateLimiter(rpm=None, tpm=100, window_s=10.0)
    body = {"messages": [{"role": "user", "content": "abcd"}], "max_tokens": 59}  # 60 tokens
    assert lim.admit("a", body, now=0.0).ok
    refused = lim.admit("a", body, now=0.0)
    assert not refused.ok and refused.kind == "tokens"
    assert refused.retry_after_s == pytest.approx(2.0)  # 20 more tokens at 10 a second
    assert lim.admit("b", body, now=0.0).ok  # another key, another budget
    assert lim.admit("a", body, now=2.0).ok  # the refill the 429 announced
    assert not lim.admit("a", {"max_tokens": 101}, now=100.0).ok  # never fits


def test_every_answer_carries_the_budgets_in_openai_and_ietf_headers(limited: RefServer) -> None:
    r = _chat(limited, "headers-key", 10)
    assert r.status_code == 200
    assert r.headers["x-ratelimit-limit-requests"] == "50"
    assert r.headers["x-ratelimit-limit-tokens"] == "1000"
    assert r.headers["x-ratelimit-remaining-requests"] == "49"
    assert r.headers["x-ratelimit-remaining-tokens"] == str(1000 - 20)  # 10 prompt + 10 cap
    obs = parse_headers(r.headers)
    assert obs.tokens is not None and obs.tokens.window_s == WINDOW_S and obs.tokens.remaining == 980
    assert obs.requests is not None and obs.requests.remaining == 49


def test_a_request_over_budget_gets_429_in_openais_shape_with_retry_after_ms(limited: RefServer) -> None:
    key = "refused-key"
    assert _chat(limited, key, 900).status_code == 200  # 910 of 1000
    r = _chat(limited, key, 200)
    assert r.status_code == 429
    err = r.json()["error"]
    assert err["code"] == "rate_limit_exceeded"
    assert "Limit 1000" in err["message"] and "Requested 210" in err["message"]
    wait_ms = int(r.headers["retry-after-ms"])
    assert 0 < wait_ms <= WINDOW_S * 1000
    assert int(r.headers["x-ratelimit-remaining-tokens"]) <= 90  # the refused call took nothing
    other = _chat(limited, "another-key", 200)  # keys do not share a budget
    assert other.status_code == 200


def test_a_request_that_can_never_fit_is_refused_without_a_retry_hint(limited: RefServer) -> None:
    r = _chat(limited, "huge-key", 5000)
    assert r.status_code == 429
    assert r.json()["error"]["code"] == "request_too_large"
    assert "retry-after-ms" not in r.headers


def test_the_server_and_the_client_estimate_a_call_alike() -> None:
    from llmclient.features.admit.cost import estimate_tokens as client_estimate

    bodies = [{"messages": [{"role": "user", "content": "hello " * 33}], "max_tokens": 7, "n": 3},
              {"input": ["a" * 17, "b" * 3]}, {"prompt": "xyz", "max_tokens": 4},
              {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                         {"type": "image_url", "image_url": {}}]}]}]
    for body in bodies:
        assert estimate_tokens(body) == client_estimate(body)
