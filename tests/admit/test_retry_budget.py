"""The retry budget per origin (features/admit/retry_budget.py; gRPC's retry throttling): the
arithmetic alone, then through ``OpenAI`` and ``AsyncOpenAI`` (``drive``) against the reference
server answering 503, the official client beside it as the control, and two processes sharing
one budget through a real Redis (``retry_shared.py``)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import llmclient
from llmclient.features.admit import retry_budget as rb
from llmclient.pipeline import retry as _retry
from tests._both import Drive
from tests.conftest import ROOT, RefServer, start_ref_server, stop_ref_server

MSG = [{"role": "user", "content": "hi"}]
DOWN = {"x-fault": "status=503"}
_POST = re.compile(r"request_id=(\S+) .* POST /v1/chat/completions (\d+)")


# -- the arithmetic --------------------------------------------------------------------------------


def test_retries_stop_at_half_the_bucket_and_successes_bring_them_back() -> None:
    bucket = rb.Bucket(rb.RetryBudget(max_tokens=4, token_ratio=0.5))  # threshold 2
    assert bucket.failed()  # 3 > 2
    bucket.succeeded()  # 3.5
    assert bucket.failed()  # 2.5
    assert not bucket.failed()  # 1.5: at or below half, no retry
    assert not bucket.failed() and bucket.tokens == 0.5
    assert not bucket.failed() and bucket.tokens == 0.0  # never below 0
    for _ in range(5):
        bucket.succeeded()
    assert bucket.tokens == 2.5 and bucket.failed() is False  # 1.5 after the failure
    for _ in range(20):
        bucket.succeeded()
    assert bucket.tokens == 4.0  # never above the top


@given(st.lists(st.booleans(), max_size=400), st.sampled_from([(10.0, 0.1), (10.0, 0.2), (100.0, 0.05)]))
def test_retries_are_at_most_half_the_bucket_plus_the_ratio_of_successes(outcomes: list[bool],
                                                                         policy: tuple[float, float]) -> None:
    # Each outcome an attempt's: True a success, False a retryable failure that wants a retry.
    budget = rb.RetryBudget(*policy)
    bucket = rb.Bucket(budget)
    allowed = sum(bucket.failed() for ok in outcomes if not ok or bucket.succeeded())
    successes = sum(outcomes)
    assert allowed <= budget.threshold + budget.token_ratio * successes


def _lost_share(budget: rb.RetryBudget | None, failure_rate: float, runs: int = 200, calls: int = 300) -> float:
    """Calls that end in an error, each attempt failing at ``failure_rate`` (retryable),
    ``max_retries=2``, seeded; None: no budget."""
    lost = 0
    for run in range(runs):
        rng = random.Random(run)
        bucket = rb.Bucket(budget) if budget is not None else None
        for _ in range(calls):
            for attempt in range(3):
                if rng.random() >= failure_rate:
                    if bucket is not None:
                        bucket.succeeded()
                    break
                allowed = bucket.failed() if bucket is not None else True
                if not allowed or attempt == 2:
                    lost += 1
                    break
    return lost / (runs * calls)


def test_a_sick_but_answering_origin_keeps_its_retries() -> None:
    """The faults benchmark's mix: 12 % of answers 429/503/504/reset. gRFC A6's example budget
    (10 tokens, 0.1) drains there and fails about 8 % of calls (the official client, retrying
    all, failed none of 300); the defaults lose about what retries alone lose (0.12^3)."""
    unlimited = _lost_share(None, 0.12)
    assert _lost_share(rb.RetryBudget(), 0.12) <= unlimited + 0.002
    assert _lost_share(rb.RetryBudget(max_tokens=10, token_ratio=0.1), 0.12) > 0.05  # why not A6's


def test_a_full_outage_costs_about_one_attempt_per_call() -> None:
    budget = rb.RetryBudget()
    bucket = rb.Bucket(budget)
    attempts = 0
    for _ in range(1000):  # every attempt fails; each call may retry twice
        for _try in range(3):
            attempts += 1
            if not bucket.failed():
                break
    assert attempts <= 1000 + budget.threshold * 2  # not 3,000


def _burst_refusals(cost: float, prob: float, burst: int, runs: int = 20, attempts: int = 20_000) -> tuple[float, float]:
    """(share of attempts failed, retries refused per run) under the reference server's burst
    fault (``prob=P;burst=N``: once it fires, the next N - 1 attempts fail too), each failure
    taking ``cost`` tokens of a default budget, seeded."""
    failed = refused = 0
    for run in range(runs):
        rng, left, bucket = random.Random(run), 0, rb.Bucket(rb.RetryBudget())
        for _ in range(attempts):
            if left or rng.random() < prob:
                left = left - 1 if left else burst - 1
                failed += 1
                refused += not bucket.failed(cost)
            else:
                bucket.succeeded()
    return failed / (runs * attempts), refused / runs


def test_bursts_of_shed_answers_under_a_fifth_of_the_answers_keep_their_retries() -> None:
    """Anthropic's 529 comes in bursts (every call in flight at once): at a full token a burst
    of 8 takes 8 of 20, and two close together spend the bucket though four answers in five
    succeed; a 529 takes a quarter (the figures in retry_budget's docstring)."""
    assert rb.failure_cost(529) == rb.SHED_COST == 0.25
    assert rb.failure_cost(503) == rb.failure_cost(500) == rb.failure_cost(None) == 1.0
    for prob, burst, share in ((0.025, 8, 0.172), (0.03, 8, 0.200), (0.0215, 10, 0.182)):
        got_share, refused_shed = _burst_refusals(rb.failure_cost(529), prob, burst)
        assert abs(got_share - share) < 0.005
        _, refused_full = _burst_refusals(1.0, prob, burst)
        assert refused_shed < 5 and refused_full > 1000  # per 20,000 attempts


def test_a_full_shed_outage_still_stops_retrying() -> None:
    budget = rb.RetryBudget()
    bucket = rb.Bucket(budget)
    attempts = 0
    for _ in range(1000):  # every attempt a 529; each call may retry twice
        for _try in range(3):
            attempts += 1
            if not bucket.failed(rb.failure_cost(529)):
                break
    assert attempts <= 1000 + budget.threshold / rb.SHED_COST * 2  # 40 retries, not 2,000
    assert rb.apply(20.0, budget, 4 * rb.SHED_COST, 0) == 19.0  # what the shared script applies


def test_the_budget_option_is_checked_and_named() -> None:
    assert isinstance(rb.check_retry_budget(None), rb.RetryBudget)
    assert rb.check_retry_budget(False) is None
    mine = rb.RetryBudget(max_tokens=20, token_ratio=0.2)
    assert rb.check_retry_budget(mine) is mine
    for bad in ("yes", 3, {"max_tokens": 1}):
        with pytest.raises(ValueError, match="retry_budget"):
            llmclient.OpenAI(api_key="k", retry_budget=bad)
    with pytest.raises(ValueError, match="max_tokens"):
        rb.RetryBudget(max_tokens=0.5)
    with pytest.raises(ValueError, match="token_ratio"):
        rb.RetryBudget(token_ratio=0)
    assert rb.origin_of("HTTPS://User:pw@API.example.com:8443/v1/") == "https://api.example.com:8443"


def test_overload_answers_wait_full_jitter_and_honour_what_the_server_asks() -> None:
    rng = random.Random(5)
    for status in (429, 503, 529):
        waits = [_retry.status_retry(status, {}, 1, 2, rng) for _ in range(400)]
        assert all(w is not None and 0.0 <= w <= 1.0 for w in waits)
        assert min(w for w in waits if w is not None) < 0.25  # full jitter: down to 0, not 0.75 x
    plain = [_retry.status_retry(500, {}, 1, 2, rng) for _ in range(200)]
    assert all(p is not None and 0.75 <= p <= 1.0 for p in plain)  # not overload: 25 % jitter
    assert _retry.status_retry(503, {"retry-after-ms": "1500"}, 0, 2) == 1.5
    assert _retry.status_retry(429, {"retry-after": "7"}, 0, 2) == 7.0
    assert _retry.status_retry(503, {"retry-after": "600"}, 0, 2) is None  # asked past the cap
    assert _retry.status_retry(500, {"retry-after": "600"}, 0, 2) is not None  # 500 says nothing of load
    assert _retry.status_retry(503, {"x-should-retry": "false"}, 0, 2) is None
    assert _retry.status_retry(400, {"x-should-retry": "true"}, 0, 2) is not None
    assert _retry.status_retry(503, {}, 2, 2) is None


# -- through the clients, against the reference server ---------------------------------------------


@pytest.fixture(scope="module")
def logged() -> Iterator[RefServer]:
    server = start_ref_server("--allow-fault-headers", "--access-log")
    yield server
    stop_ref_server(server)


def _attempts(server: RefServer, ids: list[str]) -> int:
    """How many of these calls' attempts reached the server (its access log)."""
    assert server.log_path is not None
    deadline = time.monotonic() + 10  # the server logs a request just after answering it
    last, stable_since = -1, time.monotonic()
    while True:
        seen = Counter(m.group(1) for m in _POST.finditer(server.log_path.read_text()))
        total = sum(seen[i] for i in ids)
        if total != last:
            last, stable_since = total, time.monotonic()
        elif all(seen[i] for i in ids) and time.monotonic() - stable_since > 0.5:
            return total
        if time.monotonic() > deadline:
            return total
        time.sleep(0.05)


def _failing(drive: Drive, c: Any, n: int) -> tuple[list[Any], list[str]]:
    errors, ids = [], []
    for i in range(n):
        rid = f"rb-{time.monotonic_ns()}-{i}"
        ids.append(rid)
        with pytest.raises(llmclient.InternalServerError) as info:
            drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                            extra_headers={**DOWN, "x-request-id": rid}))
        errors.append(info.value)
    return errors, ids


