"""Structured outputs: ``chat.completions.parse`` and ``chat.completions.stream``.

The request goes through llmclient's pipeline (``create``: HTTP/2, tracing, cache, hedging);
everything else is the official package's code, imported on first use: the strict JSON schema
from a pydantic model (``openai.lib._pydantic.to_strict_json_schema`` by way of
``type_to_response_format_param``), the tool checks, the parsing of the answer into
``ParsedChatCompletion`` (refusals, ``LengthFinishReasonError``,
``ContentFilterFinishReasonError``) and the stream helper's events and accumulation
(``openai.lib.streaming.chat``). The official errors raised there are re-raised as
llmclient's classes of the same name (with the same message and ``completion``).
"""

from __future__ import annotations

from ._async.structured import async_parse, async_stream
from ._structured_base import pydantic_function_tool
from ._sync.structured import parse, stream

__all__ = ["async_parse", "async_stream", "parse", "pydantic_function_tool", "stream"]
