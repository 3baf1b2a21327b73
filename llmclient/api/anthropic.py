"""What the Anthropic face shares between its sync and async resources (no I/O): its headers,
its errors, its response types, and the checks that run before anything is sent.

The types are the official ``anthropic.types`` when that package is installed (built by their
pydantic validators, as ``api/models.py`` does for ``openai``; a stream event by its ``type``
tag), else llmclient's light attribute views (``api/models.py``'s ``BaseModel``). ``anthropic`` is
imported on the first answer, never by ``import llmclient``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson

from .._errors import (
    APIConnectionError,
    APIStatusError,
    OpenAIError,
    anthropic_status_error_class,
    describe_error_body,
)
from ..layers.answer import finish as _finish
from ..layers.options import OPTION_KEYS, split_options
from ..pipeline.call import is_given
from .errors import OpenAIErrors
from .headers import USER_AGENT, merge_custom, platform_headers
from .models import (
    BaseModel,
    TaggedListFactory,
    _Factory,
    _members_by_tag,
    jsonable,
)
from .resources import Headers, _Resource

if TYPE_CHECKING:
    from ..pipeline.call import Call

__all__ = [
    "ANTHROPIC_ERRORS",
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "MESSAGES_PATH",
    "PREFETCH_UNSUPPORTED",
    "AnthropicTimeout",
    "anthropic_headers",
    "check_create",
    "finish",
    "official_timeout",
]

# The API version header every request carries (https://docs.anthropic.com/en/api/versioning,
# read 2026-12-07: "2023-06-01" is the current stable version); ``default_headers`` may override.
ANTHROPIC_VERSION: Final = "2023-06-01"
DEFAULT_BASE_URL: Final = "https://api.anthropic.com"  # the official client's (anthropic 2.17)
MESSAGES_PATH: Final = "/v1/messages"
# Follow-up prediction reads chat completions' answers; this face offers client.warm(...) alone.
PREFETCH_UNSUPPORTED: Final = (
    "prefetch= is not supported on the Anthropic face (its follow-up prediction reads chat completions "
    "answers); client.warm(model=..., system=..., messages=..., keep_warm=True) warms a prompt's prefix here")

# ``messages.create``'s keywords (the Messages API reference, read 2026-12-07), for a clear error
# on a misspelt one when ``anthropic`` is not installed to give its own signature.
CREATE_PARAMS: Final = frozenset({
    "max_tokens", "messages", "model", "container", "context_management", "inference_geo", "mcp_servers",
    "metadata", "output_config", "output_format", "service_tier", "stop_sequences", "stream", "system",
    "temperature", "thinking", "tool_choice", "tools", "top_k", "top_p", "betas", "user_profile_id", "workspace_id",
    "extra_headers", "extra_query", "extra_body", "timeout",
})
# ``beta.messages.create``'s own on top (anthropic 2.17's signature, read 2026-12-07).
BETA_CREATE_PARAMS: Final = frozenset({"billing_policy", "cache_control", "compaction", "diagnostics",
                                       "fallback_credit_token", "fallbacks", "speed", "thread"})
COUNT_PARAMS: Final = frozenset({"messages", "model", "system", "thinking", "tool_choice", "tools",
                                 "mcp_servers", "context_management", "output_config", "output_format", "user_profile_id",
                                 "workspace_id",
                                 "extra_headers", "extra_query", "extra_body", "timeout"})


# The keywords the official client sends as headers, not in the body (anthropic 2.17,
# resources/messages/messages.py and resources/models.py: ``strip_not_given({...})`` merged under
# ``extra_headers``); in the body the API refuses them ("Extra inputs are not permitted").
HEADER_PARAMS: Final = {"user_profile_id": "anthropic-user-profile-id", "workspace_id": "anthropic-workspace-id"}


def header_params(params: dict[str, Any], extra_headers: Headers) -> Headers:
    """Take the keywords of ``HEADER_PARAMS`` out of ``params``; ``extra_headers`` with the given
    ones added under it (the caller's own headers win, as the official client merges them)."""
    moved = {HEADER_PARAMS[k]: params.pop(k) for k in [k for k in params if k in HEADER_PARAMS]}
    given = {k: str(v) for k, v in moved.items() if v is not None and is_given(v)}
    return {**given, **(extra_headers or {})} if given else extra_headers


def beta_tool_params(tools: Any) -> Any:
    """``beta.messages.create``'s ``tools``: each object with a ``to_dict()`` (a ``@beta_tool``
    function, a builtin tool) as its entry, as the official client sends it (anthropic 2.17,
    ``lib/tools/_tool_params.to_tool_params``); entries and an omitted value as given. Pure."""
    if not is_given(tools) or tools is None:
        return tools
    return [t.to_dict() if callable(getattr(t, "to_dict", None)) else t for t in tools]


# The official client's rule for a whole (not streamed) answer (anthropic 2.17,
# ``resources/messages/messages.py`` ``create`` and ``_base_client._calculate_nonstreaming_timeout``,
# read 2026-12-07): with the client's default timeout and none given for the call, a
# ``max_tokens`` that may take over 10 minutes (an hour per 128,000 tokens) or above the model's
# non-streaming limit is refused before sending. Code written for it relies on the refusal:
# pydantic-ai's ``AnthropicModel`` catches it and streams the call instead.
OFFICIAL_DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)  # anthropic 2.17 DEFAULT_TIMEOUT
NONSTREAMING_MAX_S: Final = 10 * 60
TOKENS_PER_HOUR: Final = 128_000
# ``MODEL_NONSTREAMING_TOKENS`` (anthropic 2.17 ``_constants.py``, read 2026-12-07)
MODEL_NONSTREAMING_TOKENS: Final = {
    "claude-opus-4-20250514": 8192, "claude-opus-4-0": 8192, "claude-4-opus-20250514": 8192,
    "anthropic.claude-opus-4-20250514-v1:0": 8192, "claude-opus-4@20250514": 8192,
    "anthropic.claude-opus-4-1-20250805-v1:0": 8192, "claude-opus-4-1@20250805": 8192,
}
STREAMING_REQUIRED: Final = (
    "Streaming is required for operations that may take longer than 10 minutes. See "
    "https://platform.claude.com/docs/en/cli-sdks-libraries/sdks/python#long-requests for more details")


