"""What the API resources of both clients share: ``client.chat.completions.create(...)`` etc.

The resources themselves are written once, async, in ``llmclient/_async/resources.py`` (the
sync twin is generated). Each method only turns its arguments into a ``Call`` and names the
result type; parameters are passed through untouched (tools, response_format, n, logprobs,
stream_options, ...), except llmclient's own per-call options (cache, prefetch, images, wire),
which are taken out first (:meth:`_Resource._call`). Here: that base, the raw and streaming
response proxies, the Responses API's pass-through of the methods we do not accelerate,
``client.beta``, and the embeddings' base64 decoding.
"""

from __future__ import annotations

import binascii
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import MalformedResponseError
from .._keywords import check_keywords, create_params
from ..layers.options import OPTION_KEYS, split_options
from ..pipeline.call import NOT_GIVEN, Call
from ..wire.codec import RESPONSES_PATH, float32_list
from .models import create_embedding_response, jsonable
from .passthrough import passed
from .raw import RawResponse
from .response import AsyncResponseContextManager, ResponseContextManager

if TYPE_CHECKING:
    from .._client import BaseClient

__all__ = ["Beta"]

Headers = Mapping[str, str] | None


class _RawProxy:
    """``resource.with_raw_response.create(...)`` returns a RawResponse instead of the object."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return functools.partial(getattr(self._resource, name), _raw=True)


class _StreamingProxy:
    """``resource.with_streaming_response.create(...)``: the official context manager (``with``,
    or ``async with`` on an async client), sending on entry (``llmclient.api.response``)."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._resource, name)
        if self._resource._client._on_event_loop:  # an async client (AsyncClientIO mixed in)
            return lambda *args, **kwargs: AsyncResponseContextManager(
                lambda: method(*args, _raw=True, **kwargs))
        return lambda *args, **kwargs: ResponseContextManager(lambda: method(*args, _raw=True, **kwargs))


class _Resource:
    """A resource whose methods llmclient runs itself; ``_official`` names where the official
    client keeps the same resource, whose other methods (``models.delete``, the stored chat
    completions' ``retrieve`` / ``update`` / ``list`` / ``delete`` / ``messages``) are passed
    through to it (``api.passthrough``), their raw and streaming-response forms included."""

    _official: tuple[str, ...] = ()

    def __init__(self, client: BaseClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not self._official:  # the official resource's public methods only
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self._passed(), name)

    def _passed(self) -> Any:
        resource = passed(self._client, self._official[0])
        for part in self._official[1:]:
            resource = getattr(resource, part)
        return resource

    @property
    def with_raw_response(self) -> Any:
        return _CreateOrPassed(self, _RawProxy(self), "with_raw_response")

    @property
    def with_streaming_response(self) -> Any:
        return _CreateOrPassed(self, _StreamingProxy(self), "with_streaming_response")

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
            known = create_params(path, OPTION_KEYS)  # None: no openai to say what is known
            if known is not None and not known.issuperset(params):
                check_keywords(f"{'.'.join(self._official)}.create()", params, known)
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

    _official = ("responses",)

    def _create_call(self, params: dict[str, Any], stream: Any, extra_headers: Headers,
                     extra_query: Mapping[str, Any] | None, extra_body: Mapping[str, Any] | None,
                     timeout: Any) -> Call:
        return self._call("POST", RESPONSES_PATH, params, stream=_is_stream(stream), extra_headers=extra_headers,
                          extra_query=extra_query, extra_body=extra_body, timeout=timeout)


class _CreateOrPassed:
    """``resource.with_raw_response`` (or ``with_streaming_response``): the methods llmclient
    runs (``create``...) are ours, the rest the official resource's own."""

    def __init__(self, resource: _Resource, ours: Any, name: str) -> None:
        self._resource, self._ours, self._name = resource, ours, name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or callable(getattr(type(self._resource), name, None)) or not self._resource._official:
            return getattr(self._ours, name)
        return getattr(getattr(self._resource._passed(), self._name), name)


def _raw_with(raw: Any, parsed: Any) -> Any:
    """The RawResponse of a call whose ``parse()`` gives ``parsed`` instead."""
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


def _base64_vectors(value: dict[str, Any]) -> tuple[dict[str, Any], list[list[float] | None]]:
    """The base64 vectors of an embeddings answer, decoded (little-endian float32, as the API
    sends them), and a copy of the answer with an empty list in their place (``value`` itself is
    left alone: the cache or another caller may hold it). None for an item that was not base64."""
    vectors: list[list[float] | None] = []
    data: list[Any] = []
    for n, item in enumerate(value.get("data") or ()):
        emb = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(emb, str):
            vectors.append(None)
            data.append(item)
            continue
        try:
            vectors.append(float32_list(binascii.a2b_base64(emb)))  # a2b: b64decode minus a copy
        except ValueError as exc:  # binascii.Error, non-ASCII, not a whole number of floats
            raise MalformedResponseError(
                f"Malformed response body: embedding {n} is not base64 float32 ({exc})") from None
        data.append({**item, "embedding": []})
    return {**value, "data": data}, vectors


def _decoded_embeddings(value: dict[str, Any]) -> Any:
    """The response, its base64 vectors turned back into floats (the caller did not choose an
    encoding). The floats go in after the response object is built, as the official client
    does: validating millions of floats one by one cost more than decoding them."""
    if not value.get("data"):
        return create_embedding_response(value)
    value, vectors = _base64_vectors(value)
    response = create_embedding_response(value)
    data = getattr(response, "data", None) or ()
    for item, vector in zip(data, vectors, strict=False):
        if vector is None:
            continue
        if isinstance(item, dict):  # a loose construct() of an answer the types refused
            item["embedding"] = vector
        else:
            item.embedding = vector
    return response


def _make_embeddings(decode: bool) -> Callable[[dict[str, Any]], Any]:
    return _decoded_embeddings if decode else create_embedding_response


class Beta:
    """``client.beta.chat.completions.parse / stream``: the same resources as ``client.chat``;
    the rest of ``client.beta`` (assistants, threads, ...) is the official client's
    (``api/passthrough.py``)."""

    def __init__(self, chat: Any) -> None:
        self.chat = chat

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return passed(self.chat.completions._client, name, under="beta")
