"""Response objects: the official ``openai`` types when that package is installed, else light
views over the decoded dict.

With ``openai`` importable (and ``LLMCLIENT_TYPES`` not ``light``), every response is the
official pydantic model, built by pydantic-core's validator from the dict orjson produced
(several times cheaper than the official client's own construction path; measured by
``python -m benchmarks.client_overhead``); data the official models do not validate (a server's
own finish_reason, say) is built the official client's way instead (``construct``: loose, as
sent). ``openai`` is imported on the first response, never by ``import llmclient``.

The light views, below:

The official client validates every response (and every stream chunk) into pydantic models;
that costs tens of microseconds per chunk. Here an object is a thin view over the dict orjson
produced: ``r.choices[0].message.content`` wraps only what is touched, once (the wrapped value
is cached on the instance). Known optional fields that the server left out read as ``None``,
like the official models; unknown fields the server sent are reachable too (the official
models allow extra fields).
"""

from __future__ import annotations

import importlib
import os
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import orjson

__all__ = [
    "BaseModel",
    "ChatCompletion",
    "ChatCompletionChunk",
    "Completion",
    "CreateEmbeddingResponse",
    "Model",
    "SyncPage",
    "jsonable",
]

_M = TypeVar("_M", bound="BaseModel")

if TYPE_CHECKING:  # what create() is typed to return: the official types, with llmclient's extras
    import openai.types
    import openai.types.chat

    from ..pipeline.timings import CallRecord

    class _Traced:
        trace_id: str
        timings: CallRecord
        _request_id: str | None

    class TracedChatCompletion(openai.types.chat.ChatCompletion, _Traced): ...

    class TracedCompletion(openai.types.Completion, _Traced): ...


