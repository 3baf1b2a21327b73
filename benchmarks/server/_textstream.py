"""Incremental detokenization with stop sequences (pure).

Holds back just enough text that a stop sequence split across engine steps is still caught
before any of it reaches the client, as OpenAI's API promises ("the returned text will not
contain the stop sequence").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, NamedTuple

from .engine.base import RequestTiming, TokenEvent
from .tokenizer import Detokenizer

__all__ = ["Step", "TextStream", "text_steps", "tool_arguments"]


class TextStream:
    def __init__(self, stops: tuple[str, ...], skip: str = "") -> None:
        """``skip``: text the client has already (a continued answer's prefix): as much of the
        output is held back, and never sent."""
        self._skip = len(skip)
        self._detok = Detokenizer()
        self._stops = stops
        self._hold = max((len(s) for s in stops), default=1) - 1
        self._pending = ""
        self.stopped = False
        self.matched: str | None = None  # the stop sequence that ended the text

    def feed(self, ids: Iterable[int]) -> str:
        """Text safe to emit now; sets ``stopped`` once a stop sequence appears."""
        return self._skipped(self._feed(ids))

    def _skipped(self, out: str) -> str:
        if self._skip and out:
            cut = min(self._skip, len(out))
            self._skip -= cut
            return out[cut:]
        return out

    def _feed(self, ids: Iterable[int]) -> str:
        if self.stopped:
            return ""
        self._pending += self._detok.feed(ids)
        if self._stops:
            found = [(i, s) for s in self._stops if (i := self._pending.find(s)) >= 0]
            if found:
                cut, self.matched = min(found, key=lambda f: f[0])
                self.stopped = True
                out, self._pending = self._pending[:cut], ""
                return out
        if self._hold <= 0:
            out, self._pending = self._pending, ""
            return out
        out, self._pending = self._pending[: -self._hold], self._pending[-self._hold:]
        return out

    def flush(self) -> str:
        out, self._pending = ("" if self.stopped else self._pending), ""
        return self._skipped(out)


class Step(NamedTuple):
    """One engine event as text: what may be sent now, the event's ids, and on the last step
    the finish (``"stop"`` by a stop sequence or the engine's end, ``"length"``) and timing.
    (A NamedTuple: one is built per token.)"""

    text: str
    ids: tuple[int, ...]
    finish: str | None = None
    timing: RequestTiming | None = None
    cached: int | None = None  # the first event's prefix-cache hit (TokenEvent.cached_prompt_tokens)


async def text_steps(events: AsyncIterator[TokenEvent], text: TextStream) -> AsyncIterator[Step]:
    """An engine's events through ``text`` (stop sequences held back and caught), ending with
    the step that finishes: a stop sequence (its timing counts the tokens generated so far,
    since the engine's own never comes once the caller closes the request), or the engine's
    finish with the held-back text flushed."""
    generated = 0
    async for ev in events:
        delta = text.feed(ev.token_ids)
        generated += len(ev.token_ids)
        if text.stopped:
            yield Step(delta, ev.token_ids, "stop", RequestTiming(completion_tokens=generated),
                       ev.cached_prompt_tokens)
            return
        if ev.finish_reason is not None:
            yield Step(delta + text.flush(), ev.token_ids, ev.finish_reason, ev.timing,
                       ev.cached_prompt_tokens)
            return
        yield Step(delta, ev.token_ids, cached=ev.cached_prompt_tokens)


def tool_arguments(schema: dict[str, Any], words: list[str]) -> Any:
    """Deterministic arguments matching a JSON Schema, drawing strings from ``words``."""
    pool = iter(words * 8 if words else ["value"] * 8)
    return _value(schema, pool, 0, schema.get("$defs") or schema.get("definitions") or {})


def _value(schema: dict[str, Any], pool: Any, depth: int, defs: dict[str, Any] | None = None) -> Any:
    defs = defs or {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:  # "#/$defs/Name"
        schema = defs[ref.rsplit("/", 1)[-1]]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:  # the first that is not null
            chosen = next((o for o in options if isinstance(o, dict) and o.get("type") != "null"), options[0])
            return _value(chosen, pool, depth, defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        props = schema.get("properties") or {}
        if depth > 4 or not isinstance(props, dict):
            return {}
        return {k: _value(v if isinstance(v, dict) else {}, pool, depth + 1, defs) for k, v in props.items()}
    if kind == "array":
        items = schema.get("items")
        return [_value(items if isinstance(items, dict) else {}, pool, depth + 1, defs)]
    if kind == "null":
        return None
    word = next(pool, "value")  # scalars draw one word each, in schema order
    if kind == "integer":
        return len(word)
    if kind == "number":
        return len(word) + 0.5
    if kind == "boolean":
        return len(word) % 2 == 0
    return word
