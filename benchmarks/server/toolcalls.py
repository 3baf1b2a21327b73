"""Several tool calls in one chat answer, written token by token (pure: tokens in, fragments out).

A chat request that forces tool use (``tool_choice`` ``"required"`` or a named function) and
carries this server's ``n_tool_calls: N`` (1-16; an extension field, as vLLM's
``continue_final_message`` is one) gets an answer with N tool calls instead of one. Which tools:
a named function N times; with ``"required"`` the offered tools in their order, round and round
(call k uses ``tools[k % len(tools)]``). The answer's token budget (``max_tokens``, what the engine
generates at its token rate) is shared among the calls in order: call k is written by tokens
``[k*B/N, (k+1)*B/N)``, so a call's arguments are complete when its last token is generated and
the next call's begin with the next token, as a model writes them one after the other.

Each call's arguments follow its function's JSON Schema (the shape of
``_textstream.tool_arguments``: objects, one array item, ``const``/``enum`` first value, null), their
values made of the call's tokens' words: a non-string scalar takes one token (an integer is its
word's length, as ``tool_arguments``), the string fields share the rest, each a run of words joined
by spaces; a field with no token left is ``"value"`` (or that word's length). A generation that ends
before its budget (a natural end) closes the remaining calls at its last token.

Streamed, a call comes as OpenAI streams it: a first fragment ``{"index", "id", "type",
"function": {"name", "arguments": ""}}`` with the call's first token, then
``{"index", "function": {"arguments": <text>}}`` fragments, one per token, the JSON text
growing as its words come (a string field's opening quote with its first word, its closing one
with its last). A call's ``id`` is a hash of a key the caller gives (the answer's sample key when
the answer is deterministic, so the same conversation gets the same ids) and the call's index.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._validate import MAX_TOOL_CALLS, ToolChoice

__all__ = ["MAX_TOOL_CALLS", "CallSpec", "ToolCallWriter", "call_id"]

_DEFAULT_WORD = "value"  # as tool_arguments fills a scalar it has no word for


# One planned call: its function's name and parameters schema, as the request's validation
# names a forced tool (the same two fields).
CallSpec = ToolChoice


@dataclass(frozen=True)
class _Slot:
    kind: str  # "string" | "integer" | "number" | "boolean"


def _template(schema: dict[str, Any], depth: int, defs: dict[str, Any]) -> list[str | _Slot]:
    """The JSON text of ``schema``'s value as literal pieces and scalar slots (the walk of
    ``_textstream._value``, so the document has the same shape)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
        schema = defs[ref.rsplit("/", 1)[-1]]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            chosen = next((o for o in options if isinstance(o, dict) and o.get("type") != "null"), options[0])
            return _template(chosen, depth, defs)
    if "const" in schema:
        return [orjson.dumps(schema["const"]).decode()]
    if schema.get("enum"):
        return [orjson.dumps(schema["enum"][0]).decode()]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        props = schema.get("properties") or {}
        if depth > 4 or not isinstance(props, dict) or not props:
            return ["{}"]
        out: list[str | _Slot] = ["{"]
        for j, (name, sub) in enumerate(props.items()):
            out.append(("," if j else "") + orjson.dumps(name).decode() + ":")
            out += _template(sub if isinstance(sub, dict) else {}, depth + 1, defs)
        return [*out, "}"]
    if kind == "array":
        items = schema.get("items")
        return ["[", *_template(items if isinstance(items, dict) else {}, depth + 1, defs), "]"]
    if kind == "null":
        return ["null"]
    return [_Slot(kind if kind in ("integer", "number", "boolean") else "string")]


def _merged(parts: list[str | _Slot]) -> list[str | _Slot]:
    out: list[str | _Slot] = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def _shares(slots: list[_Slot], tokens: int) -> list[int]:
    """Tokens per slot: one per non-string scalar (in order, while tokens last), the rest shared
    by the string slots, the first ones taking the remainder."""
    n = [0] * len(slots)
    left = tokens
    for j, s in enumerate(slots):
        if s.kind != "string" and left > 0:
            n[j], left = 1, left - 1
    strings = [j for j, s in enumerate(slots) if s.kind == "string"]
    for r, j in enumerate(strings):
        n[j] = left // len(strings) + (1 if r < left % len(strings) else 0)
    return n


def _scalar(kind: str, word: str | None) -> str:
    w = word or _DEFAULT_WORD
    if kind == "integer":
        return str(len(w))
    if kind == "number":
        return f"{len(w)}.5"
    return "true" if len(w) % 2 == 0 else "false"


def call_id(key: str, index: int) -> str:
    return "call_" + hashlib.blake2b(f"{key}-{index}".encode(), digest_size=8).hexdigest()