class _Field:
    """A known field: reads the JSON value on first access, wraps objects in their model, and
    caches the result in the instance (a non-data descriptor, so the cached value wins from
    then on). ~3x cheaper than the ``__getattr__`` fallback, which unknown fields still use."""

    __slots__ = ("child", "name")

    def __init__(self, name: str, child: type[BaseModel] | None) -> None:
        self.name = name
        self.child = child

    def __get__(self, obj: BaseModel | None, cls: type | None = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        value = d["_data"].get(self.name)
        if isinstance(value, (dict, list)):  # scalars, most reads, skip the call
            value = _wrap(value, self.child or BaseModel)
        d[self.name] = value
        return value


class BaseModel:
    """A read-only attribute view over a JSON object."""

    _fields: ClassVar[frozenset[str]] = frozenset()
    _children: ClassVar[dict[str, type[BaseModel]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for name in cls.__dict__.get("_fields", ()):
            if name not in cls.__dict__ and not hasattr(BaseModel, name):
                setattr(cls, name, _Field(name, cls._children.get(name)))

    def __init__(self, data: dict[str, Any]) -> None:
        self.__dict__["_data"] = data

    @classmethod
    def construct(cls: type[_M], **data: Any) -> _M:
        return cls(data)

    def __getattr__(self, name: str) -> Any:
        # Unknown fields only (known ones are _Field descriptors); the result is cached.
        d = self.__dict__
        try:
            value = d["_data"][name]
        except KeyError:
            if name in self._fields and name[0] != "_":
                return None
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            ) from None
        if name[0] == "_":
            raise AttributeError(name)
        value = _wrap(value, self._children.get(name, BaseModel))
        d[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__["_data"][name] = value
        self.__dict__.pop(name, None)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__["_data"]

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__["_data"] = state

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BaseModel):
            return type(self) is type(other) and self._data == other._data
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__["_data"].items())
        return f"{type(self).__name__}({inner})"

    def __rich_repr__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__["_data"].items()

    def model_dump(self, *, exclude_none: bool = False, exclude_unset: bool = False, **_: Any) -> dict[str, Any]:
        """A deep copy of the object as plain data (known absent fields as None unless excluded)."""
        data: dict[str, Any] = orjson.loads(orjson.dumps(self.__dict__["_data"]))
        if not exclude_unset and not exclude_none:
            for name in self._fields:
                data.setdefault(name, None)
        if exclude_none:
            data = _drop_none(data)
        return data

    def model_dump_json(self, *, indent: int | None = None, exclude_none: bool = False, **_: Any) -> str:
        option = orjson.OPT_INDENT_2 if indent else 0
        value = self.model_dump(exclude_none=exclude_none, exclude_unset=True)
        return orjson.dumps(value, option=option).decode()

    def to_dict(self) -> dict[str, Any]:
        """Plain data with only the fields the server sent (the official ``to_dict()``)."""
        return self.model_dump(exclude_unset=True)

    def to_json(self, *, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)


def _wrap(value: Any, model: type[BaseModel]) -> Any:
    if isinstance(value, dict):
        return model(value)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [model(v) if isinstance(v, dict) else v for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """``value`` with every response object in it (ours or a pydantic model, at any depth)
    turned into plain data, as the official client sends them: the fields that were set
    (``exclude_unset``; a field the server sent as null goes back as null). Plain data is
    returned as is, not copied; a container is copied only where something in it changed.
    The cookbook's tool loop, ``messages.append(response.choices[0].message)``, needs this."""
    t = type(value)
    if t in _SCALARS:
        return value
    if t is dict:
        out = None
        for k, v in value.items():
            if type(v) in _SCALARS:
                continue
            new = jsonable(v)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if t is list or t is tuple:
        items = None
        for i, v in enumerate(value):
            if type(v) in _SCALARS:
                continue
            new = jsonable(v)
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    if isinstance(value, BaseModel):
        return value.to_dict()
    if hasattr(value, "model_fields_set") and hasattr(value, "model_dump"):  # pydantic v2
        return jsonable(value.model_dump(exclude_unset=True, mode="json", by_alias=True))
    return value


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _model(name: str, fields: str, children: dict[str, type[BaseModel]] | None = None) -> type[BaseModel]:
    return type(name, (BaseModel,), {"_fields": frozenset(fields.split()), "_children": children or {}})


# Field lists follow openai-python's types (openai/types/chat/*.py, completion*.py, embedding*.py).
Function = _model("Function", "name arguments")
ChatCompletionMessageToolCall = _model(
    "ChatCompletionMessageToolCall", "id function type custom", {"function": Function}
)
ChatCompletionMessage = _model(
    "ChatCompletionMessage",
    "content refusal role annotations audio function_call tool_calls",
    {"tool_calls": ChatCompletionMessageToolCall, "function_call": Function},
)
ChoiceLogprobs = _model("ChoiceLogprobs", "content refusal")
Choice = _model(
    "Choice", "finish_reason index logprobs message",
    {"message": ChatCompletionMessage, "logprobs": ChoiceLogprobs},
)
CompletionTokensDetails = _model(
    "CompletionTokensDetails",
    "accepted_prediction_tokens audio_tokens reasoning_tokens rejected_prediction_tokens",
)
PromptTokensDetails = _model("PromptTokensDetails", "audio_tokens cached_tokens")
CompletionUsage = _model(
    "CompletionUsage",
    "completion_tokens prompt_tokens total_tokens completion_tokens_details prompt_tokens_details",
    {"completion_tokens_details": CompletionTokensDetails, "prompt_tokens_details": PromptTokensDetails},
)
_COMPLETION_FIELDS = "id choices created model object service_tier system_fingerprint usage"
ChatCompletion = _model("ChatCompletion", _COMPLETION_FIELDS, {"choices": Choice, "usage": CompletionUsage})

ChoiceDeltaToolCallFunction = _model("ChoiceDeltaToolCallFunction", "arguments name")
ChoiceDeltaToolCall = _model(
    "ChoiceDeltaToolCall", "index id function type", {"function": ChoiceDeltaToolCallFunction}
)
ChoiceDelta = _model(
    "ChoiceDelta", "content function_call refusal role tool_calls",
    {"tool_calls": ChoiceDeltaToolCall, "function_call": ChoiceDeltaToolCallFunction},
)
ChunkChoice = _model(
    "ChunkChoice", "delta finish_reason index logprobs", {"delta": ChoiceDelta, "logprobs": ChoiceLogprobs}
)
ChatCompletionChunk = _model(
    "ChatCompletionChunk", _COMPLETION_FIELDS, {"choices": ChunkChoice, "usage": CompletionUsage}
)

CompletionChoice = _model("CompletionChoice", "finish_reason index logprobs text")
Completion = _model("Completion", _COMPLETION_FIELDS, {"choices": CompletionChoice, "usage": CompletionUsage})

Embedding = _model("Embedding", "embedding index object")
EmbeddingUsage = _model("Usage", "prompt_tokens total_tokens")
CreateEmbeddingResponse = _model(
    "CreateEmbeddingResponse", "data model object usage", {"data": Embedding, "usage": EmbeddingUsage}
)

Model = _model("Model", "id created object owned_by")


# The Responses API (openai/types/responses/response.py and the stream events).
ResponseOutputText = _model("ResponseOutputText", "annotations text type logprobs")
ResponseOutputItem = _model(
    "ResponseOutputItem", "id content role status type arguments call_id name summary",
    {"content": ResponseOutputText},
)
ResponseUsage = _model(
    "ResponseUsage", "input_tokens input_tokens_details output_tokens output_tokens_details total_tokens")


class Response(BaseModel):
    """A Responses API answer; ``output_text`` joins its output's text, as the official one does."""

    _fields = frozenset((
        "id", "created_at", "error", "incomplete_details", "instructions", "metadata", "model", "object",
        "output", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p", "background",
        "max_output_tokens", "previous_response_id", "reasoning", "service_tier", "status", "text",
        "truncation", "usage", "user", "store",
    ))
    _children = {"output": ResponseOutputItem, "usage": ResponseUsage}

    @property
    def output_text(self) -> str:
        return "".join(part.get("text") or "" for item in self._data.get("output") or ()
                       if item.get("type") == "message"
                       for part in item.get("content") or () if part.get("type") == "output_text")


ResponseStreamEvent = _model(
    "ResponseStreamEvent",
    "type sequence_number response item_id output_index content_index delta text item part logprobs "
    "code message param arguments name",
    {"response": Response, "item": ResponseOutputItem, "part": ResponseOutputText},
)


class SyncPage(BaseModel, Generic[_M]):
    """A list response (``models.list()``): iterate it for the items, ``.data`` for the list."""

    _fields = frozenset({"data", "object", "has_more"})
    _children = {"data": Model}

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data or [])

    def has_next_page(self) -> bool:
        return False


class AsyncPaginator(Generic[_M]):
    """``await client.models.list()`` gives the page; ``async for m in client.models.list()`` its items."""

    def __init__(self, fetch: Callable[[], Awaitable[SyncPage[_M]]]) -> None:
        self._fetch = fetch

    def __await__(self) -> Generator[Any, None, SyncPage[_M]]:
        return self._fetch().__await__()

    async def __aiter__(self) -> AsyncIterator[Any]:
        page = await self._fetch()
        for item in page.data:  # one page: the official AsyncPage is not iterable synchronously
            yield item


AsyncPage = SyncPage


# -- the official types -------------------------------------------------------------------------

def official_types_enabled() -> bool:
    """Whether responses are the official types: ``openai`` importable and not turned off
    with ``LLMCLIENT_TYPES=light``."""
    if os.environ.get("LLMCLIENT_TYPES", "").lower() == "light":
        return False
    try:
        import openai  # noqa: F401
    except ImportError:
        return False
    return True


class _Factory:
    """``make(data)`` for one response type: the official class (``module:Name``) built by
    its validator, falling back to its loose ``construct``; or, without ``openai``, ours.
    Resolved on the first response, so ``import llmclient`` never imports ``openai``."""

    __slots__ = ("build", "light", "target")

    def __init__(self, target: str, light: Callable[[dict[str, Any]], Any]) -> None:
        self.target = target
        self.light = light
        self.build: Callable[[dict[str, Any]], Any] | None = None

    def __call__(self, data: dict[str, Any]) -> Any:
        build = self.build
        if build is None:
            build = self.build = self._resolve()
        return build(data)

    def official_class(self) -> type | None:
        if not official_types_enabled():
            return None
        module, _, name = self.target.partition(":")
        cls: Any = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
        return cls  # type: ignore[no-any-return,unused-ignore]

    def _resolve(self) -> Callable[[dict[str, Any]], Any]:
        cls: Any = self.official_class()
        if cls is None:
            return self.light
        # pydantic comes with openai: only a validating parse loads it
        from pydantic import ValidationError

        cls.model_rebuild()  # the official models defer building their validators
        validate = cls.__pydantic_validator__.validate_python  # model_validate, minus a call
        construct = cls.construct

        def build(data: dict[str, Any]) -> Any:
            try:
                return validate(data)
            except ValidationError:  # not what the official models say: kept as sent
                return construct(**data)

        return build


chat_completion = _Factory("openai.types.chat:ChatCompletion", ChatCompletion)
chat_completion_chunk = _Factory("openai.types.chat:ChatCompletionChunk", ChatCompletionChunk)
completion = _Factory("openai.types:Completion", Completion)
create_embedding_response = _Factory("openai.types:CreateEmbeddingResponse", CreateEmbeddingResponse)
model = _Factory("openai.types:Model", Model)
_model_page = _Factory("openai.pagination:SyncPage", SyncPage)
_async_model_page = _Factory("openai.pagination:AsyncPage", SyncPage)


def _members_by_tag(union: Any) -> dict[str, Any]:
    """The members of an official union tagged by ``type`` (``Annotated[Union[...], ...]``), by
    tag. The official annotation is not a pydantic discriminator, so validating against the union
    itself tries its members in turn (about 50 us for one stream event, against 1.5 us here)."""
    members: Any = typing.get_args(union)[0] if typing.get_origin(union) is typing.Annotated else union
    by_tag: dict[str, Any] = {}
    for member in typing.get_args(members):
        member.model_rebuild()
        for tag in typing.get_args(member.model_fields["type"].annotation):
            by_tag[tag] = member
    return by_tag


def _tagged_builder(union: Any, unknown: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    # pydantic comes with openai: only a validating parse loads it
    from pydantic import ValidationError

    by_tag = _members_by_tag(union)

    def build(data: dict[str, Any]) -> Any:
        member = by_tag.get(data.get("type"))  # type: ignore[arg-type]
        if member is None:
            return unknown(data)
        try:
            return member.__pydantic_validator__.validate_python(data)
        except ValidationError:
            return member.construct(**data)

    return build


class _UnionFactory(_Factory):
    """``make(data)`` for a union the official types tag by ``type`` (``module:Name`` is the
    annotated union): the member is looked up by the tag and built by its own validator; a tag
    it does not know (a newer event type) is kept as sent, as the official client keeps it."""

    __slots__ = ()

    def _resolve(self) -> Callable[[dict[str, Any]], Any]:
        union: Any = self.official_class()
        if union is None:
            return self.light
        # openai (~0.7 s to import): only asked for by isinstance checks on official types
        from openai import BaseModel as OfficialBase

        return _tagged_builder(union, lambda data: OfficialBase.construct(**data))


class TaggedListFactory(_Factory):
    """An official class with a list of tagged items (a ``Response``'s ``output``, an Anthropic
    ``Message``'s ``content``): the items are built by their tag first (see
    :func:`_members_by_tag`), then the object around them, which accepts them as they are. An
    item of a type the union does not know goes to the object's validator as sent. ``field``
    names the list, ``union`` (``module:Name``) its items' union; both are imported with the
    official class, on the first answer."""

    __slots__ = ("field", "union")

    def __init__(self, target: str, light: Callable[[dict[str, Any]], Any], field: str, union: str) -> None:
        super().__init__(target, light)
        self.field = field
        self.union = union

    def _resolve(self) -> Callable[[dict[str, Any]], Any]:
        whole = super()._resolve()
        if whole is self.light:
            return whole
        module, _, name = self.union.partition(":")
        item = _tagged_builder(getattr(importlib.import_module(module), name), lambda data: data)
        field = self.field

        def build(data: dict[str, Any]) -> Any:
            items = data.get(field)
            if type(items) is list and items:
                data = {**data, field: [item(o) if type(o) is dict else o for o in items]}
            return whole(data)

        return build


# openai (~0.7 s to import): only a Responses answer loads it
response = TaggedListFactory("openai.types.responses:Response", Response, "output",
                             "openai.types.responses:ResponseOutputItem")
response_stream_event = _UnionFactory("openai.types.responses:ResponseStreamEvent", ResponseStreamEvent)


def _page(factory: _Factory, data: dict[str, Any]) -> Any:
    """A page of models: the official page class (``factory``'s) of ``Model``, or ours."""
    if factory.build is None:
        cls: Any = factory.official_class()
        if cls is None:
            factory.build = SyncPage
        else:
            page_cls: Any = cls[model.official_class()]
            factory.build = lambda d: page_cls.construct(
                **{**d, "data": [model(m) for m in d.get("data") or ()]})
    return factory(data)


def models_page(data: dict[str, Any]) -> Any:
    """``models.list()``: the official ``SyncPage[Model]`` (iterable, ``.data``), or ours."""
    return _page(_model_page, data)


def async_models_page(data: dict[str, Any]) -> Any:
    """``await AsyncOpenAI().models.list()``: the official ``AsyncPage[Model]``, or ours."""
    return _page(_async_model_page, data)
