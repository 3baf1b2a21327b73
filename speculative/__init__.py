"""Speculative prefetch of likely follow-up requests, and warming of a server's prefix cache.

A leaf package: it works on plain request payloads (dicts in the OpenAI JSON shape) and on send
functions it is given, and knows nothing of any HTTP client. ``llmclient`` drives it.

    spec = Speculator(BudgetConfig(max_in_flight=2), predictor=FixedPredictor(["continue"]))
    spec.observe(request)                      # every call the app makes
    for p in spec.plan(request, answer, True):  # after an answer arrives
        run_in_thread(spec, p, send)            # send(p) -> tokens used; stores the answer
"""

from ._budget import Budget, BudgetConfig, Ticket
from ._followup import (
    assistant_message,
    conversation_id,
    followup_request,
    is_sampled,
    is_speculatable,
    last_user_text,
    prefix_request,
    tool_call_turn,
    warm_request,
)
from ._predictors import (
    CallbackPredictor,
    FixedPredictor,
    HistoryPredictor,
    Prediction,
    Predictor,
    TemplatePredictor,
    as_predictor,
    safe_predict,
    turn_kind,
)
from ._scheduler import (
    CancelToken,
    Prefetch,
    SpeculationStats,
    Speculator,
    fingerprint,
    run_in_task,
    run_in_thread,
)
from ._warm import PROVIDER_CACHE_TTL_S, refresh_due, refresh_interval

__all__ = [
    "PROVIDER_CACHE_TTL_S",
    "Budget",
    "BudgetConfig",
    "CallbackPredictor",
    "CancelToken",
    "FixedPredictor",
    "HistoryPredictor",
    "Prediction",
    "Predictor",
    "Prefetch",
    "SpeculationStats",
    "Speculator",
    "TemplatePredictor",
    "Ticket",
    "as_predictor",
    "assistant_message",
    "conversation_id",
    "fingerprint",
    "followup_request",
    "is_sampled",
    "is_speculatable",
    "last_user_text",
    "prefix_request",
    "refresh_due",
    "refresh_interval",
    "run_in_task",
    "run_in_thread",
    "safe_predict",
    "tool_call_turn",
    "turn_kind",
    "warm_request",
]
