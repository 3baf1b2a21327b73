"""What a stream delivered before it was cut or stalled: the partial answer an
:class:`~llmclient.IncompleteStreamError` (or a stalled stream's
:class:`~llmclient.APITimeoutError`) carries as ``.partial``, so an app can show or continue it
instead of throwing it away.

``PartialTracker`` follows a stream chunk by chunk (cheaply: it keeps the pieces and joins them
only when asked); ``PartialAnswer`` is the plain data it hands out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PartialAnswer", "PartialChoice", "PartialTracker", "block_type"]


@dataclass
class PartialChoice:
    """One choice as far as it came: its text, its tool calls' fragments merged (``id``,
    ``type``, ``function.name``, ``function.arguments`` as received so far), and its
    finish_reason if it got one."""

    index: int
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass
class PartialAnswer:
    """What arrived before the stream ended early.

    ``events``: chunks (Chat Completions, Completions) or typed events (Responses) received.
    ``choices``: by index (Chat Completions, Completions). ``response_id``: the id of the
    response or completion, when the stream said it. ``last_sequence_number``: the Responses
    event last received (resume after it: ``starting_after``)."""

    events: int
    choices: dict[int, PartialChoice]
    response_id: str | None = None
    last_sequence_number: int | None = None

    @property
    def text(self) -> str:
        """The first choice's text (the answer, for the usual ``n=1``)."""
        first = self.choices.get(0)
        return first.text if first is not None else ""


class _Choice:
    __slots__ = ("finish", "parts", "tools")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.tools: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None