def test_an_origin_that_fails_every_call_gets_a_handful_of_retries_then_none(drive: Drive, logged: RefServer) -> None:
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=2, timeout=30)
    errors, ids = _failing(drive, c, 12)
    attempts = _attempts(logged, ids)
    assert attempts <= 12 + rb.RetryBudget().threshold  # max_tokens / 2 retries, not 2 per call (36 attempts)
    refused = [e for e in errors if getattr(e, "retry_budget", None)]
    assert refused and all(e.timings.retries == 0 for e in refused[1:])  # failed at once
    last = errors[-1]
    assert last.retry_budget == rb.origin_of(logged.base_url)
    assert "retry budget" in str(last) and "retry_budget=" in str(last) and last.trace_id in str(last)
    assert isinstance(last, llmclient.InternalServerError) and last.status_code == 503
    state = c.retry_budgets[rb.origin_of(logged.base_url)]
    assert state["spent"] and state["refused"] >= 1


def test_rate_limit_answers_never_spend_the_budget(drive: Drive, logged: RefServer) -> None:
    # A 429 is a quota answer from an origin that is up: 12 calls refused by it every time are
    # each retried in full (after the server's retry-after), as the official client does.
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=2, timeout=30)
    ids = []
    for i in range(12):
        rid = f"rb429-{time.monotonic_ns()}-{i}"
        ids.append(rid)
        with pytest.raises(llmclient.RateLimitError) as info:
            drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                            extra_headers={"x-fault": "status=429;retry_after=0.01", "x-request-id": rid}))
        assert not getattr(info.value, "retry_budget", None) and info.value.timings.retries == 2
    assert _attempts(logged, ids) == 36
    state = c.retry_budgets.get(rb.origin_of(logged.base_url))
    assert state is None or not state["spent"]  # never asked, or never spent