@dataclass
class _Call:
    index: int
    id: str
    name: str
    parts: list[str | _Slot]
    shares: list[int]
    tokens: int
    at: int = 0          # the next part to write
    used: int = 0        # tokens the current slot has had
    words: list[str] = field(default_factory=list)
    started: bool = False
    done: bool = False
    text: list[str] = field(default_factory=list)


class ToolCallWriter:
    """One choice's calls. :meth:`feed` each generated token's word (None for a token that is
    not a word: punctuation), :meth:`finish` when the generation ends; both return the stream
    fragments (OpenAI's ``delta.tool_calls`` items) the token made. :meth:`calls` is the
    message's ``tool_calls`` (whole arguments), after :meth:`finish`."""

    def __init__(self, specs: list[CallSpec], budget: int, key: str) -> None:
        if not specs:
            raise ValueError("at least one call")
        self._calls: list[_Call] = []
        for k, spec in enumerate(specs):
            tokens = budget * (k + 1) // len(specs) - budget * k // len(specs)
            parts = _merged(_template(spec.parameters, 0, spec.parameters.get("$defs")
                                      or spec.parameters.get("definitions") or {}))
            slots = [p for p in parts if isinstance(p, _Slot)]
            self._calls.append(_Call(k, call_id(key, k), spec.name, parts, _shares(slots, tokens), tokens))
        self._current = 0

    def feed(self, word: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while self._current < len(self._calls) and self._calls[self._current].tokens == 0:
            self._close(self._calls[self._current], out)  # a call with no token: written whole now
            self._current += 1
        if self._current >= len(self._calls):
            return out  # past the budget (cannot happen: the engine stops at it)
        call = self._calls[self._current]
        self._start(call, out)
        self._token(call, word, out)
        if call.done:
            self._current += 1
        return out

    def finish(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in self._calls[self._current:]:
            self._close(call, out)
        self._current = len(self._calls)
        return out

    def calls(self) -> list[dict[str, Any]]:
        return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": "".join(c.text)}}
                for c in self._calls]

    # -- writing -------------------------------------------------------------------------
    def _start(self, call: _Call, out: list[dict[str, Any]]) -> None:
        if not call.started:
            call.started = True
            out.append({"index": call.index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""}})

    def _emit(self, call: _Call, text: str, out: list[dict[str, Any]]) -> None:
        if text:
            call.text.append(text)
            if out and out[-1]["index"] == call.index and "id" not in out[-1]:
                out[-1]["function"]["arguments"] += text  # one fragment per token
            else:
                out.append({"index": call.index, "function": {"arguments": text}})

    def _slot_share(self, call: _Call) -> int:
        slot_no = sum(isinstance(p, _Slot) for p in call.parts[:call.at])
        return call.shares[slot_no]

    def _skip_literals(self, call: _Call, out: list[dict[str, Any]]) -> None:
        """Write literal parts, and slots that get no token, up to the next slot with tokens."""
        while call.at < len(call.parts):
            part = call.parts[call.at]
            if isinstance(part, str):
                self._emit(call, part, out)
            elif self._slot_share(call) == 0:
                self._emit(call, _value(part, []), out)
            else:
                return
            call.at += 1
        call.done = True

    def _token(self, call: _Call, word: str | None, out: list[dict[str, Any]]) -> None:
        self._skip_literals(call, out)
        if call.done:
            return
        slot = call.parts[call.at]
        assert isinstance(slot, _Slot)
        share = self._slot_share(call)
        if slot.kind == "string":
            if call.used == 0:
                self._emit(call, '"', out)
            if word:
                piece = orjson.dumps(word).decode()[1:-1]
                self._emit(call, (" " if call.words else "") + piece, out)
                call.words.append(word)
        elif word and not call.words:
            call.words.append(word)
        call.used += 1
        if call.used >= share:
            self._end_slot(call, slot, out)
            self._skip_literals(call, out)

    def _end_slot(self, call: _Call, slot: _Slot, out: list[dict[str, Any]]) -> None:
        if slot.kind == "string":
            self._emit(call, ("" if call.words else _DEFAULT_WORD) + '"', out)
        else:
            self._emit(call, _scalar(slot.kind, call.words[0] if call.words else None), out)
        call.at += 1
        call.used, call.words = 0, []

    def _close(self, call: _Call, out: list[dict[str, Any]]) -> None:
        """The generation ended (or the call has no token): write the rest of the call now."""
        self._start(call, out)
        if call.done:
            return
        if call.used:  # a slot was being written
            slot = call.parts[call.at]
            assert isinstance(slot, _Slot)
            self._end_slot(call, slot, out)
        while call.at < len(call.parts):
            part = call.parts[call.at]
            self._emit(call, part if isinstance(part, str) else _value(part, []), out)
            call.at += 1
        call.done = True


def _value(slot: _Slot, words: list[str]) -> str:
    if slot.kind == "string":
        return orjson.dumps(" ".join(words) if words else _DEFAULT_WORD).decode()
    return _scalar(slot.kind, words[0] if words else None)
