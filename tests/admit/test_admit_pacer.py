"""The pacer's bookkeeping on given answers (no server): what a 429 holds, what it gives back."""

from __future__ import annotations

from llmclient.features.admit import Pacer

URL, SCOPE = "https://api.example/v1", "s" * 64
BODY = {"messages": [{"role": "user", "content": "abcd"}], "max_tokens": 9}  # 10 tokens
BUDGET = {"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "1000",
          "x-ratelimit-reset-tokens": "0s"}


def test_a_bare_retry_after_holds_only_its_own_call() -> None:
    pacer = Pacer("auto")
    pacer.settle(None, URL, SCOPE, 429, {"retry-after": "20"})  # a proxy's, or an injected fault
    ticket = pacer.admit(URL, SCOPE, BODY, timeout_s=None)
    assert ticket is not None and ticket.wait_s == 0.0


def test_a_retry_after_with_the_budget_holds_every_call_of_the_credential() -> None:
    pacer = Pacer("auto")
    pacer.settle(None, URL, SCOPE, 429, {**BUDGET, "x-ratelimit-remaining-tokens": "0",
                                         "x-ratelimit-reset-tokens": "60s", "retry-after": "20"})
    ticket = pacer.admit(URL, SCOPE, BODY, timeout_s=None)
    assert ticket is not None and 19.0 < ticket.wait_s <= 60.0
    assert pacer.admit(URL, "another-credential", BODY, timeout_s=None) is None


def test_nothing_is_held_before_a_429_and_refused_reservations_are_given_back() -> None:
    pacer = Pacer("auto")
    pacer.settle(None, URL, SCOPE, 200, {**BUDGET, "x-ratelimit-remaining-tokens": "5",
                                         "x-ratelimit-reset-tokens": "59.7s"})
    learning = pacer.admit(URL, SCOPE, BODY, timeout_s=None)
    assert learning is not None and not learning.reserved and learning.wait_s == 0.0  # auto: not yet
    pacer.settle(learning, URL, SCOPE, 429, {**BUDGET, "x-ratelimit-remaining-tokens": "5",
                                             "x-ratelimit-reset-tokens": "59.7s"})
    (entry,) = pacer.snapshot().values()
    assert entry["pacing"] is True and entry["refused_429"] == 1 and entry["in_flight"] == 0
    paced = pacer.admit(URL, SCOPE, BODY, timeout_s=None)
    assert paced is not None and paced.reserved and paced.wait_s > 0.0
