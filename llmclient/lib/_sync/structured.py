# Generated from llmclient/lib/_async/structured.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""``chat.completions.parse`` and ``chat.completions.stream`` over the sync client's ``create``
(what they share, the official schema and parsing, is ``lib/_structured_base.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...pipeline.call import NOT_GIVEN, is_given
from .._structured_base import _official_errors, _official_omit, _parse_result, _prepare, _wrap_call

__all__ = ["parse", "stream"]


def parse(
        create: Callable[..., Any], *, response_format: Any = NOT_GIVEN, tools: Any = NOT_GIVEN, **kw: Any) -> Any:
    """``chat.completions.parse``: ``create`` (non-streamed) and the official parsing."""
    parsing, input_tools = _prepare("parse", response_format, tools, kw)
    kw["extra_body"] = {"stream": False, **(kw.get("extra_body") or {})}
    raw = create(**kw)
    return _parse_result(parsing, response_format, input_tools, raw)


def stream(
        create: Callable[..., Any], *, response_format: Any = NOT_GIVEN, tools: Any = NOT_GIVEN, **kw: Any) -> Any:
    """``chat.completions.stream``: the official ``ChatCompletionStreamManager`` over our stream."""
    _, input_tools = _prepare("stream", response_format, tools, kw)
    # openai (~0.7 s to import): loaded by the first structured-output call
    from openai.lib.streaming.chat import ChatCompletionStreamManager

    send = functools.partial(create, stream=True, **kw)
    # the official helper is handed the coroutine to await, or for the blocking client the call to make
    manager = ChatCompletionStreamManager(
        send,
        response_format=response_format if is_given(response_format) else _official_omit(),
        input_tools=input_tools)
    return _Errors(manager)


class _Errors:
    """Wraps an official stream helper so its finish-reason errors are llmclient's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if callable(value) and name in ("get_final_completion", "until_done"):
            return _wrap_call(value)
        return value

    def __iter__(self) -> Any:
        with _official_errors():
            for event in self._inner:
                yield event

    def __enter__(self) -> Any:
        return _Errors(self._inner.__enter__())

    def __exit__(self, *exc: Any) -> Any:
        return self._inner.__exit__(*exc)
