"""Tool calls handed over early from a chat-completions stream (pure: chunks in, calls out).

A model that calls several tools writes them one after the other in one stream; apps and
frameworks usually start the tools only when the whole response has ended, although the first
call's arguments were complete long before. :class:`ToolCallCollector` follows the stream's
chunks and says, for each chunk, which tool calls became complete with it, so the app can start
each one while the model writes the next (``stream.tool_calls()`` is the iterator over them).

When a call is complete (the first that holds, per choice):

- its ``function.arguments`` so far parse as a JSON object (an object cannot go on once its
  closing brace came: what follows could only make it invalid), and its id and name came;
- a fragment of a later call (a higher ``index``) arrives: the model moved on;
- the choice's ``finish_reason`` arrives, or the stream ends.

Nothing the app reads changes: the chunks go on as they came, and :meth:`message` is the
assistant message they make (content and every tool call), as accumulating them gives. A server
that sent more of a call after it looked complete (not valid JSON then) is noted in
:attr:`changed`; the message always holds what came.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .._logging import logger

__all__ = ["ReadyToolCall", "ToolCallCollector"]


@dataclass(frozen=True)
class ReadyToolCall:
    """A tool call whose arguments are complete: ``index`` (its place in the message's
    ``tool_calls``), ``id``, ``name``, ``arguments`` (the JSON text as sent), ``choice``."""

    index: int
    id: str | None
    name: str | None
    arguments: str
    choice: int = 0
    type: str = "function"

    def parsed(self) -> Any:
        """The arguments as Python values (raises ValueError when they are not JSON)."""
        return orjson.loads(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        """The call as the next request's assistant message carries it."""
        return {"id": self.id, "type": self.type,
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class _Call:
    index: int
    id: str | None = None
    type: str = "function"
    name: str | None = None
    parts: list[str] = field(default_factory=list)
    ready: bool = False


@dataclass
class _Choice:
    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    role: str | None = None
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


class ToolCallCollector:
    """Follows one chat-completions stream; :meth:`feed` each chunk (typed or a dict)."""

    def __init__(self) -> None:
        self._choices: dict[int, _Choice] = {}
        self.changed: list[tuple[int, int]] = []  # (choice, index) of calls that grew after ready

    def feed(self, chunk: Any) -> list[ReadyToolCall]:
        """The tool calls this chunk completed, in index order."""
        out: list[ReadyToolCall] = []
        for c in _get(chunk, "choices") or ():
            i = _get(c, "index") or 0
            state = self._choices.get(i)
            if state is None:
                state = self._choices[i] = _Choice()
            delta = _get(c, "delta")
            if delta is not None:
                role, text, refusal = _get(delta, "role"), _get(delta, "content"), _get(delta, "refusal")
                if role:
                    state.role = role
                if text:
                    state.content.append(text)
                if refusal:
                    state.refusal.append(refusal)
                for frag in _get(delta, "tool_calls") or ():
                    self._fragment(i, state, frag, out)
            reason = _get(c, "finish_reason")
            if reason:
                state.finish_reason = reason
                out.extend(self._release(i, state, None))
        return out

    def finish(self) -> list[ReadyToolCall]:
        """The stream ended: every call not handed over yet."""
        out: list[ReadyToolCall] = []
        for i, state in sorted(self._choices.items()):
            out.extend(self._release(i, state, None))
        return out

    def _fragment(self, i: int, state: _Choice, frag: Any, out: list[ReadyToolCall]) -> None:
        index = _get(frag, "index") or 0
        call = state.calls.get(index)
        if call is None:
            out.extend(self._release(i, state, index))  # a later call began: the earlier are done
            call = state.calls[index] = _Call(index)
        if _get(frag, "id"):
            call.id = _get(frag, "id")
        if _get(frag, "type"):
            call.type = _get(frag, "type")
        fn = _get(frag, "function")
        args = None
        if fn is not None:
            if _get(fn, "name"):
                call.name = _get(fn, "name")
            args = _get(fn, "arguments")
            if isinstance(args, str) and args:
                if call.ready:
                    self.changed.append((i, index))
                    logger.warning("a tool call (choice %d, index %d) got more arguments after they "
                                   "were a complete JSON object", i, index)
                call.parts.append(args)
        if not call.ready and args and call.id is not None and call.name is not None and _complete(call.parts):
            call.ready = True
            out.append(_ready(i, call))

    @staticmethod
    def _release(i: int, state: _Choice, below: int | None) -> list[ReadyToolCall]:
        out = []
        for index in sorted(state.calls):
            call = state.calls[index]
            if (below is None or index < below) and not call.ready:
                call.ready = True
                out.append(_ready(i, call))
        return out

    def message(self, choice: int = 0) -> dict[str, Any]:
        """The assistant message the chunks of ``choice`` make (what the next turn sends back)."""
        state = self._choices.get(choice) or _Choice()
        msg: dict[str, Any] = {"role": state.role or "assistant",
                               "content": "".join(state.content) if state.content else None}
        if state.refusal:
            msg["refusal"] = "".join(state.refusal)
        if state.calls:
            msg["tool_calls"] = [_ready(choice, state.calls[k]).to_dict() for k in sorted(state.calls)]
        return msg

    def finish_reason(self, choice: int = 0) -> str | None:
        state = self._choices.get(choice)
        return state.finish_reason if state is not None else None


def _complete(parts: list[str]) -> bool:
    """Whether the arguments so far are a whole JSON object (tried only once they end in ``}``)."""
    last = parts[-1].rstrip()
    if not last.endswith("}"):
        return False
    try:
        return isinstance(orjson.loads("".join(parts)), dict)
    except orjson.JSONDecodeError:
        return False


def _ready(i: int, call: _Call) -> ReadyToolCall:
    return ReadyToolCall(call.index, call.id, call.name, "".join(call.parts), i, call.type)
