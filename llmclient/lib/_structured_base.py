"""Structured outputs without I/O: the official schema, tool checks and parsing, imported on
first use, and its errors as llmclient's (``lib/_structured.py`` tells the whole story; the calls,
of each kind, are ``lib/_async/structured.py`` and its generated sync twin)."""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._errors import ContentFilterFinishReasonError, LengthFinishReasonError, OpenAIError
from ..pipeline.call import is_given

__all__ = ["pydantic_function_tool"]


def _needs_openai() -> Any:
    try:
        # openai (~0.7 s to import): loaded by the first structured-output call
        from openai.lib import _parsing
    except ImportError:
        raise OpenAIError(
            "structured outputs (parse, stream, pydantic_function_tool) use the official package's "
            "schema and parsing code: pip install 'llmclient[openai]' (or openai)"
        ) from None
    if not _kept:
        _keep_parsed_types()
    return _parsing


# The official parser builds ParsedChoice[ResponseFormatT], ParsedChatCompletion[...] on every
# call; pydantic caches those generic classes only weakly, so once a call is over they are
# collected and the next call rebuilds their schemas (about a third of parse()'s CPU, measured
# with cProfile). Holding them here keeps pydantic's cache warm.
_kept: list[Any] = []


def _keep_parsed_types() -> None:
    # openai (~0.7 s to import): loaded by the first structured-output call
    from openai.lib._parsing._completions import ResponseFormatT
    from openai.types.chat import ParsedChatCompletion, ParsedChatCompletionMessage, ParsedChoice

    _kept.extend(cls[ResponseFormatT] for cls in (ParsedChatCompletion, ParsedChoice,
                                                  ParsedChatCompletionMessage))


def pydantic_function_tool(model: Any, *, name: str | None = None, description: str | None = None) -> Any:
    """The official ``openai.pydantic_function_tool``: a strict function tool from a model."""
    _needs_openai()
    # openai (~0.7 s to import): loaded by the first structured-output call
    from openai.lib._tools import pydantic_function_tool as official

    return official(model, name=name, description=description)


@contextmanager
def _official_errors() -> Iterator[None]:
    import openai  # openai (~0.7 s to import): loaded by the first structured-output call

    try:
        yield
    except openai.LengthFinishReasonError as exc:
        raise LengthFinishReasonError(completion=exc.completion) from None
    except openai.ContentFilterFinishReasonError as exc:
        raise ContentFilterFinishReasonError(completion=exc.completion) from None


def _carry(parsed: Any, raw: Any) -> Any:
    """The parsed copy keeps the call's trace id, timings and request id."""
    for name in ("trace_id", "timings", "_request_id"):
        if name in raw.__dict__:
            parsed.__dict__[name] = raw.__dict__[name]
    return parsed


def _prepare(kind: str, response_format: Any, tools: Any, kw: dict[str, Any]) -> tuple[Any, Any]:
    parsing = _needs_openai()
    if kind == "parse":
        input_tools = parsing.validate_input_tools(tools if is_given(tools) else _official_omit())
    else:
        input_tools = parsing._completions.materialize_input_tools(tools if is_given(tools) else _official_omit())
    kw["extra_headers"] = {"X-Stainless-Helper-Method": f"chat.completions.{kind}", **(kw.get("extra_headers") or {})}
    kw["response_format"] = _format_param(parsing, response_format)
    kw["tools"] = input_tools
    return parsing, input_tools


# response_format class -> the strict JSON-schema param the official helper makes of it: the
# same every time for a class, and generating it (pydantic's JSON schema, made strict) costs
# more CPU than the rest of a parse() call.
_format_params: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _format_param(parsing: Any, response_format: Any) -> Any:
    if not is_given(response_format):
        return parsing.type_to_response_format_param(_official_omit())
    if not isinstance(response_format, type):  # a dict given as it is, or another form
        return parsing.type_to_response_format_param(response_format)
    param = _format_params.get(response_format)
    if param is None:
        param = _format_params[response_format] = parsing.type_to_response_format_param(response_format)
    return dict(param)


def _official_omit() -> Any:
    """The official helpers test for their own sentinel, not ours."""
    from openai import omit  # openai (~0.7 s to import): loaded by the first structured-output call

    return omit


def _parse_result(parsing: Any, response_format: Any, input_tools: Any, raw: Any) -> Any:
    with _official_errors():
        parsed = parsing.parse_chat_completion(
            response_format=response_format if is_given(response_format) else _official_omit(),
            chat_completion=raw, input_tools=input_tools)
    return _carry(parsed, raw)


def _wrap_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):
        async def call_async(*a: Any, **k: Any) -> Any:
            with _official_errors():
                return await fn(*a, **k)
        return call_async

    def call(*a: Any, **k: Any) -> Any:
        with _official_errors():
            return fn(*a, **k)
    return call