class PartialTracker:
    """Follows one stream's chunks or events; ``answer()`` is the partial answer so far."""

    __slots__ = ("_choices", "blocks", "events", "last_sequence_number", "other_content", "response_id",
                 "stopped")

    def __init__(self) -> None:
        self.events = 0
        self._choices: dict[int, _Choice] = {}
        self.response_id: str | None = None
        self.last_sequence_number: int | None = None
        # Anthropic's Messages stream: each content block's type by index (its
        # ``content_block_start`` delivered), the blocks stopped, and whether anything but text
        # came (a tool use's input, a thinking block: content an app may have shown, that no
        # prefill can hand back).
        self.blocks: dict[int, str] = {}
        self.stopped: set[int] = set()
        self.other_content = False

    def chunk(self, obj: dict[str, Any], choices: Any) -> None:
        """A Chat Completions or Completions chunk, and its ``choices`` (read once, by the
        caller). Runs for every chunk of every stream: few lookups."""
        self.events += 1
        if self.response_id is None and type(obj.get("id")) is str:
            self.response_id = obj["id"]
        if not choices:
            return
        states = self._choices
        for choice in choices:
            index = choice.get("index") or 0
            state = states.get(index)
            if state is None:
                state = states[index] = _Choice()
            delta = choice.get("delta")
            if delta is not None:  # chat
                text = delta.get("content")
                if delta.get("tool_calls"):
                    _merge_tools(state.tools, delta["tool_calls"])
            else:  # completions
                text = choice.get("text")
            if text and type(text) is str:
                state.parts.append(text)
            if choice.get("finish_reason"):
                state.finish = choice["finish_reason"]

    def has_content(self) -> bool:
        """Whether any text or tool call arrived (what an app may already have shown)."""
        return self.other_content or any(s.parts or s.tools for s in self._choices.values())

    def continuable(self) -> bool:
        """Whether the answer so far can be continued as an assistant prefix: one choice, with
        text and no tool call (a tool call's arguments cannot be handed back half-written); on
        a Messages stream, one text block, still open, and nothing else."""
        if set(self._choices) != {0} or self.other_content:
            return False
        if self.blocks and (self.blocks != {0: "text"} or self.stopped):
            return False
        state = self._choices[0]
        return bool(state.parts) and not state.tools and state.finish is None

    def text_so_far(self) -> tuple[str, int]:
        """The first choice's text and the number of chunks it came in."""
        state = self._choices.get(0)
        return ("", 0) if state is None else ("".join(state.parts), len(state.parts))

    def finished(self) -> dict[int, bool]:
        """Each choice seen: whether it got a finish_reason."""
        return {i: s.finish is not None for i, s in self._choices.items()}

    def event(self, obj: dict[str, Any]) -> None:
        """A Responses API event, or an Anthropic Messages one."""
        kind = obj.get("type")
        if kind == "content_block_delta":  # Anthropic's Messages stream: its text so far
            self.content_delta(obj)
            return
        self.events += 1
        seq = obj.get("sequence_number")
        if isinstance(seq, int):
            self.last_sequence_number = seq
        if kind == "response.output_text.delta" and isinstance(obj.get("delta"), str):
            state = self._choices.get(0)
            if state is None:
                state = self._choices[0] = _Choice()
            state.parts.append(obj["delta"])
        elif kind == "content_block_start":
            self._block_start(obj)
        elif kind == "content_block_stop":
            index = obj.get("index")
            if isinstance(index, int):
                self.stopped.add(index)
        elif kind == "message_start" and self.response_id is None and isinstance(obj.get("message"), dict):
            mid = obj["message"].get("id")
            if isinstance(mid, str):
                self.response_id = mid
        elif self.response_id is None and isinstance(obj.get("response"), dict):
            rid = obj["response"].get("id")
            if isinstance(rid, str):
                self.response_id = rid

    def content_delta(self, obj: dict[str, Any]) -> None:
        """An Anthropic ``content_block_delta`` event: what :meth:`event` does for one, with
        fewer lookups (it runs once per token)."""
        self.events += 1
        seq = obj.get("sequence_number")
        if seq is not None and isinstance(seq, int):
            self.last_sequence_number = seq
        delta = obj.get("delta")
        if isinstance(delta, dict):
            text = delta.get("text")
            if isinstance(text, str):
                state = self._choices.get(0)
                if state is None:
                    state = self._choices[0] = _Choice()
                state.parts.append(text)
            else:  # input_json_delta, thinking_delta, signature_delta, citations_delta
                self.other_content = True

    def _block_start(self, obj: dict[str, Any]) -> None:
        """An Anthropic ``content_block_start``: its type kept; a block that is not an empty text
        block (a tool use names its tool, a thinking block opens) is content already."""
        kind = block_type(obj)
        index = obj.get("index")
        if isinstance(index, int) and kind is not None:
            self.blocks[index] = kind
        if kind != "text" or obj["content_block"].get("text"):
            self.other_content = True

    def answer(self) -> PartialAnswer:
        choices = {i: PartialChoice(i, "".join(s.parts), [s.tools[k] for k in sorted(s.tools)], s.finish)
                   for i, s in sorted(self._choices.items())}
        return PartialAnswer(self.events, choices, self.response_id, self.last_sequence_number)


def block_type(obj: dict[str, Any]) -> str | None:
    """The type of the block an Anthropic ``content_block_start`` opens (None: not said)."""
    block = obj.get("content_block")
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else None


def _merge_tools(tools: dict[int, dict[str, Any]], fragments: list[Any]) -> None:
    """Tool-call deltas, merged by their index: the first fragment has id, type and name;
    later ones append to ``function.arguments``."""
    for frag in fragments:
        if not isinstance(frag, dict):
            continue
        index = frag.get("index") or 0
        call = tools.get(index)
        if call is None:
            call = tools[index] = {"id": None, "type": "function",
                                   "function": {"name": None, "arguments": ""}}
        if frag.get("id"):
            call["id"] = frag["id"]
        if frag.get("type"):
            call["type"] = frag["type"]
        fn = frag.get("function")
        if isinstance(fn, dict):
            if fn.get("name"):
                call["function"]["name"] = fn["name"]
            if isinstance(fn.get("arguments"), str):
                call["function"]["arguments"] += fn["arguments"]