def test_a_refused_connect_never_spends_the_budget(drive: Drive) -> None:
    # Nothing listens on a (non-loopback) port of this machine: each refusal is retried with
    # backoff as the official client does; no server was reached, so the budget is not asked.
    # Counted, the 20-token bucket would refuse the 4th call's retries.
    from tests._addresses import refused_url

    c = drive.client(base_url=refused_url(), api_key="k", max_retries=2, timeout=10)
    for _ in range(5):
        with pytest.raises(llmclient.APIConnectionError) as info:
            drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2))
        assert not getattr(info.value, "retry_budget", None) and info.value.timings.retries == 2


def test_successes_refill_the_budget_and_retries_come_back(drive: Drive, logged: RefServer) -> None:
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=1, timeout=30,
                     retry_budget=llmclient.RetryBudget(max_tokens=4, token_ratio=0.5))
    errors, _ = _failing(drive, c, 4)  # tokens 4 -> 0; retries while above 2
    assert errors[-1].retry_budget
    for _ in range(8):  # +4 tokens: 3 > 2 once a failure takes one
        drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2))
    again, _ = _failing(drive, c, 1)
    assert again[0].timings.retries == 1 and not getattr(again[0], "retry_budget", None)


def test_without_a_budget_every_call_is_retried_as_the_official_client_does(drive: Drive, logged: RefServer) -> None:
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=2, timeout=30, retry_budget=False)
    errors, ids = _failing(drive, c, 4)
    assert _attempts(logged, ids) == 12 and all(e.timings.retries == 2 for e in errors)
    assert c.retry_budgets == {}


