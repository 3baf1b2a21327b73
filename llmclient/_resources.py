"""API resources with the official call shapes: ``client.chat.completions.create(...)`` etc.

Each method only turns its arguments into a ``Call`` and names the result type; parameters are
passed through untouched (tools, response_format, n, logprobs, stream_options, ...), except
llmclient's own per-call options (cache, prefetch, images, wire), which are taken out first.
"""

from __future__ import annotations

import base64
import functools
from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from ._call import NOT_GIVEN, Call, split_options
from ._models import (
    AsyncPaginator,
    async_models_page,
    chat_completion,
    chat_completion_chunk,
    completion,
    create_embedding_response,
    jsonable,
    models_page,
    response_stream_event,
)
from ._models import model as model_object
from ._models import response as response_object
from .wire.codec import RESPONSES_PATH

if TYPE_CHECKING:
    # The official types are what create() returns when ``openai`` is installed (_models).
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    from ._call import NotGiven
    from ._client import AsyncOpenAI, BaseClient, OpenAI
    from ._models import TracedChatCompletion as ChatCompletion
    from ._models import TracedCompletion as Completion
    from ._streaming import AsyncStream, Stream

__all__ = [
    "AsyncChat",
    "AsyncChatCompletions",
    "AsyncCompletions",
    "AsyncEmbeddings",
    "AsyncModels",
    "AsyncResponses",
    "Chat",
    "ChatCompletions",
    "Completions",
    "Embeddings",
    "Models",
    "Responses",
]

Headers = Mapping[str, str] | None
Timeout = "float | httpx.Timeout | None | NotGiven"


class _RawProxy:
    """``resource.with_raw_response.create(...)`` returns a RawResponse instead of the object."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return functools.partial(getattr(self._resource, name), _raw=True)


class _StreamingProxy:
    """``resource.with_streaming_response.create(...)``: the official context manager (``with``,
    or ``async with`` on an async client), sending on entry (``llmclient._response``)."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Any]:
        from ._client import AsyncOpenAI
        from ._response import AsyncResponseContextManager, ResponseContextManager

        method = getattr(self._resource, name)
        if isinstance(self._resource._client, AsyncOpenAI):
            return lambda *args, **kwargs: AsyncResponseContextManager(
                lambda: method(*args, _raw=True, **kwargs))
        return lambda *args, **kwargs: ResponseContextManager(lambda: method(*args, _raw=True, **kwargs))


class _Resource:
    def __init__(self, client: BaseClient) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> Any:
        return _RawProxy(self)

    @property
    def with_streaming_response(self) -> Any:
        return _StreamingProxy(self)

    def _call(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        *,
        stream: bool = False,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
    ) -> Call:
        client = self._client
        if params is not None:
            params = jsonable(params)  # response objects passed back (tool loops) as plain data
        body, options = split_options(params, client._options) if params is not None else (None, None)
        if stream and body is not None:
            body["stream"] = True
        return client._build_call(
            method, path, body, options=options, stream=stream, extra_headers=extra_headers,
            extra_query=extra_query, extra_body=extra_body, timeout=timeout,
        )


class _ResponsesBase(_Resource):
    """``client.responses``: ``create`` (streamed or not) runs through llmclient's pipeline, as
    chat does (HTTP/2, trace ids, timings, the cache where the answer is deterministic, hedging
    when ``store`` is False); every other method (``retrieve``, ``delete``, ``cancel``,
    ``input_items``, ``parse``, ``stream`` ...) is the official client's, passed through."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from ._passthrough import passed

        return getattr(passed(self._client, "responses"), name)

    @property
    def with_raw_response(self) -> Any:
        return _CreateOrPassed(self, _RawProxy(self), "with_raw_response")

    @property
    def with_streaming_response(self) -> Any:
        return _CreateOrPassed(self, _StreamingProxy(self), "with_streaming_response")

    def _create_call(self, params: dict[str, Any], stream: Any, extra_headers: Headers,
                     extra_query: Mapping[str, Any] | None, extra_body: Mapping[str, Any] | None,
                     timeout: Any) -> Call:
        return self._call("POST", RESPONSES_PATH, params, stream=_is_stream(stream), extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)


class _CreateOrPassed:
    """``responses.with_raw_response`` (or ``with_streaming_response``): ``create`` is ours,
    the rest the official resource's own."""

    def __init__(self, resource: _ResponsesBase, ours: Any, name: str) -> None:
        self._resource, self._ours, self._name = resource, ours, name

    def __getattr__(self, name: str) -> Any:
        if name == "create":
            return self._ours.create
        from ._passthrough import passed

        return getattr(getattr(passed(self._resource._client, "responses"), self._name), name)


