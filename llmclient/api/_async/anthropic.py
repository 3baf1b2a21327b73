"""The Anthropic face's resources, written once: ``client.messages.create / stream /
count_tokens``, ``client.beta.messages.create``, ``client.models.list / retrieve``. Each method checks its keywords (before
anything is sent), turns them into a ``Call`` and names the answer's type (``api/anthropic.py``);
``scripts/unasync.py`` generates the blocking twin (``api/_sync/anthropic.py``). The rest of the
official resources (``messages.batches``, ``models`` beyond these ...) is the official client's,
passed through (``_official`` names where it keeps the same resource).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...pipeline.call import NOT_GIVEN, is_given
from .. import anthropic as _anth
from ..resources import Headers, _is_stream

if TYPE_CHECKING:
    from ..._anthropic_async import AsyncAnthropic

__all__ = ["AsyncBeta", "AsyncBetaMessages", "AsyncMessages", "AsyncModels"]


class AsyncMessages(_anth.AnthropicResource):
    _client: AsyncAnthropic
    _official: tuple[str, ...] = ("messages",)  # batches, and what a newer anthropic adds
    _beta = False  # the beta namespace's twin (AsyncBetaMessages): its keywords and types

    async def create(
        self,
        *,
        stream: Any = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        betas: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        _anth.check_create("Messages.create()", params, beta=self._beta)
        if self._beta and "tools" in params:  # @beta_tool functions and builtin tools: their entries
            params["tools"] = _anth.beta_tool_params(params["tools"])
        streamed = _is_stream(stream)
        if not streamed:  # a long whole answer: refused as the official client refuses it
            _anth.check_whole_answer(params, timeout, self._client.timeout)
        if stream is False:  # sent, as the official client sends a given False
            params["stream"] = False
        call = self._anthropic_call("POST", _anth.MESSAGES_PATH, params, streamed, extra_headers, extra_query,
                                    extra_body, timeout, betas)
        if self._beta:
            return await self._client._request(call, _anth.beta_message, _raw, _anth.beta_stream_event)
        return await self._client._request(call, _anth.message, _raw, _anth.stream_event)

    def stream(self, **params: Any) -> Any:
        """The official streaming helper (``async with client.messages.stream(...) as stream``:
        ``text_stream``, ``get_final_message()``, ``get_final_text()``, the accumulated events)
        over llmclient's stream; needs ``anthropic`` installed (its helper classes)."""
        _anth.check_create("Messages.stream()", params)
        params.pop("stream", None)
        return _anth.stream_manager(functools.partial(self.create, stream=True, **params),
                                    self._client._on_event_loop)

    async def count_tokens(
        self,
        *,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        betas: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        _anth.check_create("Messages.count_tokens()", params, "count_tokens")
        call = self._anthropic_call("POST", _anth.MESSAGES_PATH + "/count_tokens", params, False, extra_headers,
                                    extra_query, extra_body, timeout, betas)
        return await self._client._request(call, _anth.token_count, _raw)


class AsyncModels(_anth.AnthropicResource):
    _client: AsyncAnthropic
    _official = ("models",)

    def list(self, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
             extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, betas: Any = NOT_GIVEN,
             _raw: bool = False, **query: Any) -> Any:
        """A page of models (``limit``, ``after_id``, ``before_id``, ``lifecycle``), iterated through every page
        after it as the official client's pages are."""
        q = {k: v for k, v in query.items() if v is not None and is_given(v)}
        unknown = set(q) - {"limit", "after_id", "before_id", "lifecycle", "workspace_id"}
        if unknown:
            raise TypeError(f"Models.list() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        extra_headers = _anth.header_params(q, extra_headers)  # workspace_id: a header

        def fetch(after_id: str | None = None) -> Any:
            page_query = {**q, "after_id": after_id} if after_id is not None else q
            call = self._anthropic_call("GET", "/v1/models", None, False, extra_headers,
                                        {**page_query, **(extra_query or {})}, extra_body, timeout, betas)
            return self._client._request(call, _anth.model_page, _raw)

        return fetch() if _raw else _anth.paged(fetch, self._client._on_event_loop)

    async def retrieve(self, model_id: str, *, extra_headers: Headers = None,
                       extra_query: Mapping[str, Any] | None = None, extra_body: Mapping[str, Any] | None = None,
                       timeout: Any = NOT_GIVEN, betas: Any = NOT_GIVEN, workspace_id: Any = NOT_GIVEN,
                       _raw: bool = False) -> Any:
        if not model_id:
            raise ValueError(f"Expected a non-empty value for `model_id` but received {model_id!r}")
        extra_headers = _anth.header_params({"workspace_id": workspace_id}, extra_headers)
        call = self._anthropic_call("GET", f"/v1/models/{model_id}", None, False, extra_headers, extra_query,
                                    extra_body, timeout, betas)
        return await self._client._request(call, _anth.model_info, _raw)


class AsyncBetaMessages(AsyncMessages):
    """``client.beta.messages``: ``create`` run by llmclient as ``messages.create`` is (the same
    path and body, the beta keywords, answers as ``anthropic.types.beta``: pydantic-ai's
    ``AnthropicModel`` sends every call here); ``stream``, ``count_tokens``, ``parse``,
    ``batches``, ``tool_runner`` ... are the official client's, passed through."""

    _official = ("beta", "messages")
    _beta = True

    def stream(self, **params: Any) -> Any:
        return self._passed().stream(**params)

    def count_tokens(self, **params: Any) -> Any:
        return self._passed().count_tokens(**params)


class AsyncBeta(_anth.AnthropicResource):
    """``client.beta``: its ``messages`` llmclient's (``AsyncBetaMessages``), the rest
    (``models``, ``files``, ``skills`` ...) the official client's, passed through."""

    _client: AsyncAnthropic
    _official = ("beta",)

    def __init__(self, client: AsyncAnthropic) -> None:
        super().__init__(client)
        self.messages = AsyncBetaMessages(client)
