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
from .models import BaseModel, _Factory, _members_by_tag, jsonable
from .resources import Headers, _Resource

if TYPE_CHECKING:
    from ..pipeline.call import Call

__all__ = [
    "ANTHROPIC_ERRORS",
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "MESSAGES_PATH",
    "PREFETCH_UNSUPPORTED",
    "anthropic_headers",
    "check_create",
    "finish",
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
    "temperature", "thinking", "tool_choice", "tools", "top_k", "top_p", "betas",
    "extra_headers", "extra_query", "extra_body", "timeout",
})
COUNT_PARAMS: Final = frozenset({"messages", "model", "system", "thinking", "tool_choice", "tools",
                                 "mcp_servers", "context_management", "output_config", "output_format",
                                 "extra_headers", "extra_query", "extra_body", "timeout"})


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


def _official_params(method: str) -> frozenset[str] | None:
    """The keywords the installed anthropic's ``Messages.<method>`` takes (None: not installed,
    or ``LLMCLIENT_TYPES=light`` and not imported by the app: then the names known here)."""
    if os.environ.get("LLMCLIENT_TYPES", "").lower() == "light" and "anthropic" not in sys.modules:
        return None
    try:
        from anthropic.resources.messages import (
            Messages,  # its signature: only when a check needs it
        )
    except ImportError:
        return None
    return frozenset(inspect.signature(getattr(Messages, method)).parameters) - {"self"}


_known: dict[str, frozenset[str]] = {}


def check_create(where: str, params: Mapping[str, Any], method: str = "create") -> None:
    """Raise, before sending, the official TypeError for what ``messages.create`` (or
    ``count_tokens``) cannot take: a missing required keyword, an unknown one with the closest
    real name."""
    known = _known.get(method)
    if known is None:
        official = _official_params(method)
        base = CREATE_PARAMS if method == "create" else COUNT_PARAMS
        known = _known[method] = (official if official is not None else base) | OPTION_KEYS
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

        def build(data: dict[str, Any]) -> Any:
            member = by_tag.get(data.get("type"))  # type: ignore[arg-type]
            if member is None:
                return OfficialBase.construct(**data)
            try:
                return member.__pydantic_validator__.validate_python(data)
            except ValidationError:
                return member.construct(**data)

        return build


message = _AnthropicFactory("anthropic.types:Message", BaseModel)
stream_event = _EventFactory("anthropic.types:RawMessageStreamEvent", BaseModel)
token_count = _AnthropicFactory("anthropic.types:MessageTokensCount", BaseModel)
model_info = _AnthropicFactory("anthropic.types:ModelInfo", BaseModel)


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
            body, options = split_options(jsonable(params), client._options)
            if options.prefetch and "prefetch" in params:
                raise ValueError(PREFETCH_UNSUPPORTED)
            if stream:
                body["stream"] = True
        if is_given(betas) and betas:  # the beta features asked for, as the official client sends them
            beta = ",".join(str(b) for b in betas) if not isinstance(betas, str) else betas
            extra_headers = {**(extra_headers or {}), "anthropic-beta": beta}
        return client._build_call(method, path, body, options=options, stream=stream, extra_headers=extra_headers,
                                  extra_query=extra_query, extra_body=extra_body, timeout=timeout)


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
