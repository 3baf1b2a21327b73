"""Endpoints llmclient does not accelerate, passed through to the official ``openai`` package.

``client.responses``, ``.files``, ``.batches``, ``.images``, ``.audio``, ``.moderations``,
``.vector_stores`` (and the official client's other resources), ``client.get/post/...`` and
``client.beta.assistants`` are the official client's own, so they behave exactly as it does.
One official client is built per llmclient client, on first use (``openai`` is imported then,
not by ``import llmclient``), from the same settings: base URL, credentials (Azure's too),
organization, project, default headers and query, timeout, max_retries. It sends through the
caller's ``http_client`` when one was given, else through llmclient's shared connections
(HTTP/2, proxies, the same TLS settings), each request carrying a W3C ``traceparent`` and
``X-Request-ID`` as llmclient's own calls do.

The official errors are raised as llmclient's classes of the same name (``except
llmclient.NotFoundError`` catches a 404 from ``client.files.retrieve``), with the trace id.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import httpx

from ..transport.lanes import TransportSettings
from ._async.passthrough import AsyncManagedIO, AsyncPassthroughTypes, _AsyncAdapter
from ._sync.passthrough import ManagedIO, PassthroughTypes, _Adapter
from .passthrough_errors import translate, translated

# The official client's placeholder api_key when the credential is a token (AzureOpenAI's); the
# official Azure client built here gets None instead.
API_KEY_SENTINEL = "<missing API key>"

__all__ = [
    "API_KEY_SENTINEL", "PASSED_MODULE_NAMES", "AsyncPassthrough", "SyncPassthrough", "official_client", "passed", "translate", "wrap",
]

# The official client's resources and methods llmclient does not implement (openai 3.60).
RESOURCES = (
    "admin", "audio", "batches", "containers", "content_provenance_checks", "conversations",
    "decisions", "evals", "files", "fine_tuning", "images", "live", "moderations", "realtime",
    "responses", "safety", "skills", "uploads", "vector_stores", "videos", "webhooks",
    "with_raw_response", "with_streaming_response",
)
METHODS = ("get", "post", "patch", "put", "delete", "get_api_list", "request")
SETTINGS = ("admin_api_key", "webhook_secret", "websocket_base_url", "workload_identity")
# ``llmclient.responses`` and the like (the module-level client), as ``openai.responses``.
PASSED_MODULE_NAMES = frozenset(RESOURCES) - {"with_raw_response", "with_streaming_response"}
_MISSING = ("client.{name} is passed through to the official `openai` package, which is not "
            "installed: pip install openai")


def official_client(client: Any) -> Any:
    """The official client standing behind ``client`` (built once, on first use)."""
    official = client.__dict__.get("_official")
    if official is None:
        build = getattr(client, "_build_official", None)  # a face of another package's (Anthropic)
        official = client.__dict__.setdefault("_official", build() if build is not None else _build(client))
    return official


def _build(client: Any) -> Any:
    import openai  # the official client (~0.7 s to import): loaded by the first passed-through call

    is_async = _is_async(client)
    kwargs: dict[str, Any] = {
        "api_key": client.api_key,
        "organization": client.organization,
        "project": client.project,
        "base_url": str(client.base_url),
        "timeout": client.timeout,
        "max_retries": client.max_retries,
        "default_headers": {k: v for k, v in client._custom_headers.items() if v is not None},
        "default_query": dict(client._custom_query),
        "http_client": client._http_client or _http_client(client._transport_settings, client.timeout,
                                                           is_async),
    }
    api_version = getattr(client, "_api_version", None)
    cls: type[Any]
    if api_version is None:
        cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    else:  # Azure: the deployment is already in base_url; api-version goes as the official adds it
        cls = openai.AsyncAzureOpenAI if is_async else openai.AzureOpenAI
        kwargs["default_query"].pop("api-version", None)
        kwargs.update(api_version=api_version, azure_ad_token=client._azure_ad_token,
                      azure_ad_token_provider=client._azure_ad_token_provider)
        if kwargs["api_key"] == API_KEY_SENTINEL:
            kwargs["api_key"] = None
    accepted = inspect.signature(cls.__init__).parameters
    kwargs.update((k, v) for k, v in client.__dict__.get("_official_kwargs", {}).items() if k in accepted)
    return cls(**kwargs)


def _is_async(client: Any) -> bool:
    return bool(client._on_event_loop)  # set by the face's I/O mixed in (AsyncClientIO: True)


# -- sending through llmclient's connections ---------------------------------------------------

def _http_client(settings: TransportSettings, timeout: httpx.Timeout, is_async: bool) -> Any:
    """An httpx client over llmclient's shared transport (the official client's redirect rule)."""
    if is_async:
        return httpx.AsyncClient(transport=_AsyncAdapter(settings), timeout=timeout, follow_redirects=True)
    return httpx.Client(transport=_Adapter(settings), timeout=timeout, follow_redirects=True)


def _mapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with translated():
            result = fn(*args, **kwargs)
        if inspect.iscoroutine(result):
            return _awaited(result)
        if hasattr(result, "__enter__") or hasattr(result, "__aenter__") or inspect.isawaitable(result):
            return _Managed(result)  # an AsyncPaginator (``list()``) is awaited or iterated
        return result

    return call


async def _awaited(coro: Any) -> Any:
    with translated():
        return await coro


class _Managed(ManagedIO, AsyncManagedIO):
    """A context manager the official client returned (``with_streaming_response``, stream
    helpers) or an awaitable one (``AsyncPaginator``): its errors on entry, on ``await`` and
    while iterated come out as llmclient's (entry, exit and iteration, of each kind:
    ``api/_async/passthrough.py``)."""

    __slots__ = ("_target",)

    def __init__(self, target: Any) -> None:
        self._target = target

    @staticmethod
    def _enter(enter: Callable[[], Any]) -> Any:
        return _mapped(enter)()

    def __await__(self) -> Any:  # an AsyncPaginator: its first page
        return _awaited(self._target).__await__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class Passed:
    """An official resource (``client.files``): attributes read through, calls' errors mapped.
    ``isinstance(client.files, openai.resources.Files)`` holds."""

    __slots__ = ("_target",)

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        return wrap(getattr(self._target, name))

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(client.files, openai.resources.Files)
        return type(self._target)

    def __dir__(self) -> list[str]:
        return dir(self._target)

    def __repr__(self) -> str:
        return repr(self._target)


def wrap(value: Any) -> Any:
    """A resource becomes a :class:`Passed`, a method one whose errors are llmclient's."""
    module = getattr(type(value), "__module__", "") or ""
    if inspect.ismethod(value) or inspect.isfunction(value) or isinstance(value, functools.partial):
        return _mapped(value)
    if module.startswith(("openai.resources", "anthropic.resources")) or module in ("openai._client", "anthropic._client"):
        return Passed(value)
    return value