def _raw_with(raw: Any, parsed: Any) -> Any:
    """The RawResponse of a call whose ``parse()`` gives ``parsed`` instead."""
    from ._client import RawResponse

    return RawResponse(raw.http_response, parsed)


def _is_stream(stream: Any) -> bool:
    return bool(stream) and stream is not NOT_GIVEN


def _prepare_embedding_params(params: dict[str, Any]) -> bool:
    """Ask for base64 when the caller did not choose (4x smaller on the wire, as the official
    client does) and return whether to decode it back to floats."""
    if params.get("encoding_format", NOT_GIVEN) is NOT_GIVEN:
        params["encoding_format"] = "base64"
        return True
    return False


def _decode_embeddings(value: dict[str, Any]) -> dict[str, Any]:
    for item in value.get("data") or ():
        emb = item.get("embedding")
        if isinstance(emb, str):
            floats = array("f")
            floats.frombytes(base64.b64decode(emb))  # little-endian float32, as the API sends
            item["embedding"] = floats.tolist()
    return value


def _make_embeddings(decode: bool) -> Callable[[dict[str, Any]], Any]:
    if decode:
        return lambda v: create_embedding_response(_decode_embeddings(v))
    return create_embedding_response


# -- sync ----------------------------------------------------------------------------------------

class ChatCompletions(_Resource):
    _client: OpenAI

    @overload
    def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> ChatCompletion: ...

    @overload
    def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Stream[ChatCompletionChunk]: ...

    @overload
    def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> ChatCompletion | Stream[ChatCompletionChunk]: ...

    def create(
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
        is_stream = _is_stream(stream)
        call = self._call("POST", "/chat/completions", params, stream=is_stream, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client._request(call, chat_completion, _raw, chat_completion_chunk)

    def parse(self, *, messages: Iterable[Any], model: str, _raw: bool = False, **params: Any) -> Any:
        """Structured outputs (``response_format=MyModel``, strict tools): the official
        ``ParsedChatCompletion``, with the official semantics (``llmclient.lib._structured``)."""
        from .lib._structured import parse

        if not _raw:
            return parse(self.create, messages=messages, model=model, **params)
        raws: list[Any] = []  # with_raw_response.parse (LangChain's with_structured_output)

        def create(**kw: Any) -> Any:
            raws.append(self.create(_raw=True, **kw))
            return raws[-1].parse()

        parsed = parse(create, messages=messages, model=model, **params)
        return _raw_with(raws[-1], parsed)

    def stream(self, *, messages: Iterable[Any], model: str, **params: Any) -> Any:
        """The official streaming helper (``with ... as stream: for event in stream``, events,
        ``get_final_completion()``) over llmclient's stream."""
        from .lib._structured import stream

        return stream(self.create, messages=messages, model=model, **params)


class Chat:
    def __init__(self, client: OpenAI) -> None:
        self.completions = ChatCompletions(client)


class Beta:
    """``client.beta.chat.completions.parse / stream``: the same resources as ``client.chat``;
    the rest of ``client.beta`` (assistants, threads, ...) is the official client's
    (``_passthrough``)."""

    def __init__(self, chat: Any) -> None:
        self.chat = chat

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from ._passthrough import passed

        return passed(self.chat.completions._client, name, under="beta")


class Completions(_Resource):
    _client: OpenAI

    @overload
    def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Completion: ...

    @overload
    def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Stream[Completion]: ...

    @overload
    def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Completion | Stream[Completion]: ...

    def create(
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
        return self._client._request(call, completion, _raw)


class Responses(_ResponsesBase):
    _client: OpenAI

    @overload
    def create(
        self,
        *,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Response: ...

    @overload
    def create(
        self,
        *,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Stream[ResponseStreamEvent]: ...

    @overload
    def create(
        self,
        *,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Response | Stream[ResponseStreamEvent]: ...

    def create(
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
        return self._client._request(call, response_object, _raw, response_stream_event)


class Embeddings(_Resource):
    _client: OpenAI

    def create(
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
        return self._client._request(call, _make_embeddings(decode), _raw)


class Models(_Resource):
    _client: OpenAI

    def list(self, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
             extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        call = self._call("GET", "/models", None, extra_headers=extra_headers, extra_query=extra_query,
                          extra_body=extra_body, timeout=timeout)
        return self._client._request(call, models_page, _raw)

    def retrieve(self, model: str, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
                 extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        if not model:
            raise ValueError(f"Expected a non-empty value for `model` but received {model!r}")
        call = self._call("GET", f"/models/{model}", None, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client._request(call, model_object, _raw)


# -- async ---------------------------------------------------------------------------------------

class AsyncChatCompletions(_Resource):
    _client: AsyncOpenAI

    @overload
    async def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> ChatCompletion: ...

    @overload
    async def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> AsyncStream[ChatCompletionChunk]: ...

    @overload
    async def create(
        self,
        *,
        messages: Iterable[Any],
        model: str,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]: ...

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
        """See :meth:`ChatCompletions.parse`."""
        from .lib._structured import async_parse

        if not _raw:
            return await async_parse(self.create, messages=messages, model=model, **params)
        raws: list[Any] = []

        async def create(**kw: Any) -> Any:
            raws.append(await self.create(_raw=True, **kw))
            return raws[-1].parse()

        parsed = await async_parse(create, messages=messages, model=model, **params)
        return _raw_with(raws[-1], parsed)

    def stream(self, *, messages: Iterable[Any], model: str, **params: Any) -> Any:
        """See :meth:`ChatCompletions.stream` (``async with``)."""
        from .lib._structured import async_stream

        return async_stream(self.create, messages=messages, model=model, **params)


class AsyncChat:
    def __init__(self, client: AsyncOpenAI) -> None:
        self.completions = AsyncChatCompletions(client)


class AsyncCompletions(_Resource):
    _client: AsyncOpenAI

    @overload
    async def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Completion: ...

    @overload
    async def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> AsyncStream[Completion]: ...

    @overload
    async def create(
        self,
        *,
        model: str,
        prompt: Any,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Completion | AsyncStream[Completion]: ...

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

    @overload
    async def create(
        self,
        *,
        stream: Literal[False] | NotGiven | None = NOT_GIVEN,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Response: ...

    @overload
    async def create(
        self,
        *,
        stream: Literal[True],
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> AsyncStream[ResponseStreamEvent]: ...

    @overload
    async def create(
        self,
        *,
        stream: bool,
        extra_headers: Headers = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: Any = NOT_GIVEN,
        **params: Any,
    ) -> Response | AsyncStream[ResponseStreamEvent]: ...

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


class AsyncEmbeddings(_Resource):
    _client: AsyncOpenAI

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

    def list(self, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
             extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        def fetch() -> Any:
            call = self._call("GET", "/models", None, extra_headers=extra_headers, extra_query=extra_query,
                              extra_body=extra_body, timeout=timeout)
            return self._client._request(call, async_models_page, _raw)

        return fetch() if _raw else AsyncPaginator(fetch)

    async def retrieve(self, model: str, *, extra_headers: Headers = None,
                       extra_query: Mapping[str, Any] | None = None, extra_body: Mapping[str, Any] | None = None,
                       timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        if not model:
            raise ValueError(f"Expected a non-empty value for `model` but received {model!r}")
        call = self._call("GET", f"/models/{model}", None, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return await self._client._request(call, model_object, _raw)
