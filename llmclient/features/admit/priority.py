"""A call's priority on the wire: ``priority="low"`` for work that may wait (a batch job).

Two forms reach a server:

* The ``x-llm-priority: low`` header, always (prefetches and warm-ups carry it too). llmclient's
  own admit stage reads it (a low call leaves a share of the rate-limit budget to the others)
  and so does the reference server; other servers ignore it.
* vLLM's ``priority`` body field (chat, completions, embeddings, responses), only with
  ``priority_field=True``: vLLM's
  ``--scheduling-policy priority`` runs lower values first (default 0) and, where a waiting
  request outranks running ones, preempts them. A low call is sent :data:`VLLM_LOW`. Opt-in
  because no answer tells a client what the field means: vLLM under its default ``fcfs`` policy
  answers 400 ("Got priority 1 but Priority scheduling is not enabled."), a strict gateway
  answers 400 or 422 naming it, api.openai.com knows no such field, and SGLang's
  ``--enable-priority-scheduling`` runs *higher* values first unless started with
  ``--schedule-low-priority-values-first``, so the same number would put a batch job ahead.
  An origin that refuses it (:func:`refused`: a 400 or 422 naming ``priority``, which proves the
  request did not run) is sent the call again without it, once, and never again.

Pure; the client's build stage calls :func:`check` and :func:`header`, the encode stage
:func:`body_value` and the send loop :func:`refused`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FIELD", "HEADER", "LOW", "PATHS", "VALUES", "VLLM_LOW", "body_value", "check", "check_field",
           "header", "refused"]

HEADER = "x-llm-priority"
LOW = "low"
VALUES = ("low", "normal")
FIELD = "priority"
# vLLM's request ``priority`` (its OpenAI request models, vllm/entrypoints/openai/...protocol.py,
# read 2026-12: "lower means earlier handling; default: 0. Any priority other than 0 will raise
# an error if the served model does not use priority scheduling"). A low call sends 1.
VLLM_LOW = 1
# Where vLLM reads the field (and answers 400 under fcfs): its chat, completion, embedding and
# responses requests each carry ``priority: int = 0``.
PATHS = frozenset({"/chat/completions", "/completions", "/embeddings", "/responses"})


def check(value: Any) -> str | None:
    """The ``priority`` option as given (None: leave the call as it is), or ValueError."""
    if value is None or value in VALUES:
        return value
    hint = f" (a number for vLLM goes as it is in extra_body={{'priority': {value}}})" if isinstance(value, int) else ""
    raise ValueError(f"priority must be 'low', 'normal' or None, got {value!r}{hint}")


def check_field(value: Any) -> bool:
    """The ``priority_field`` option, or ValueError."""
    if not isinstance(value, bool):
        raise ValueError(f"priority_field must be True or False, got {value!r}")
    return value


def header(headers: dict[str, str], option: str | None) -> None:
    """Mark ``headers`` (lower-cased names) as ``option`` asks: ``low`` sets the header,
    ``normal`` removes it (a call of a low-priority client that must not wait), None leaves
    whatever the app put in ``extra_headers``."""
    if option == LOW:
        headers[HEADER] = LOW
    elif option is not None:
        headers.pop(HEADER, None)


def body_value(headers: dict[str, str], path: str, body: dict[str, Any] | None, accepted: bool) -> int | None:
    """vLLM's ``priority`` to add to this body, or None: not a low call, another endpoint, the app
    set the field itself (sent as it is), or the origin refused it before (``accepted`` False)."""
    if not accepted or headers.get(HEADER) != LOW or path not in PATHS or not body or FIELD in body:
        return None
    return VLLM_LOW


def refused(status: int, raw: bytes) -> bool:
    """True when an error answer says the origin does not take the field: a 400 or 422 (the
    request was validated and not run) whose body names ``priority`` (vLLM's "Got priority 1 but
    Priority scheduling is not enabled.", Azure's "Unrecognized request argument supplied:
    priority", pydantic's ``"loc": ["body", "priority"]``)."""
    return status in (400, 422) and FIELD.encode() in raw.lower()
