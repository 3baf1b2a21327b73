"""Pure functions that turn one finished call into the requests that may follow it.

A request here is the plain JSON payload of ``/chat/completions`` (a dict); an answer is the
response body in OpenAI's shape. Nothing here performs I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

# Parameters that only shape the output's length: a warm-up request overrides them.
_OUTPUT_LENGTH_KEYS = ("max_tokens", "max_completion_tokens", "n", "stream", "stream_options")


def assistant_message(answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The assistant turn to append for the first choice of ``answer`` (None when unusable)."""
    choices = answer.get("choices") or []
    if not choices:
        return None
    message = choices[0].get("message") or {}
    if message.get("tool_calls"):
        # A follow-up to a tool call is the tool's result, which we cannot predict.
        return None
    content = message.get("content")
    if not isinstance(content, str):
        return None
    return {"role": "assistant", "content": content}


def tool_call_turn(answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The assistant tool-call turn of ``answer``'s first choice, as an app sends it back.

    ``{"role": "assistant", "content": <text or None>, "tool_calls": [{"id", "type",
    "function": {"name", "arguments"}}]}``: the shape of OpenAI's chat-completions request
    (platform.openai.com/docs/api-reference/chat/create, assistant message, read 2026-12) and
    of ``ToolCallCollector.message()``; the keys in that order, so a server that renders the
    calls as JSON sees the same bytes as the app's next turn. None when the first choice has
    no tool calls or a call lacks its id or name (a cut stream).
    """
    choices = answer.get("choices") or []
    if not choices:
        return None
    message = choices[0].get("message") or {}
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    out = []
    for call in calls:
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not call.get("id") or not fn.get("name"):
            return None
        out.append({"id": call["id"], "type": call.get("type") or "function",
                    "function": {"name": fn["name"], "arguments": fn.get("arguments") or ""}})
    content = message.get("content")
    # A stream's first delta carries content "" (merged: ""); the app's message has None.
    return {"role": "assistant", "content": content if isinstance(content, str) and content else None,
            "tool_calls": out}


def prefix_request(request: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The prompt the next turn starts with: ``request``'s messages plus the answer's turn.

    A text answer adds ``{"role": "assistant", "content": ...}``; an answer ending in tool calls
    adds the tool-call turn (:func:`tool_call_turn`), so the next turn (that plus the tools'
    results) shares the whole prefix. Everything else of the request (model, tools,
    tool_choice, response_format, ...) is kept: it is part of the prompt. None when the answer
    gives neither.
    """
    turn = tool_call_turn(answer) or assistant_message(answer)
    if turn is None:
        return None
    prefix = dict(request)
    prefix["messages"] = [*(request.get("messages") or []), turn]
    return prefix


def followup_request(
    request: Mapping[str, Any], answer: Mapping[str, Any], user_message: str
) -> dict[str, Any] | None:
    """The exact payload the app would send next if the user says ``user_message``.

    Same model and parameters; the conversation extended by the answer and the new user turn.
    Returns None when the turn cannot be extended (tool calls, no text answer).
    """
    reply = assistant_message(answer)
    if reply is None:
        return None
    messages = list(request.get("messages") or [])
    follow = dict(request)
    follow["messages"] = [*messages, reply, {"role": "user", "content": user_message}]
    return follow


def warm_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """A request that makes the server prefill (and cache) ``request``'s prompt, and little else.

    Generation is capped at one token; everything that is part of the prompt (model, messages,
    tools, response_format) is kept so the server's prefix cache sees the same prefix.
    """
    warm = {k: v for k, v in request.items() if k not in _OUTPUT_LENGTH_KEYS}
    warm["max_tokens"] = 1
    warm["stream"] = False
    return warm


def is_speculatable(request: Mapping[str, Any], *, allow_tools: bool = False,
                    warm: bool = False) -> tuple[bool, str]:
    """Whether a request may be sent speculatively, and why not.

    A request that offers tools may make the model call them, and an app acting on a prefetched
    tool call would act on something the user never asked for: refused unless allowed. A
    warm-up (``warm=True``) is exempt: its one-token answer is discarded, never shown to the app.
    """
    if not isinstance(request.get("messages"), list) or not request["messages"]:
        return False, "no messages"
    if not (allow_tools or warm) and (request.get("tools") or request.get("functions")):
        return False, "request offers tools (pass allow_tools=True to speculate anyway)"
    if (request.get("n") or 1) != 1:
        return False, "n > 1"
    return True, ""


def is_sampled(request: Mapping[str, Any]) -> bool:
    """True when the answer is a random sample (temperature above 0 and no seed)."""
    temperature = request.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    return float(temperature) > 0 and request.get("seed") is None


def conversation_id(messages: Sequence[Mapping[str, Any]]) -> str:
    """A stable id for a conversation prefix: the hash of its canonical encoding."""
    data = orjson.dumps(list(messages), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:32]


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the last user message ('' when none or not text)."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    part.get("text", "") for part in content if part.get("type") == "text"
                )
            return ""
    return ""
