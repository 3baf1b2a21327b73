"""``chat.completions.parse`` and ``chat.completions.stream`` over the async client's ``create``
(what they share, the official schema and parsing, is ``lib/_structured_base.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...pipeline.call import NOT_GIVEN, is_given
from .._structured_base import _official_errors, _official_omit, _parse_result, _prepare, _wrap_call

__all__ = ["async_parse", "async_stream"]


async def async_parse(
        create: Callable[..., Any], *, response_format: Any = NOT_GIVEN, tools: Any = NOT_GIVEN, **kw: Any) -> Any:
    """``chat.completions.parse``: ``create`` (non-streamed) and the official parsing."""
    parsing, input_tools = _prepare("parse", response_format, tools, kw)
    kw["extra_body"] = {"stream": False, **(kw.get("extra_body") or {})}
    raw = await create(**kw)
    return _parse_result(parsing, response_format, input_tools, raw)


def async_stream(
        create: Callable[..., Any], *, response_format: Any = NOT_GIVEN, tools: Any = NOT_GIVEN, **kw: Any) -> Any:
    """``chat.completions.stream``: the official ``AsyncChatCompletionStreamManager`` over our stream."""
    _, input_tools = _prepare("stream", response_format, tools, kw)
    # openai (~0.7 s to import): loaded by the first structured-output call
    from openai.lib.streaming.chat import AsyncChatCompletionStreamManager

    send = functools.partial(create, stream=True, **kw)
    # the official helper is handed the coroutine to await, or for the blocking client the call to make
    manager = AsyncChatCompletionStreamManager(
        send(),  # unasync: sync=send,
        response_format=response_format if is_given(response_format) else _official_omit(),
        input_tools=input_tools)
    return _AsyncErrors(manager)


class _AsyncErrors:
    """Wraps an official stream helper so its finish-reason errors are llmclient's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if callable(value) and name in ("get_final_completion", "until_done"):
            return _wrap_call(value)
        return value

    async def __aiter__(self) -> Any:
        with _official_errors():
            async for event in self._inner:
                yield event

    async def __aenter__(self) -> Any:
        return _AsyncErrors(await self._inner.__aenter__())

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)
