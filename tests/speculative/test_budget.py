import pytest

from llmclient.speculative import Budget, BudgetConfig, Ticket


def test_in_flight_cap_refuses_until_release():
    budget = Budget(BudgetConfig(max_in_flight=1, max_load_share=1.0, burst=5))
    for _ in range(3):
        budget.on_app_call()
    first = budget.try_acquire(10, now=0.0)
    assert isinstance(first, Ticket)
    assert budget.try_acquire(10, now=0.0) == "max_in_flight"
    budget.release(first, used=10)
    assert isinstance(budget.try_acquire(10, now=0.0), Ticket)


def test_load_share_earned_from_app_calls():
    budget = Budget(BudgetConfig(max_in_flight=100, max_load_share=0.5, burst=10))
    granted = 0
    budget.credit = 0.0
    for _ in range(20):
        budget.on_app_call()
        ticket = budget.try_acquire(1, now=0.0)
        if isinstance(ticket, Ticket):
            granted += 1
            budget.release(ticket, used=1)
    assert granted == 10  # 0.5 prefetch per app call


def test_burst_caps_banked_credit():
    budget = Budget(BudgetConfig(max_in_flight=100, max_load_share=1.0, burst=3))
    for _ in range(50):
        budget.on_app_call()
    tickets = [budget.try_acquire(1, now=0.0) for _ in range(5)]
    assert [isinstance(t, Ticket) for t in tickets] == [True, True, True, False, False]


def test_tokens_per_minute_window_and_reconciliation():
    budget = Budget(BudgetConfig(max_in_flight=10, max_load_share=5, burst=10, max_tokens_per_minute=100))
    budget.on_app_call()
    t1 = budget.try_acquire(80, now=0.0)
    assert isinstance(t1, Ticket)
    assert budget.try_acquire(30, now=1.0) == "max_tokens_per_minute"
    budget.release(t1, used=20)  # it used fewer tokens than reserved
    assert isinstance(budget.try_acquire(30, now=2.0), Ticket)
    assert budget.tokens_in_window(now=2.0) == 50
    assert budget.tokens_in_window(now=61.0) == 30  # the first reservation left the window


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="max_load_share"):
        BudgetConfig(max_load_share=-1)
