"""The API resources of the clients, written once: ``client.chat.completions.create(...)`` etc.

Each method only turns its arguments into a ``Call`` and names the result type (the shared
parts are ``llmclient/api/resources.py``'s). Written once, as coroutines; ``scripts/unasync.py``
generates the blocking twin (``llmclient/api/_sync/resources.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from ...lib._structured import async_parse, async_stream
from ...pipeline.call import NOT_GIVEN
from .. import models as _models
from ..models import (
    chat_completion,
    chat_completion_chunk,
    completion,
    response_stream_event,
)
from ..models import model as model_object
from ..models import response as response_object
from ..resources import (
    Headers,
    _is_stream,
    _make_embeddings,
    _prepare_embedding_params,
    _raw_with,
    _Resource,
    _ResponsesBase,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import (  # the official signatures' own (scripts/signatures.py)
        Dict,
        List,
        Optional,
        Union,
    )

    import httpx
    import openai.resources.chat.completions.completions as _chat
    import openai.resources.completions as _completions
    import openai.resources.responses.responses as _responses
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    from ..._client_async import AsyncOpenAI
    from ...cache import CacheOptions
    from ...features.hedge import HedgeConfig
    from ...pipeline.call import NotGiven, Omit
    from ..models import TracedChatCompletion as ChatCompletion
    from ..models import TracedCompletion as Completion
    from ..streaming import AsyncStream
    from .ws_connection import AsyncResponsesConnectionManager

__all__ = [
    "AsyncChat",
    "AsyncChatCompletions",
    "AsyncCompletions",
    "AsyncEmbeddings",
    "AsyncModels",
    "AsyncResponses",
]


class AsyncChatCompletions(_Resource):
    _client: AsyncOpenAI
    _official = ("chat", "completions")  # stored completions: retrieve, update, list, delete, messages

    # signatures: chat.completions.create (scripts/signatures.py, from openai 3.63.0; do not edit)
    if TYPE_CHECKING:  # for type checkers only: at run time these cost nothing
        @overload
        async def create(
            self,
            *,
            messages: Iterable[_chat.ChatCompletionMessageParam],
            model: Union[str, _chat.ChatModel],
            audio: Optional[_chat.ChatCompletionAudioParam] | _chat.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _chat.Omit | Omit = ...,
            function_call: _chat.completion_create_params.FunctionCall | _chat.Omit | Omit = ...,
            functions: Iterable[_chat.completion_create_params.Function] | _chat.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _chat.Omit | Omit = ...,
            logprobs: Optional[bool] | _chat.Omit | Omit = ...,
            max_completion_tokens: Optional[int] | _chat.Omit | Omit = ...,
            max_tokens: Optional[int] | _chat.Omit | Omit = ...,
            metadata: Optional[_chat.Metadata] | _chat.Omit | Omit = ...,
            modalities: Optional[List[Literal['text', 'audio']]] | _chat.Omit | Omit = ...,
            moderation: Optional[_chat.completion_create_params.Moderation] | _chat.Omit | Omit = ...,
            n: Optional[int] | _chat.Omit | Omit = ...,
            parallel_tool_calls: bool | _chat.Omit | Omit = ...,
            prediction: Optional[_chat.ChatCompletionPredictionContentParam] | _chat.Omit | Omit = ...,
            presence_penalty: Optional[float] | _chat.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _chat.Omit | Omit = ...,
            prompt_cache_options: _chat.completion_create_params.PromptCacheOptions | _chat.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _chat.Omit | Omit = ...,
            reasoning_effort: Optional[_chat.ReasoningEffort] | _chat.Omit | Omit = ...,
            response_format: _chat.completion_create_params.ResponseFormat | _chat.Omit | Omit = ...,
            safety_identifier: Optional[str] | _chat.Omit | Omit = ...,
            seed: Optional[int] | _chat.Omit | Omit = ...,
            service_tier: Optional[Literal['auto', 'default', 'flex', 'scale', 'priority', 'fast']] | _chat.Omit | Omit = ...,
            stop: Union[str, _chat.SequenceNotStr[str], None] | _chat.Omit | Omit = ...,
            store: Optional[bool] | _chat.Omit | Omit = ...,
            stream: Optional[Literal[False]] | _chat.Omit | Omit = ...,
            stream_options: Optional[_chat.ChatCompletionStreamOptionsParam] | _chat.Omit | Omit = ...,
            temperature: Optional[float] | _chat.Omit | Omit = ...,
            tool_choice: _chat.ChatCompletionToolChoiceOptionParam | _chat.Omit | Omit = ...,
            tools: Iterable[_chat.ChatCompletionToolUnionParam] | _chat.Omit | Omit = ...,
            top_logprobs: Optional[int] | _chat.Omit | Omit = ...,
            top_p: Optional[float] | _chat.Omit | Omit = ...,
            user: str | _chat.Omit | Omit = ...,
            verbosity: Optional[Literal['low', 'medium', 'high']] | _chat.Omit | Omit = ...,
            web_search_options: _chat.completion_create_params.WebSearchOptions | _chat.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> ChatCompletion: ...

        @overload
        async def create(
            self,
            *,
            messages: Iterable[_chat.ChatCompletionMessageParam],
            model: Union[str, _chat.ChatModel],
            stream: Literal[True],
            audio: Optional[_chat.ChatCompletionAudioParam] | _chat.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _chat.Omit | Omit = ...,
            function_call: _chat.completion_create_params.FunctionCall | _chat.Omit | Omit = ...,
            functions: Iterable[_chat.completion_create_params.Function] | _chat.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _chat.Omit | Omit = ...,
            logprobs: Optional[bool] | _chat.Omit | Omit = ...,
            max_completion_tokens: Optional[int] | _chat.Omit | Omit = ...,
            max_tokens: Optional[int] | _chat.Omit | Omit = ...,
            metadata: Optional[_chat.Metadata] | _chat.Omit | Omit = ...,
            modalities: Optional[List[Literal['text', 'audio']]] | _chat.Omit | Omit = ...,
            moderation: Optional[_chat.completion_create_params.Moderation] | _chat.Omit | Omit = ...,
            n: Optional[int] | _chat.Omit | Omit = ...,
            parallel_tool_calls: bool | _chat.Omit | Omit = ...,
            prediction: Optional[_chat.ChatCompletionPredictionContentParam] | _chat.Omit | Omit = ...,
            presence_penalty: Optional[float] | _chat.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _chat.Omit | Omit = ...,
            prompt_cache_options: _chat.completion_create_params.PromptCacheOptions | _chat.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _chat.Omit | Omit = ...,
            reasoning_effort: Optional[_chat.ReasoningEffort] | _chat.Omit | Omit = ...,
            response_format: _chat.completion_create_params.ResponseFormat | _chat.Omit | Omit = ...,
            safety_identifier: Optional[str] | _chat.Omit | Omit = ...,
            seed: Optional[int] | _chat.Omit | Omit = ...,
            service_tier: Optional[Literal['auto', 'default', 'flex', 'scale', 'priority', 'fast']] | _chat.Omit | Omit = ...,
            stop: Union[str, _chat.SequenceNotStr[str], None] | _chat.Omit | Omit = ...,
            store: Optional[bool] | _chat.Omit | Omit = ...,
            stream_options: Optional[_chat.ChatCompletionStreamOptionsParam] | _chat.Omit | Omit = ...,
            temperature: Optional[float] | _chat.Omit | Omit = ...,
            tool_choice: _chat.ChatCompletionToolChoiceOptionParam | _chat.Omit | Omit = ...,
            tools: Iterable[_chat.ChatCompletionToolUnionParam] | _chat.Omit | Omit = ...,
            top_logprobs: Optional[int] | _chat.Omit | Omit = ...,
            top_p: Optional[float] | _chat.Omit | Omit = ...,
            user: str | _chat.Omit | Omit = ...,
            verbosity: Optional[Literal['low', 'medium', 'high']] | _chat.Omit | Omit = ...,
            web_search_options: _chat.completion_create_params.WebSearchOptions | _chat.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> AsyncStream[ChatCompletionChunk]: ...

        @overload
        async def create(
            self,
            *,
            messages: Iterable[_chat.ChatCompletionMessageParam],
            model: Union[str, _chat.ChatModel],
            stream: bool,
            audio: Optional[_chat.ChatCompletionAudioParam] | _chat.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _chat.Omit | Omit = ...,
            function_call: _chat.completion_create_params.FunctionCall | _chat.Omit | Omit = ...,
            functions: Iterable[_chat.completion_create_params.Function] | _chat.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _chat.Omit | Omit = ...,
            logprobs: Optional[bool] | _chat.Omit | Omit = ...,
            max_completion_tokens: Optional[int] | _chat.Omit | Omit = ...,
            max_tokens: Optional[int] | _chat.Omit | Omit = ...,
            metadata: Optional[_chat.Metadata] | _chat.Omit | Omit = ...,
            modalities: Optional[List[Literal['text', 'audio']]] | _chat.Omit | Omit = ...,
            moderation: Optional[_chat.completion_create_params.Moderation] | _chat.Omit | Omit = ...,
            n: Optional[int] | _chat.Omit | Omit = ...,
            parallel_tool_calls: bool | _chat.Omit | Omit = ...,
            prediction: Optional[_chat.ChatCompletionPredictionContentParam] | _chat.Omit | Omit = ...,
            presence_penalty: Optional[float] | _chat.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _chat.Omit | Omit = ...,
            prompt_cache_options: _chat.completion_create_params.PromptCacheOptions | _chat.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _chat.Omit | Omit = ...,
            reasoning_effort: Optional[_chat.ReasoningEffort] | _chat.Omit | Omit = ...,
            response_format: _chat.completion_create_params.ResponseFormat | _chat.Omit | Omit = ...,
            safety_identifier: Optional[str] | _chat.Omit | Omit = ...,
            seed: Optional[int] | _chat.Omit | Omit = ...,
            service_tier: Optional[Literal['auto', 'default', 'flex', 'scale', 'priority', 'fast']] | _chat.Omit | Omit = ...,
            stop: Union[str, _chat.SequenceNotStr[str], None] | _chat.Omit | Omit = ...,
            store: Optional[bool] | _chat.Omit | Omit = ...,
            stream_options: Optional[_chat.ChatCompletionStreamOptionsParam] | _chat.Omit | Omit = ...,
            temperature: Optional[float] | _chat.Omit | Omit = ...,
            tool_choice: _chat.ChatCompletionToolChoiceOptionParam | _chat.Omit | Omit = ...,
            tools: Iterable[_chat.ChatCompletionToolUnionParam] | _chat.Omit | Omit = ...,
            top_logprobs: Optional[int] | _chat.Omit | Omit = ...,
            top_p: Optional[float] | _chat.Omit | Omit = ...,
            user: str | _chat.Omit | Omit = ...,
            verbosity: Optional[Literal['low', 'medium', 'high']] | _chat.Omit | Omit = ...,
            web_search_options: _chat.completion_create_params.WebSearchOptions | _chat.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]: ...
    # end of signatures

    async def create(
        self,
        *,
        messages: Any,
        model: str,
        stream: Any = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        params["messages"] = messages if type(messages) is list else list(messages)
        params["model"] = model
        if stream is False:  # sent, as the official client sends a given False
            params["stream"] = False
        call = self._call("POST", "/chat/completions", params, stream=_is_stream(stream), extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return await self._client._request(call, chat_completion, _raw, chat_completion_chunk)

    async def parse(self, *, messages: Iterable[Any], model: str, _raw: bool = False, **params: Any) -> Any:
        """Structured outputs (``response_format=MyModel``, strict tools): the official
        ``ParsedChatCompletion``, with the official semantics (``llmclient.lib._structured``)."""
        if not _raw:
            return await async_parse(self.create, messages=messages, model=model, **params)
        raws: list[Any] = []  # with_raw_response.parse (LangChain's with_structured_output)

        send: Any = self.create  # with llmclient's own _raw, which the typed signatures leave out

        async def create(**kw: Any) -> Any:
            raws.append(await send(_raw=True, **kw))
            return raws[-1].parse()

        parsed = await async_parse(create, messages=messages, model=model, **params)
        return _raw_with(raws[-1], parsed)

    def stream(self, *, messages: Iterable[Any], model: str, **params: Any) -> Any:
        """The official streaming helper (``async with ... as stream: async for event in stream``,
        events, ``get_final_completion()``) over llmclient's stream."""
        return async_stream(self.create, messages=messages, model=model, **params)