def passed(client: Any, name: str, under: str = "") -> Any:
    """The official client's ``name`` (``under`` it: ``beta``), for an llmclient client."""
    try:
        official = official_client(client)
    except ModuleNotFoundError as exc:
        if exc.name not in ("openai", "anthropic"):
            raise
        missing = _MISSING.replace("openai", exc.name)
        raise AttributeError(missing.format(name=f"{under}.{name}" if under else name)) from None
    return wrap(getattr(getattr(official, under) if under else official, name))


def _passed_attr(name: str) -> property:
    def get(self: Any) -> Any:
        return passed(self, name)

    get.__name__ = name
    get.__doc__ = f"The official client's ``{name}`` (passed through, see ``llmclient.api.passthrough``)."
    return property(get)


class _Passthrough:
    """Mixed into OpenAI / AsyncOpenAI: the official attributes llmclient does not implement."""


# ``responses`` is llmclient's own (``create`` accelerated; its other methods passed through).
ACCELERATED = frozenset({"responses"})
for _name in (*RESOURCES, *METHODS, *SETTINGS):
    if _name not in ACCELERATED:
        setattr(_Passthrough, _name, _passed_attr(_name))


class SyncPassthrough(_Passthrough, PassthroughTypes):
    pass


class AsyncPassthrough(_Passthrough, AsyncPassthroughTypes):
    pass
