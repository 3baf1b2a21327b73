"""Predictors: given the request just answered and its answer, propose likely next user turns.

Every predictor is a callable ``(request, answer) -> list[Prediction]``. They are pure apart from
:class:`HistoryPredictor`, whose state is what it has learned from the calls the app really made.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._followup import assistant_message, last_user_text


@dataclass(frozen=True)
class Prediction:
    """A likely next user message and how sure the predictor is (0..1)."""

    text: str
    confidence: float = 1.0


@runtime_checkable
class Predictor(Protocol):
    def __call__(
        self, request: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> Sequence[Prediction]: ...


class FixedPredictor:
    """Always proposes the same follow-ups ("continue", "explain in more detail", ...)."""

    def __init__(self, texts: Iterable[str], confidence: float = 1.0) -> None:
        self.predictions = [Prediction(t, confidence) for t in texts if isinstance(t, str) and t]

    def __call__(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> list[Prediction]:
        return list(self.predictions)


class TemplatePredictor:
    """Fills templates with the last answer and last user message.

    Fields: ``{answer}``, ``{last_user}``, ``{first_line}`` (the answer's first line).
    Example: ``TemplatePredictor(["Translate to French: {answer}"])``.
    """

    def __init__(self, templates: Iterable[str], confidence: float = 1.0) -> None:
        self.templates = list(templates)
        self.confidence = confidence

    def __call__(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> list[Prediction]:
        reply = assistant_message(answer)
        if reply is None:
            return []
        text = reply["content"]
        fields = {
            "answer": text,
            "last_user": last_user_text(request),
            "first_line": text.splitlines()[0] if text else "",
        }
        return [Prediction(t.format(**fields), self.confidence) for t in self.templates]


class CallbackPredictor:
    """Wraps an app function ``(request, answer) -> list[str]``."""

    def __init__(self, fn: Callable[[Mapping[str, Any], Mapping[str, Any]], Iterable[str]]) -> None:
        self.fn = fn

    def __call__(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> list[Prediction]:
        return [Prediction(t) for t in self.fn(request, answer)]


_WORD = re.compile(r"[a-z']+")


_POLITE = frozenset({"please", "can", "could", "would", "you", "kindly", "now", "ok", "okay"})


def turn_kind(user_text: str) -> str:
    """A coarse class of a user turn: its first word that is not a politeness word, lowercased.

    Follow-ups depend on what was asked ("summarize ...", "translate ...", "explain ...") far
    more than on its details; the leading verb or question word captures that.
    """
    for word in _WORD.findall(user_text.lower()):
        if word not in _POLITE:
            return word
    return "<empty>"


class HistoryPredictor:
    """Learns, from the calls the app actually made, which follow-ups come after which turns.

    ``observe(previous_request, next_request)`` records that after a turn of kind K the user
    said T. Predictions for a turn of kind K are the texts seen after K at least ``min_support``
    times with frequency at least ``threshold``. Thread-safe.
    """

    def __init__(
        self,
        *,
        threshold: float = 0.3,
        min_support: int = 2,
        max_predictions: int = 2,
        kind: Callable[[str], str] = turn_kind,
    ) -> None:
        self.threshold = threshold
        self.min_support = min_support
        self.max_predictions = max_predictions
        self.kind = kind
        self._after: dict[str, Counter[str]] = defaultdict(Counter)
        self._lock = threading.Lock()

    def observe(self, previous: Mapping[str, Any], following: Mapping[str, Any]) -> None:
        """Record that ``following`` (a request) came after ``previous`` (a request)."""
        kind = self.kind(last_user_text(previous))
        text = last_user_text(following)
        if text:
            with self._lock:
                self._after[kind][text] += 1

    def observe_conversation(self, user_turns: Sequence[str]) -> None:
        """Record a whole scripted conversation given as its user turns."""
        for previous, following in itertools.pairwise(user_turns):
            with self._lock:
                self._after[self.kind(previous)][following] += 1

    def __call__(self, request: Mapping[str, Any], answer: Mapping[str, Any]) -> list[Prediction]:
        kind = self.kind(last_user_text(request))
        with self._lock:
            counts = Counter(self._after.get(kind, Counter()))
        total = sum(counts.values())
        if total == 0:
            return []
        out = [
            Prediction(text, n / total)
            for text, n in counts.most_common()
            if n >= self.min_support and n / total >= self.threshold
        ]
        return out[: self.max_predictions]


def as_predictor(spec: object) -> Predictor:
    """Turn what a caller passed as ``prefetch=`` into a predictor.

    Accepts a predictor, a list of strings, or a plain function returning strings.
    """
    if isinstance(spec, (list, tuple)):
        if not all(isinstance(t, str) for t in spec):
            raise TypeError("prefetch list must contain only strings (likely next user messages)")
        return FixedPredictor(spec)
    if isinstance(spec, (FixedPredictor, TemplatePredictor, CallbackPredictor, HistoryPredictor)):
        return spec
    if callable(spec):
        return CallbackPredictor(spec)
    raise TypeError(f"cannot use {type(spec).__name__} as a predictor")


def safe_predict(
    predictor: Predictor, request: Mapping[str, Any], answer: Mapping[str, Any], limit: int
) -> tuple[list[Prediction], str | None]:
    """Run a predictor defensively: junk and exceptions become an error string, never a raise.

    Speculation must never fail the app's own call.
    """
    try:
        raw = predictor(request, answer)
    except Exception as exc:  # a predictor is app code: anything can happen
        return [], f"predictor raised {type(exc).__name__}: {exc}"
    out: list[Prediction] = []
    seen: set[str] = set()
    for item in raw if isinstance(raw, (list, tuple)) else []:
        if isinstance(item, str):
            item = Prediction(item)
        if not isinstance(item, Prediction) or not isinstance(item.text, str) or not item.text:
            return out, f"predictor returned junk: {item!r:.80}"
        if item.text not in seen:
            seen.add(item.text)
            out.append(item)
    if not isinstance(raw, (list, tuple)):
        return [], f"predictor returned {type(raw).__name__}, not a list"
    out.sort(key=lambda p: -p.confidence)
    return out[:limit], None
