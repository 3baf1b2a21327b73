# Generated from llmclient/api/_async/resources.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The API resources of the clients, written once: ``client.chat.completions.create(...)`` etc.

Each method only turns its arguments into a ``Call`` and names the result type (the shared
parts are ``llmclient/api/resources.py``'s). Written once, as coroutines; ``scripts/unasync.py``
generates the blocking twin (``llmclient/api/_sync/resources.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from ...lib._structured import parse, stream
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
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    from ..._client import OpenAI
    from ...pipeline.call import NotGiven
    from ..models import TracedChatCompletion as ChatCompletion
    from ..models import TracedCompletion as Completion
    from ..streaming import Stream

__all__ = [
    "Chat",
    "ChatCompletions",
    "Completions",
    "Embeddings",
    "Models",
    "Responses",
]


class ChatCompletions(_Resource):
    _client: OpenAI
    _official = ("chat", "completions")  # stored completions: retrieve, update, list, delete, messages

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
        call = self._call("POST", "/chat/completions", params, stream=_is_stream(stream), extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client._request(call, chat_completion, _raw, chat_completion_chunk)

    def parse(self, *, messages: Iterable[Any], model: str, _raw: bool = False, **params: Any) -> Any:
        """Structured outputs (``response_format=MyModel``, strict tools): the official
        ``ParsedChatCompletion``, with the official semantics (``llmclient.lib._structured``)."""
        if not _raw:
            return parse(self.create, messages=messages, model=model, **params)
        raws: list[Any] = []  # with_raw_response.parse (LangChain's with_structured_output)

        def create(**kw: Any) -> Any:
            raws.append(self.create(_raw=True, **kw))
            return raws[-1].parse()

        parsed = parse(create, messages=messages, model=model, **params)
        return _raw_with(raws[-1], parsed)

    def stream(self, *, messages: Iterable[Any], model: str, **params: Any) -> Any:
        """The official streaming helper (``with ... as stream: for event in stream``,
        events, ``get_final_completion()``) over llmclient's stream."""
        return stream(self.create, messages=messages, model=model, **params)


class Chat:
    def __init__(self, client: OpenAI) -> None:
        self.completions = ChatCompletions(client)


class Completions(_Resource):
    _client: OpenAI
    _official = ("completions",)

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
    _official = ("embeddings",)

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
    _official = ("models",)  # delete

    def list(self, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
             extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False) -> Any:
        def fetch() -> Any:
            call = self._call("GET", "/models", None, extra_headers=extra_headers, extra_query=extra_query,
                              extra_body=extra_body, timeout=timeout)
            return self._client._request(call, _models.models_page, _raw)

        return fetch()

    def retrieve(
        self, model: str, *, extra_headers: Headers = None, extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None, timeout: Any = NOT_GIVEN, _raw: bool = False,
    ) -> Any:
        if not model:
            raise ValueError(f"Expected a non-empty value for `model` but received {model!r}")
        call = self._call("GET", f"/models/{model}", None, extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)
        return self._client._request(call, model_object, _raw)
