"""The admit stage end to end, on both clients, against the reference server with limits
(``--tpm``; one budget per API key, so each test has its own key): what is learned, when calls
are paced, and the errors that come at once instead of a wait."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from llmclient.features.admit import BudgetTooSmallError
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server

TPM = 200  # per WINDOW_S; a call below costs PROMPT + its max_tokens
WINDOW_S = 1
PROMPT = "abcd" * 10  # 10 tokens


@pytest.fixture(scope="module")
def limited() -> Iterator[RefServer]:
    server = start_ref_server("--tpm", str(TPM), "--rpm", "100000", "--ratelimit-window-s", str(WINDOW_S))
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="module")
def long_window() -> Iterator[RefServer]:
    # 2000 tokens per 10 s: the same rate, but the 5% headroom (budget.HEADROOM) is 0.5 s, more
    # than a busy machine delays a call between its slot and the server.
    server = start_ref_server("--tpm", "2000", "--rpm", "100000", "--ratelimit-window-s", "10")
    yield server
    stop_ref_server(server)


def _client(drive: Drive, server: RefServer, **kw: Any) -> Any:
    return drive.client(base_url=server.base_url, api_key=f"k-{uuid.uuid4().hex}", **kw)


def _chat(drive: Drive, client: Any, max_tokens: int = 10, **kw: Any) -> Any:
    return drive(client.chat.completions.create(model="gpt-4o-mini", max_tokens=max_tokens,
                                                messages=[{"role": "user", "content": PROMPT}], **kw))


def _only(limits: dict[str, dict[str, Any]]) -> dict[str, Any]:
    assert len(limits) == 1, limits
    return next(iter(limits.values()))


def test_the_budgets_are_learned_from_the_first_answer(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited)
    assert client.rate_limits == {}
    _chat(drive, client)
    seen = _only(client.rate_limits)
    assert seen["tokens"]["limit"] == TPM and seen["tokens"]["window_s"] == WINDOW_S
    assert seen["requests"]["limit"] == 100000
    assert seen["pacing"] is False  # "auto": no 429 yet, nothing is held
    assert seen["refused_429"] == 0 and seen["paced_calls"] == 0


def test_auto_paces_once_the_server_refused_and_then_earns_no_more_429s(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited, max_retries=5)
    # 4 x 200 tokens, each the whole budget of 200 a second: a call is refused unless a full
    # second passed since the last one (calls of 60 tokens were not, once: on a busy machine
    # four of them took longer than the 0.2 s of refill their excess needed).
    for _ in range(4):
        _chat(drive, client, max_tokens=190)
    seen = _only(client.rate_limits)
    assert seen["refused_429"] >= 1 and seen["pacing"] is True
    refused = seen["refused_429"]
    for _ in range(4):  # each needs 0.8 s of refill: all of them wait, none is refused
        _chat(drive, client, max_tokens=150)
    seen = _only(client.rate_limits)
    assert seen["refused_429"] == refused  # paced: it waited instead of being refused
    assert seen["paced_calls"] >= 1
    assert seen["others_seen"] == 0  # alone on its key: its own model explains every answer


def test_auto_does_not_pace_a_budget_that_others_spend_unseen(drive: Drive, long_window: RefServer) -> None:
    key = f"k-{uuid.uuid4().hex}"
    mine = drive.client(base_url=long_window.base_url, api_key=key)
    other = drive.client(base_url=long_window.base_url, api_key=key)  # another process, in effect
    _chat(drive, mine, max_tokens=190)
    for _ in range(3):  # 600 tokens: 3 s of the budget's 10 s, unseen by ``mine``
        _chat(drive, other, max_tokens=190)
    _chat(drive, mine, max_tokens=190)
    seen = _only(mine.rate_limits)
    assert seen["others_seen"] >= 1 and seen["pacing"] is False


def test_pacing_true_keeps_concurrent_callers_clear_of_429s(drive: Drive, long_window: RefServer) -> None:
    client = _client(drive, long_window, pacing=True, max_retries=0)
    _chat(drive, client)  # learn the budget
    results = drive.gather([lambda: client.chat.completions.create(
        model="gpt-4o-mini", max_tokens=190, messages=[{"role": "user", "content": PROMPT}])
        for _ in range(12)], workers=6)  # 12 x 200 tokens: past the budget, so calls wait
    assert len(results) == 12  # max_retries=0: a single 429 would have raised
    seen = _only(client.rate_limits)
    assert seen["refused_429"] == 0


def test_a_wait_past_the_calls_timeout_raises_at_once_and_sends_nothing(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited, pacing=True, max_retries=0)
    _chat(drive, client, max_tokens=150)  # 160 of 200
    with pytest.raises(llmclient.APITimeoutError, match="rate-limit budget"):
        _chat(drive, client, max_tokens=150, timeout=0.05)  # needs ~0.6 s of refill
    assert _only(client.rate_limits)["refused_429"] == 0


def test_a_call_that_could_never_fit_says_so_at_once(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited, pacing=True)
    _chat(drive, client)
    with pytest.raises(BudgetTooSmallError, match="more than the whole budget of 200 tokens"):
        _chat(drive, client, max_tokens=500)
    assert isinstance(BudgetTooSmallError("x"), llmclient.OpenAIError)


def test_a_server_without_headers_is_never_paced(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", pacing=True)
    _chat(drive, client)
    assert client.rate_limits == {}


def test_pacing_false_learns_nothing_and_holds_nothing(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited, pacing=False)
    _chat(drive, client)
    assert client.rate_limits == {}


def test_with_options_keeps_the_pacing_setting(drive: Drive, limited: RefServer) -> None:
    client = _client(drive, limited, pacing=True)
    assert client.with_options(timeout=5)._pacing is True
    with pytest.raises(ValueError, match="pacing must be"):
        drive.client(base_url=limited.base_url, api_key="k", pacing="sometimes")