class AsyncChat:
    def __init__(self, client: AsyncOpenAI) -> None:
        self.completions = AsyncChatCompletions(client)


class AsyncCompletions(_Resource):
    _client: AsyncOpenAI
    _official = ("completions",)

    # signatures: completions.create (scripts/signatures.py, from openai 3.63.0; do not edit)
    if TYPE_CHECKING:  # for type checkers only: at run time these cost nothing
        @overload
        async def create(
            self,
            *,
            model: Union[str, Literal['gpt-3.5-turbo-instruct', 'davinci-002', 'babbage-002']],
            prompt: Union[str, _completions.SequenceNotStr[str], Iterable[int], Iterable[Iterable[int]], None],
            best_of: Optional[int] | _completions.Omit | Omit = ...,
            echo: Optional[bool] | _completions.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _completions.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _completions.Omit | Omit = ...,
            logprobs: Optional[int] | _completions.Omit | Omit = ...,
            max_tokens: Optional[int] | _completions.Omit | Omit = ...,
            n: Optional[int] | _completions.Omit | Omit = ...,
            presence_penalty: Optional[float] | _completions.Omit | Omit = ...,
            seed: Optional[int] | _completions.Omit | Omit = ...,
            stop: Union[str, _completions.SequenceNotStr[str], None] | _completions.Omit | Omit = ...,
            stream: Optional[Literal[False]] | _completions.Omit | Omit = ...,
            stream_options: Optional[_completions.ChatCompletionStreamOptionsParam] | _completions.Omit | Omit = ...,
            suffix: Optional[str] | _completions.Omit | Omit = ...,
            temperature: Optional[float] | _completions.Omit | Omit = ...,
            top_p: Optional[float] | _completions.Omit | Omit = ...,
            user: str | _completions.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> Completion: ...

        @overload
        async def create(
            self,
            *,
            model: Union[str, Literal['gpt-3.5-turbo-instruct', 'davinci-002', 'babbage-002']],
            prompt: Union[str, _completions.SequenceNotStr[str], Iterable[int], Iterable[Iterable[int]], None],
            stream: Literal[True],
            best_of: Optional[int] | _completions.Omit | Omit = ...,
            echo: Optional[bool] | _completions.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _completions.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _completions.Omit | Omit = ...,
            logprobs: Optional[int] | _completions.Omit | Omit = ...,
            max_tokens: Optional[int] | _completions.Omit | Omit = ...,
            n: Optional[int] | _completions.Omit | Omit = ...,
            presence_penalty: Optional[float] | _completions.Omit | Omit = ...,
            seed: Optional[int] | _completions.Omit | Omit = ...,
            stop: Union[str, _completions.SequenceNotStr[str], None] | _completions.Omit | Omit = ...,
            stream_options: Optional[_completions.ChatCompletionStreamOptionsParam] | _completions.Omit | Omit = ...,
            suffix: Optional[str] | _completions.Omit | Omit = ...,
            temperature: Optional[float] | _completions.Omit | Omit = ...,
            top_p: Optional[float] | _completions.Omit | Omit = ...,
            user: str | _completions.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> AsyncStream[Completion]: ...

        @overload
        async def create(
            self,
            *,
            model: Union[str, Literal['gpt-3.5-turbo-instruct', 'davinci-002', 'babbage-002']],
            prompt: Union[str, _completions.SequenceNotStr[str], Iterable[int], Iterable[Iterable[int]], None],
            stream: bool,
            best_of: Optional[int] | _completions.Omit | Omit = ...,
            echo: Optional[bool] | _completions.Omit | Omit = ...,
            frequency_penalty: Optional[float] | _completions.Omit | Omit = ...,
            logit_bias: Optional[Dict[str, int]] | _completions.Omit | Omit = ...,
            logprobs: Optional[int] | _completions.Omit | Omit = ...,
            max_tokens: Optional[int] | _completions.Omit | Omit = ...,
            n: Optional[int] | _completions.Omit | Omit = ...,
            presence_penalty: Optional[float] | _completions.Omit | Omit = ...,
            seed: Optional[int] | _completions.Omit | Omit = ...,
            stop: Union[str, _completions.SequenceNotStr[str], None] | _completions.Omit | Omit = ...,
            stream_options: Optional[_completions.ChatCompletionStreamOptionsParam] | _completions.Omit | Omit = ...,
            suffix: Optional[str] | _completions.Omit | Omit = ...,
            temperature: Optional[float] | _completions.Omit | Omit = ...,
            top_p: Optional[float] | _completions.Omit | Omit = ...,
            user: str | _completions.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> Completion | AsyncStream[Completion]: ...
    # end of signatures

    async def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: Any = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        params["model"] = model
        params["prompt"] = prompt
        call = self._call("POST", "/completions", params, stream=_is_stream(stream), extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return await self._client._request(call, completion, _raw)


class AsyncResponses(_ResponsesBase):
    _client: AsyncOpenAI

    # signatures: responses.create (scripts/signatures.py, from openai 3.63.0; do not edit)
    if TYPE_CHECKING:  # for type checkers only: at run time these cost nothing
        @overload
        async def create(
            self,
            *,
            access_programs: _responses.response_create_params.AccessPrograms | _responses.Omit | Omit = ...,
            background: Optional[bool] | _responses.Omit | Omit = ...,
            background_options: _responses.response_create_params.BackgroundOptions | _responses.Omit | Omit = ...,
            context_management: Optional[Iterable[_responses.response_create_params.ContextManagement]] | _responses.Omit | Omit = ...,
            conversation: Optional[_responses.response_create_params.Conversation] | _responses.Omit | Omit = ...,
            image: _responses.response_create_params.Image | _responses.Omit | Omit = ...,
            include: Optional[List[_responses.ResponseIncludable]] | _responses.Omit | Omit = ...,
            input: Union[str, _responses.ResponseInputParam] | _responses.Omit | Omit = ...,
            instructions: Optional[str] | _responses.Omit | Omit = ...,
            max_output_tokens: Optional[int] | _responses.Omit | Omit = ...,
            max_tool_calls: Optional[int] | _responses.Omit | Omit = ...,
            metadata: Optional[_responses.Metadata] | _responses.Omit | Omit = ...,
            model: _responses.ResponsesModel | _responses.Omit | Omit = ...,
            moderation: Optional[_responses.response_create_params.Moderation] | _responses.Omit | Omit = ...,
            parallel_tool_calls: Optional[bool] | _responses.Omit | Omit = ...,
            previous_response_id: Optional[str] | _responses.Omit | Omit = ...,
            prompt: Optional[_responses.ResponsePromptParam] | _responses.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _responses.Omit | Omit = ...,
            prompt_cache_options: _responses.response_create_params.PromptCacheOptions | _responses.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _responses.Omit | Omit = ...,
            reasoning: Optional[_responses.Reasoning] | _responses.Omit | Omit = ...,
            safety_identifier: Optional[str] | _responses.Omit | Omit = ...,
            service_tier: Optional[_responses.ServiceTier] | _responses.Omit | Omit = ...,
            store: Optional[bool] | _responses.Omit | Omit = ...,
            stream: Optional[Literal[False]] | _responses.Omit | Omit = ...,
            stream_options: Optional[_responses.response_create_params.StreamOptions] | _responses.Omit | Omit = ...,
            temperature: Optional[float] | _responses.Omit | Omit = ...,
            text: _responses.ResponseTextConfigParam | _responses.Omit | Omit = ...,
            tool_choice: _responses.response_create_params.ToolChoice | _responses.Omit | Omit = ...,
            tools: Iterable[_responses.ToolParam] | _responses.Omit | Omit = ...,
            top_logprobs: Optional[int] | _responses.Omit | Omit = ...,
            top_p: Optional[float] | _responses.Omit | Omit = ...,
            truncation: Optional[Literal['auto', 'disabled']] | _responses.Omit | Omit = ...,
            user: str | _responses.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> Response: ...

        @overload
        async def create(
            self,
            *,
            stream: Literal[True],
            access_programs: _responses.response_create_params.AccessPrograms | _responses.Omit | Omit = ...,
            background: Optional[bool] | _responses.Omit | Omit = ...,
            background_options: _responses.response_create_params.BackgroundOptions | _responses.Omit | Omit = ...,
            context_management: Optional[Iterable[_responses.response_create_params.ContextManagement]] | _responses.Omit | Omit = ...,
            conversation: Optional[_responses.response_create_params.Conversation] | _responses.Omit | Omit = ...,
            image: _responses.response_create_params.Image | _responses.Omit | Omit = ...,
            include: Optional[List[_responses.ResponseIncludable]] | _responses.Omit | Omit = ...,
            input: Union[str, _responses.ResponseInputParam] | _responses.Omit | Omit = ...,
            instructions: Optional[str] | _responses.Omit | Omit = ...,
            max_output_tokens: Optional[int] | _responses.Omit | Omit = ...,
            max_tool_calls: Optional[int] | _responses.Omit | Omit = ...,
            metadata: Optional[_responses.Metadata] | _responses.Omit | Omit = ...,
            model: _responses.ResponsesModel | _responses.Omit | Omit = ...,
            moderation: Optional[_responses.response_create_params.Moderation] | _responses.Omit | Omit = ...,
            parallel_tool_calls: Optional[bool] | _responses.Omit | Omit = ...,
            previous_response_id: Optional[str] | _responses.Omit | Omit = ...,
            prompt: Optional[_responses.ResponsePromptParam] | _responses.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _responses.Omit | Omit = ...,
            prompt_cache_options: _responses.response_create_params.PromptCacheOptions | _responses.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _responses.Omit | Omit = ...,
            reasoning: Optional[_responses.Reasoning] | _responses.Omit | Omit = ...,
            safety_identifier: Optional[str] | _responses.Omit | Omit = ...,
            service_tier: Optional[_responses.ServiceTier] | _responses.Omit | Omit = ...,
            store: Optional[bool] | _responses.Omit | Omit = ...,
            stream_options: Optional[_responses.response_create_params.StreamOptions] | _responses.Omit | Omit = ...,
            temperature: Optional[float] | _responses.Omit | Omit = ...,
            text: _responses.ResponseTextConfigParam | _responses.Omit | Omit = ...,
            tool_choice: _responses.response_create_params.ToolChoice | _responses.Omit | Omit = ...,
            tools: Iterable[_responses.ToolParam] | _responses.Omit | Omit = ...,
            top_logprobs: Optional[int] | _responses.Omit | Omit = ...,
            top_p: Optional[float] | _responses.Omit | Omit = ...,
            truncation: Optional[Literal['auto', 'disabled']] | _responses.Omit | Omit = ...,
            user: str | _responses.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> AsyncStream[ResponseStreamEvent]: ...

        @overload
        async def create(
            self,
            *,
            stream: bool,
            access_programs: _responses.response_create_params.AccessPrograms | _responses.Omit | Omit = ...,
            background: Optional[bool] | _responses.Omit | Omit = ...,
            background_options: _responses.response_create_params.BackgroundOptions | _responses.Omit | Omit = ...,
            context_management: Optional[Iterable[_responses.response_create_params.ContextManagement]] | _responses.Omit | Omit = ...,
            conversation: Optional[_responses.response_create_params.Conversation] | _responses.Omit | Omit = ...,
            image: _responses.response_create_params.Image | _responses.Omit | Omit = ...,
            include: Optional[List[_responses.ResponseIncludable]] | _responses.Omit | Omit = ...,
            input: Union[str, _responses.ResponseInputParam] | _responses.Omit | Omit = ...,
            instructions: Optional[str] | _responses.Omit | Omit = ...,
            max_output_tokens: Optional[int] | _responses.Omit | Omit = ...,
            max_tool_calls: Optional[int] | _responses.Omit | Omit = ...,
            metadata: Optional[_responses.Metadata] | _responses.Omit | Omit = ...,
            model: _responses.ResponsesModel | _responses.Omit | Omit = ...,
            moderation: Optional[_responses.response_create_params.Moderation] | _responses.Omit | Omit = ...,
            parallel_tool_calls: Optional[bool] | _responses.Omit | Omit = ...,
            previous_response_id: Optional[str] | _responses.Omit | Omit = ...,
            prompt: Optional[_responses.ResponsePromptParam] | _responses.Omit | Omit = ...,
            prompt_cache_key: Optional[str] | _responses.Omit | Omit = ...,
            prompt_cache_options: _responses.response_create_params.PromptCacheOptions | _responses.Omit | Omit = ...,
            prompt_cache_retention: Optional[Literal['in_memory', '24h']] | _responses.Omit | Omit = ...,
            reasoning: Optional[_responses.Reasoning] | _responses.Omit | Omit = ...,
            safety_identifier: Optional[str] | _responses.Omit | Omit = ...,
            service_tier: Optional[_responses.ServiceTier] | _responses.Omit | Omit = ...,
            store: Optional[bool] | _responses.Omit | Omit = ...,
            stream_options: Optional[_responses.response_create_params.StreamOptions] | _responses.Omit | Omit = ...,
            temperature: Optional[float] | _responses.Omit | Omit = ...,
            text: _responses.ResponseTextConfigParam | _responses.Omit | Omit = ...,
            tool_choice: _responses.response_create_params.ToolChoice | _responses.Omit | Omit = ...,
            tools: Iterable[_responses.ToolParam] | _responses.Omit | Omit = ...,
            top_logprobs: Optional[int] | _responses.Omit | Omit = ...,
            top_p: Optional[float] | _responses.Omit | Omit = ...,
            truncation: Optional[Literal['auto', 'disabled']] | _responses.Omit | Omit = ...,
            user: str | _responses.Omit | Omit = ...,
            extra_headers: Mapping[str, str] | None = None,
            extra_query: Mapping[str, object] | None = None,
            extra_body: Mapping[str, object] | None = None,
            timeout: float | httpx.Timeout | NotGiven | None = ...,
            cache: bool | CacheOptions | None = ...,
            prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...,
            images: bool | str | Mapping[str, Any] | Any | None = ...,
            wire: Literal['json', 'protobuf', 'auto'] = ...,
            hedge: bool | HedgeConfig | None = ...,
            stream_idle_timeout: float | None = ...,
            auto_cache_key: bool | None = ...,
            stream_resume: Literal['auto', 'continue'] = ...,
            stream_early_resume: bool = ...,
            priority: Literal['low', 'normal'] | None = ...,
        ) -> Response | AsyncStream[ResponseStreamEvent]: ...
    # end of signatures

    async def create(
        self,
        *,
        stream: Any = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        call = self._create_call(params, stream, extra_headers, extra_query, extra_body, timeout)
        return await self._client._request(call, response_object, _raw, response_stream_event)

    def connect(
        self,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, Any] | None = None,
        websocket_connection_options: Mapping[str, Any] | None = None,
        on_reconnecting: Callable[[Any], Any] | None = None,
        max_retries: int = 5,
        initial_delay: float = 0.5,
        max_delay: float = 8.0,
        max_queue_size: int = 1_048_576,
        *,
        warm: bool = False,
        reuse: bool = True,
    ) -> AsyncResponsesConnectionManager:
        """A persistent Responses WebSocket (the official signature and defaults) on llmclient's
        own WebSocket transport (``api/_async/ws_connection.py``; the ``ws`` extra).
        ``warm=True`` starts the handshake now, so it runs while the app gets ready.
        ``reuse``: take the socket an earlier conversation of this client left (same URL and
        headers), and leave this one's to the next when it ends with nothing in flight; False
        opens a socket of its own and closes it at the end, as the official client does."""
        from .ws_connection import AsyncResponsesConnectionManager  # the ws mode's, on first use

        return AsyncResponsesConnectionManager(
            self._client, extra_query=extra_query or {}, extra_headers=extra_headers or {},
            websocket_connection_options=websocket_connection_options or {},
            on_reconnecting=on_reconnecting, max_retries=max_retries, initial_delay=initial_delay,
            max_delay=max_delay, max_queue_size=max_queue_size, warm=warm, reuse=reuse)


class AsyncEmbeddings(_Resource):
    _client: AsyncOpenAI
    _official = ("embeddings",)

    async def create(
        self,
        *,
        input: Any,
        model: str,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        _raw: bool = False,
        **params: Any,
    ) -> Any:
        params["input"] = input
        params["model"] = model
        decode = _prepare_embedding_params(params)
        call = self._call("POST", "/embeddings", params, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return await self._client._request(call, _make_embeddings(decode), _raw)


class AsyncModels(_Resource):
    _client: AsyncOpenAI
    _official = ("models",)  # delete

    def list(self, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
             extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        def fetch() -> Any:
            call = self._call("GET", "/models", None, extra_headers=extra_headers, extra_query=extra_query,
                              extra_body=extra_body, timeout=timeout)
            return self._client._request(call, _models.async_models_page, _raw)

        return fetch() if _raw else _models.AsyncPaginator(fetch)  # unasync: sync=return fetch()

    async def retrieve(
        self, model: str, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False,
    ) -> Any:
        if not model:
            raise ValueError(f"Expected a non-empty value for `model` but received {model!r}")
        call = self._call("GET", f"/models/{model}", None, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return await self._client._request(call, model_object, _raw)