def check_whole_answer(params: Mapping[str, Any], timeout: Any, client_timeout: Any) -> None:
    """Raise the official ValueError for a whole answer the official client refuses to wait for
    (see ``STREAMING_REQUIRED``): only with the default timeout and none given for the call."""
    if is_given(timeout) or client_timeout != OFFICIAL_DEFAULT_TIMEOUT:
        return
    max_tokens = params.get("max_tokens")
    if not isinstance(max_tokens, int):
        return
    limit = MODEL_NONSTREAMING_TOKENS.get(params.get("model"))  # type: ignore[arg-type]
    if 3600 * max_tokens / TOKENS_PER_HOUR > NONSTREAMING_MAX_S or (limit and max_tokens > limit):
        raise ValueError(STREAMING_REQUIRED)


def anthropic_headers(api_key: str | None, auth_token: str | None, is_async: bool,
                      custom: Mapping[str, str | None]) -> dict[str, str]:
    """What the official anthropic client sends on every request: accept, content-type, its
    ``X-Stainless-*`` identification (llmclient's values), ``anthropic-version``, the credential
    (``x-api-key``, or ``Authorization: Bearer`` for an ``auth_token``), then ``default_headers``."""
    headers = {
        "accept": "application/json",
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        **platform_headers(is_async),
        "anthropic-version": ANTHROPIC_VERSION,
    }
    if api_key is not None:
        headers["x-api-key"] = api_key
    if auth_token is not None:
        headers["authorization"] = f"Bearer {auth_token}"
    return merge_custom(headers, custom)


def _is_official_timeout(value: object) -> bool:
    """Whether ``value`` is an ``httpx2.Timeout`` (anthropic 2.x's ``anthropic.Timeout``), told by
    its shape so that httpx2 is not imported: a ``Timeout`` with ``as_dict()``."""
    return type(value).__name__ == "Timeout" and callable(getattr(value, "as_dict", None))