def test_the_official_client_retries_every_failing_call_in_full(logged: RefServer) -> None:
    openai = pytest.importorskip("openai")  # the control: (1 + max_retries) attempts per call
    c = openai.OpenAI(base_url=logged.base_url, api_key="k", max_retries=2, timeout=30)
    ids = [f"official-{time.monotonic_ns()}-{i}" for i in range(6)]

    def call(rid: str) -> None:
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2,
                                      extra_headers={**DOWN, "x-request-id": rid})

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(call, ids))
    assert _attempts(logged, ids) == 18


def test_one_budget_per_client_family(logged: RefServer) -> None:
    c = llmclient.OpenAI(base_url=logged.base_url, api_key="k", max_retries=2)
    copy = c.with_options(timeout=10)
    assert copy._ctx.retry_budget is c._ctx.retry_budget  # a copy shares the buckets
    other = llmclient.OpenAI(base_url=logged.base_url, api_key="k")
    assert other._ctx.retry_budget is not c._ctx.retry_budget  # a client of its own has its own


# -- two processes, one Redis ------------------------------------------------------------------------


def test_processes_sharing_redis_share_one_budget(drive: Drive, logged: RefServer, redis_url: str) -> None:
    # Process A spends the budget of the origin; this process (B), fresh, starts from the
    # fleet's tokens: its first failing call is refused a retry at once.
    done = subprocess.run([sys.executable, "-m", "tests.admit._retry_worker", logged.base_url, redis_url, "10"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    a = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(a["retries"]) <= rb.RetryBudget().threshold and a["refused"] >= 1
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=2, timeout=30, redis=redis_url, pacing=False)
    errors, ids = _failing(drive, c, 1)
    assert errors[0].timings.retries == 0 and errors[0].retry_budget
    assert _attempts(logged, ids) == 1
    assert c.retry_budgets[rb.origin_of(logged.base_url)]["shared"]


def test_redis_down_means_each_process_decides_alone(drive: Drive, logged: RefServer) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
    c = drive.client(base_url=logged.base_url, api_key="k", max_retries=1, timeout=30, redis=dead, pacing=False)
    answer = drive(c.chat.completions.create(model="sim-zero", messages=MSG, max_tokens=2))
    assert answer.choices[0].message.content  # Redis down never fails a call
    errors, _ = _failing(drive, c, 1)
    assert errors[0].timings.retries == 1  # its own (full) bucket allowed the retry