def official_timeout(value: Any) -> Any:
    """A ``timeout=`` as llmclient's calls take it: the official client's own ``anthropic.Timeout``
    (anthropic 2.x's is ``httpx2.Timeout``, which code written for it passes, as pydantic-ai does
    per call) as the ``httpx.Timeout`` of the same four values; anything else as given (numbers,
    None, ``httpx.Timeout``, and what the config then refuses). Pure: httpx2 is not imported."""
    if isinstance(value, httpx.Timeout):
        return value
    if _is_official_timeout(value):
        return httpx.Timeout(**value.as_dict())
    return value


class AnthropicTimeout(httpx.Timeout):
    """The face's ``client.timeout``: an ``httpx.Timeout`` that is also equal to the official
    client's ``anthropic.Timeout`` of the same values. Code written for the official client
    compares them: pydantic-ai (2.78) sends a long answer as a stream at once when
    ``client.timeout != anthropic DEFAULT_TIMEOUT``, where with the official client it sends it
    whole first; llmclient's default is the official one, so it must compare equal."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, httpx.Timeout) and not _is_official_timeout(other):
            return NotImplemented
        return self.as_dict() == other.as_dict()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # as httpx.Timeout's (it defines __eq__ alone)


def credentials_from_env(api_key: str | None, auth_token: str | None) -> tuple[str | None, str | None]:
    """The official client's rule: the arguments, else ``ANTHROPIC_API_KEY`` /
    ``ANTHROPIC_AUTH_TOKEN``; one of them is needed (raised here, before anything is sent)."""
    if api_key is None:
        api_key = os.environ.get("ANTHROPIC_API_KEY") or None
    if auth_token is None:
        auth_token = os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
    if api_key is None and auth_token is None:
        raise OpenAIError(
            "The api_key client option must be set either by passing api_key to the client or by "
            "setting the ANTHROPIC_API_KEY environment variable (or auth_token / ANTHROPIC_AUTH_TOKEN)"
        )
    return api_key, auth_token


def _official_params(method: str, beta: bool = False) -> frozenset[str] | None:
    """The keywords the installed anthropic's ``Messages.<method>`` (``beta.messages``'s with
    ``beta``) takes (None: not installed, or ``LLMCLIENT_TYPES=light`` and not imported by the
    app: then the names known here)."""
    if os.environ.get("LLMCLIENT_TYPES", "").lower() == "light" and "anthropic" not in sys.modules:
        return None
    try:
        module = importlib.import_module("anthropic.resources.beta.messages" if beta else "anthropic.resources.messages")
    except ImportError:  # (its signature: only when a check needs it)
        return None
    return frozenset(inspect.signature(getattr(module.Messages, method)).parameters) - {"self"}


_known: dict[tuple[str, bool], frozenset[str]] = {}


def check_create(where: str, params: Mapping[str, Any], method: str = "create", *, beta: bool = False) -> None:
    """Raise, before sending, the official TypeError for what ``messages.create`` (or
    ``count_tokens``; ``beta.messages``' with ``beta``) cannot take: a missing required keyword,
    an unknown one with the closest real name."""
    known = _known.get((method, beta))
    if known is None:
        official = _official_params(method, beta)
        base = CREATE_PARAMS if method == "create" else COUNT_PARAMS
        base = base | BETA_CREATE_PARAMS if beta else base
        known = _known[method, beta] = (official if official is not None else base) | OPTION_KEYS
    required = ("max_tokens", "messages", "model") if method == "create" else ("messages", "model")
    missing = [name for name in required if name not in params]
    if missing:
        names = " and ".join(repr(n) for n in missing)
        raise TypeError(f"{where} missing required keyword argument{'s' if len(missing) > 1 else ''}: {names}")
    for name in params:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{where} got an unexpected keyword argument {name!r}{hint}")


# -- errors -----------------------------------------------------------------------------------

class AnthropicErrors(OpenAIErrors):
    """The Anthropic face's :class:`~llmclient.layers.context.Errors`: anthropic's finer classes
    (529 ``OverloadedError``, 503 ``ServiceUnavailableError`` ...), the whole error body as the
    official client keeps it (``{"type": "error", "error": {...}}``), its ``request-id``."""

    @staticmethod
    def status_error(call: Call, response: httpx.Response, raw: bytes) -> APIStatusError:
        ctype = response.headers.get("content-type", "")
        body: object
        try:
            body = orjson.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace") if raw else None
        message = describe_error_body(response.status_code, body, raw, ctype)
        cls = anthropic_status_error_class(response.status_code)
        err = cls(message, response=response, body=body, trace_id=call.trace.trace_id, timings=call.record,
                  request_id=response.headers.get("request-id") or response.headers.get("x-request-id"))
        err.__dict__["api_message"] = _error_field(body, "message")
        return err

    @staticmethod
    def connection_error(call: Call, exc: Exception, request: httpx.Request | None) -> APIConnectionError:
        return OpenAIErrors.connection_error(call, exc, request)


def _error_field(body: object, name: str) -> Any:
    err = body.get("error") if isinstance(body, dict) else None
    return err.get(name) if isinstance(err, dict) else None


ANTHROPIC_ERRORS = AnthropicErrors()


def finish(call: Call, obj: Any, response: httpx.Response | None) -> Any:
    """The call's facts on an answer (``layers/answer.finish``), ``_request_id`` from Anthropic's
    ``request-id`` header (the official client's)."""
    obj = _finish(call, obj, response)
    d = getattr(obj, "__dict__", None)
    if d is not None and response is not None:
        d["_request_id"] = response.headers.get("request-id") or response.headers.get("x-request-id")
    return obj


# -- types ------------------------------------------------------------------------------------

def anthropic_types_enabled() -> bool:
    """Whether answers are the official ``anthropic.types``: installed, and not turned off with
    ``LLMCLIENT_TYPES=light``."""
    if os.environ.get("LLMCLIENT_TYPES", "").lower() == "light":
        return False
    try:
        import anthropic  # noqa: F401
    except ImportError:
        return False
    return True


class _AnthropicFactory(_Factory):
    """``make(data)`` for one ``anthropic.types`` class, else the light view."""

    __slots__ = ()

    def official_class(self) -> type | None:
        if not anthropic_types_enabled():
            return None
        module, _, name = self.target.partition(":")
        cls: Any = getattr(importlib.import_module(module), name)
        return cls


class _EventFactory(_AnthropicFactory):
    """A stream event: the member of ``RawMessageStreamEvent`` its ``type`` names, built by its
    own validator; a type it does not know (``ping``, a newer event) loosely, as sent."""

    __slots__ = ()

    def _resolve(self) -> Callable[[dict[str, Any]], Any]:
        union: Any = self.official_class()
        if union is None:
            return self.light
        # anthropic (and pydantic, which comes with it): only once the first event is built
        from anthropic import BaseModel as OfficialBase
        from pydantic import ValidationError

        by_tag = _members_by_tag(union)
        validators = {tag: member.__pydantic_validator__.validate_python for tag, member in by_tag.items()}
        delta_event = by_tag.get("content_block_delta")
        fast = delta_builder(delta_event) if delta_event is not None else None

        def build(data: dict[str, Any]) -> Any:
            kind = data.get("type")
            if kind == "content_block_delta" and fast is not None:
                obj = fast(data)
                if obj is not None:
                    return obj
            validate = validators.get(kind)  # type: ignore[arg-type]
            if validate is None:
                return OfficialBase.construct(**data)
            try:
                return validate(data)
            except ValidationError:
                return by_tag[kind].construct(**data)  # type: ignore[index]

        return build


# -- the delta events, built without the validator ----------------------------------------------
# A streamed answer is nearly all ``content_block_delta`` events (one per token), and their
# validation is most of what building one costs (about 2.3 us against 0.8 us here, measured with
# benchmarks/client_overhead's Anthropic arm): the event's ``delta`` is a union that the official
# annotation does not give pydantic as tagged, so it tries the members in turn. An event of the
# plain shape (exactly ``type``, an int ``index`` and a ``delta`` of exactly ``type`` and one
# string field) is built here as the validator would build it; any other shape goes to the
# validator. Whether the two agree is checked once, on a sample of each delta type, against the
# installed anthropic's validator; where they do not (a later version's fields), that delta type
# goes to the validator too.

def _pydantic_slots() -> tuple[Callable[[Any, Any], None], ...]:
    import pydantic  # the anthropic types' own dependency: loaded with them, not at `import llmclient`

    slots = pydantic.BaseModel.__dict__
    return tuple(slots[name].__set__ for name in
                 ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))


def _same(a: Any, b: Any) -> bool:
    """Whether two pydantic objects are alike to the last slot (their type, fields, fields set,
    extras and private state, nested objects too)."""
    if type(a) is not type(b) or not hasattr(a, "__pydantic_fields_set__"):
        return bool(a == b) and type(a) is type(b)
    if (a.__pydantic_fields_set__ != b.__pydantic_fields_set__ or a.__pydantic_extra__ != b.__pydantic_extra__
            or a.__pydantic_private__ != b.__pydantic_private__ or list(a.__dict__) != list(b.__dict__)):
        return False
    return all(_same(a.__dict__[k], b.__dict__[k]) for k in a.__dict__) and a.model_dump() == b.model_dump()


def delta_builder(event_cls: Any) -> Callable[[dict[str, Any]], Any] | None:
    """A builder for ``content_block_delta`` events of the plain shape (see above): the event as
    ``event_cls`` (the official ``RawContentBlockDeltaEvent``) validated would be, or None for a
    shape it does not build (the caller validates). None when no delta type passes the check."""
    if list(event_cls.model_fields) != ["delta", "index", "type"]:
        return None
    event_cls.model_rebuild()
    members: Any = event_cls.model_fields["delta"].annotation
    if typing.get_origin(members) is typing.Annotated:
        members = typing.get_args(members)[0]
    set_dict, set_fields, set_extra, set_private = _pydantic_slots()
    new = object.__new__
    validate = event_cls.__pydantic_validator__.validate_python
    kinds: dict[str, tuple[Any, str, frozenset[str]]] = {}  # delta type -> (class, its string field, its keys)
    for member in typing.get_args(members):
        fields = member.model_fields
        names = list(fields)
        if len(names) != 2 or names[1] != "type" or fields[names[0]].annotation is not str:
            continue  # (citations_delta: an object, left to the validator)
        for tag in typing.get_args(fields["type"].annotation):
            kinds[tag] = (member, names[0], frozenset(("type", names[0])))

    def build(data: dict[str, Any]) -> Any:
        delta = data.get("delta")
        if len(data) != 3 or type(delta) is not dict or len(delta) != 2 or type(data.get("index")) is not int:
            return None
        kind = kinds.get(delta.get("type"))  # type: ignore[arg-type]
        if kind is None:
            return None
        cls, name, keys = kind
        text = delta.get(name)
        if type(text) is not str:
            return None
        inner = new(cls)
        set_dict(inner, {name: text, "type": delta["type"]})
        set_fields(inner, set(keys))
        set_extra(inner, {})
        set_private(inner, None)
        event = new(event_cls)
        set_dict(event, {"delta": inner, "index": data["index"], "type": "content_block_delta"})
        set_fields(event, {"delta", "index", "type"})
        set_extra(event, {})
        set_private(event, None)
        return event

    for tag, (_cls, name, _keys) in list(kinds.items()):  # the check, once: the validator's result or nothing
        sample = {"type": "content_block_delta", "index": 3, "delta": {"type": tag, name: "x\u00e9"}}
        ours, theirs = build(sample), validate(sample)
        if ours is None or not _same(ours, theirs):
            del kinds[tag]
    return build if kinds else None


class _MessageFactory(_AnthropicFactory, TaggedListFactory):
    """The official ``Message``: its ``content`` blocks are built by their tag first, then the
    message around them (``TaggedListFactory``; about 2.5 us a message against 6 us validated
    whole, measured with benchmarks/client_overhead's Anthropic arm; the same objects, compared
    in tests/client/test_anthropic_fast.py)."""

    __slots__ = ()


message = _MessageFactory("anthropic.types:Message", BaseModel, "content", "anthropic.types:ContentBlock")
stream_event = _EventFactory("anthropic.types:RawMessageStreamEvent", BaseModel)
token_count = _AnthropicFactory("anthropic.types:MessageTokensCount", BaseModel)
model_info = _AnthropicFactory("anthropic.types:ModelInfo", BaseModel)
# ``client.beta.messages.create``'s answers: the same JSON, as the beta types
beta_message = _MessageFactory("anthropic.types.beta:BetaMessage", BaseModel, "content",
                               "anthropic.types.beta:BetaContentBlock")
beta_stream_event = _EventFactory("anthropic.types.beta:BetaRawMessageStreamEvent", BaseModel)


class ModelPage(BaseModel):
    """``models.list()``: one page (``data``, ``has_more``, ``first_id``, ``last_id``); iterating
    it goes through every page after it, as the official ``SyncPage`` does (``after_id``)."""

    _fields = frozenset({"data", "has_more", "first_id", "last_id"})

    def __iter__(self) -> Any:
        page, fetch = self, self.__dict__.get("_fetch")
        while True:
            yield from page.data or ()
            if not page.has_more or not page.last_id or fetch is None:
                return
            page = fetch(page.last_id)


class AsyncModelPaginator:
    """The async ``models.list()``: awaited, the first page; ``async for``, every model of every
    page (the official ``AsyncPaginator``'s two uses)."""

    __slots__ = ("_fetch",)

    def __init__(self, fetch: Callable[..., Any]) -> None:
        self._fetch = fetch

    def __await__(self) -> Any:
        return self._fetch().__await__()

    async def __aiter__(self) -> Any:
        page = await self._fetch()
        while True:
            for item in page.data or ():
                yield item
            if not page.has_more or not page.last_id:
                return
            page = await self._fetch(page.last_id)


def paged(fetch: Callable[..., Any], is_async: bool) -> Any:
    """``models.list()``'s answer: the first page, which fetches the next ones as it is iterated
    (sync), or the paginator (async)."""
    if is_async:
        return AsyncModelPaginator(fetch)
    page = fetch()
    page.__dict__["_fetch"] = fetch
    return page


def model_page(data: dict[str, Any]) -> ModelPage:
    page = ModelPage(data)
    page.__dict__["data"] = [model_info(m) for m in data.get("data") or ()]
    return page


# -- resources --------------------------------------------------------------------------------

class AnthropicResource(_Resource):
    """A resource of the Anthropic face: its calls made from checked keywords."""

    def _anthropic_call(self, method: str, path: str, params: dict[str, Any] | None, stream: bool,
                        extra_headers: Headers, extra_query: Mapping[str, Any] | None,
                        extra_body: Mapping[str, Any] | None, timeout: Any, betas: Any) -> Call:
        client = self._client
        body: dict[str, Any] | None = None
        options = None
        if params is not None:
            extra_headers = header_params(params, extra_headers)
            body, options = split_options(jsonable(params), client._options)
            if options.prefetch:  # only a call's own: the client's is refused at construction
                raise ValueError(PREFETCH_UNSUPPORTED)
            if stream:
                body["stream"] = True
        if is_given(betas) and betas:  # the beta features asked for, as the official client sends them
            beta = ",".join(str(b) for b in betas) if not isinstance(betas, str) else betas
            extra_headers = {**(extra_headers or {}), "anthropic-beta": beta}
        return client._build_call(method, path, body, options=options, stream=stream, extra_headers=extra_headers,
                                  extra_query=extra_query, extra_body=extra_body, timeout=official_timeout(timeout))


_HELPER_MISSING = "client.messages.stream() needs the official `anthropic` package's helper: pip install anthropic"


def stream_manager(create: Callable[[], Any], is_async: bool) -> Any:
    """The official ``MessageStreamManager`` (``AsyncMessageStreamManager``) over llmclient's
    stream: it sends on entry and accumulates the events as the official helper does."""
    try:
        from anthropic import (
            NOT_GIVEN as OFFICIAL_NOT_GIVEN,  # the official helper: for its call only
        )
        from anthropic.lib.streaming import (  # (the same)
            AsyncMessageStreamManager,
            MessageStreamManager,
        )
    except ImportError:
        raise ImportError(_HELPER_MISSING) from None
    if is_async:
        return AsyncMessageStreamManager(create(), output_format=OFFICIAL_NOT_GIVEN)  # sent on entry
    return MessageStreamManager(create, output_format=OFFICIAL_NOT_GIVEN)
