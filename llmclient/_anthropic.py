"""``Anthropic``: the Anthropic face over llmclient's chain of layers (the second face).

The same :class:`~llmclient._client.BaseClient` as the OpenAI face, with Anthropic's own:
settings (``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN`` / ``ANTHROPIC_BASE_URL``, the official
client's keywords, its timeout and retries), headers (``x-api-key``, ``anthropic-version``),
errors (anthropic's finer classes: 529 ``OverloadedError`` ...), the ``request-id`` as
``_request_id``, and its resources (``messages``, ``models``: ``api/_async/anthropic.py``).
What llmclient does not run itself (``beta`` but for ``beta.messages.create``,
``messages.batches``, ``completions`` ...) is the official ``anthropic`` client's, built on first
use from the same settings. ``AsyncAnthropic``
is in ``_anthropic_async.py`` (loaded only when asked for).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _official
from ._client import BaseClient, _copying
from ._config import OPTION_NAMES, Config, Credentials, make_config
from ._keywords import check_keywords
from ._sync.client import ClientIO
from .api._async.passthrough import async_httpx2_client
from .api._sync.anthropic import Beta, Messages, Models
from .api._sync.passthrough import sync_httpx2_client
from .api.anthropic import (
    ANTHROPIC_ERRORS,
    DEFAULT_BASE_URL,
    MESSAGES_PATH,
    PREFETCH_UNSUPPORTED,
    AnthropicTimeout,
    anthropic_headers,
    credentials_from_env,
    official_timeout,
)
from .api.anthropic import finish as anthropic_finish
from .api.anthropic import message as anthropic_message
from .api.passthrough import passed
from .pipeline.call import is_given
from .transport.lanes import SyncTransport, shared_sync_transport

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._client_options import AnthropicOptions
    from .pipeline.call import Call

__all__ = ["Anthropic", "AnthropicBase", "anthropic_config"]

# The official client's own keywords (anthropic 2.17 ``Anthropic.__init__``), for a clear error
# naming the closest one when a keyword is neither llmclient's nor the official client's.
OFFICIAL_SETTINGS = frozenset({
    "api_key", "auth_token", "credentials", "config", "profile", "webhook_key", "base_url", "timeout",
    "max_retries", "default_headers", "default_query", "open_telemetry", "http_client", "middleware",
    "_strict_response_validation",
})
# The official client's attributes llmclient does not run itself: passed through to it.
PASSED = frozenset({"completions", "with_raw_response", "with_streaming_response",
                    "get", "post", "patch", "put", "delete", "get_api_list", "request"})


def _official_settings() -> frozenset[str]:
    try:
        import anthropic  # the official signature, only when a keyword is not llmclient's own
    except ImportError:
        return OFFICIAL_SETTINGS
    return frozenset(inspect.signature(anthropic.Anthropic.__init__).parameters) - {"self"}


def anthropic_config(options: Mapping[str, Any], where: str) -> tuple[Config, str | None]:
    """The Config of ``Anthropic(**options)`` and its ``auth_token``: the official client's
    environment defaults, every keyword checked (an unknown one is a TypeError naming the
    closest real one), a missing credential raised here, before anything is sent."""
    unknown = set(options) - OPTION_NAMES - {"auth_token"}
    if unknown:
        known = _official_settings()
        if not known.issuperset(unknown):
            check_keywords(f"{where}()", options, OPTION_NAMES | known)
    for name in ("organization", "project"):  # the OpenAI face's; the Anthropic API has neither
        if options.get(name) is not None:
            check_keywords(f"{where}()", {name: options[name]}, (OPTION_NAMES - {"organization", "project"})
                           | OFFICIAL_SETTINGS)
    api_key, auth_token = credentials_from_env(options.get("api_key"), options.get("auth_token"))
    base_url = options.get("base_url")
    if base_url is None or not is_given(base_url):
        base_url = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    rest = {k: v for k, v in options.items() if k not in ("api_key", "auth_token")}
    if "timeout" in rest:  # the official client's anthropic.Timeout (httpx2's) as llmclient's
        rest["timeout"] = official_timeout(rest["timeout"])
    config = make_config(
        rest,
        credentials=Credentials(api_key=api_key or "", default_headers=options.get("default_headers") or {},
                                default_query=options.get("default_query") or {}),
        base_url=base_url,
    )
    if config.calls.prefetch:
        raise ValueError(PREFETCH_UNSUPPORTED)
    return config, auth_token


class AnthropicBase(BaseClient):
    """The Anthropic face's settings, headers and chain (no I/O: ``ClientIO`` mixed in)."""

    _errors = ANTHROPIC_ERRORS
    _finish = staticmethod(anthropic_finish)
    _chat_path = MESSAGES_PATH  # client.warm(...) sends a Messages call
    _chat_answer = anthropic_message
    auth_token: str | None = None

    def __init__(self, **options: Unpack[AnthropicOptions]) -> None:
        config, self.auth_token = anthropic_config(options, f"{type(self).__name__}.__init__")
        self._setup(config, _copying.get())
        self.api_key = self.api_key or None  # type: ignore[assignment]  # an auth_token alone
        # equal to the official client's anthropic.Timeout of the same values (AnthropicTimeout)
        self.timeout = AnthropicTimeout(**self.timeout.as_dict())

    def _default_headers(self) -> dict[str, str]:
        return anthropic_headers(self.api_key or None, self.auth_token, self._on_event_loop, self._custom_headers)

    @property
    def auth_headers(self) -> dict[str, str]:
        headers = {"x-api-key": self.api_key} if self.api_key else {}
        if self.auth_token:
            headers["Authorization"] = f"Bearer {self.auth_token}"
        return headers

    def _copy_kwargs(self, **overrides: Any) -> dict[str, Any]:
        kwargs = super()._copy_kwargs(**overrides)
        kwargs.pop("organization", None)
        kwargs.pop("project", None)
        kwargs.setdefault("auth_token", self.auth_token)
        return kwargs

    def _warm_calls(self) -> list[Call]:
        """``GET /v1/models`` for the warm-up: one per replica (each pinned to it), else one."""
        urls = [r.url for r in self._router.replicas] if self._router is not None else [None]
        calls = []
        for url in urls:
            call = self._build_call("GET", "/v1/models")
            call.max_retries = 0
            call.route_pin = url
            calls.append(call)
        return calls

    _beta_class: Any  # Beta / AsyncBeta (api/_async/anthropic.py)

    @property
    def beta(self) -> Any:
        """``client.beta``: ``beta.messages.create`` run by llmclient (pydantic-ai sends there),
        the rest of the official client's ``beta`` passed through."""
        beta = self.__dict__.get("_beta")
        if beta is None:
            beta = self.__dict__["_beta"] = self._beta_class(self)
        return beta

    def __getattr__(self, name: str) -> Any:
        if name in PASSED:
            return passed(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build_official(self) -> Any:
        """The official anthropic client behind the pass-through, from the same settings, sending
        through the app's ``http_client`` when it gave one, else through llmclient's shared
        connections (HTTP/2, proxies, the same TLS settings, a ``traceparent`` and ``X-Request-ID``
        on each request): anthropic 2.x sends with ``httpx2``, so an ``httpx2`` client whose
        transport hands each request to llmclient's (``api/_async/passthrough.py``)."""
        import anthropic  # the official client: loaded by the first passed-through call

        t = self.timeout
        kwargs: dict[str, Any] = {
            "api_key": self.api_key or None, "auth_token": self.auth_token, "base_url": str(self.base_url),
            "timeout": anthropic.Timeout(t.read, connect=t.connect, read=t.read, write=t.write, pool=t.pool),
            "max_retries": self.max_retries,
            "default_headers": {k: v for k, v in self._custom_headers.items() if v is not None},
            "default_query": dict(self._custom_query),
        }
        if self._http_client is not None:
            kwargs["http_client"] = self._http_client
        else:
            over_ours = async_httpx2_client if self._on_event_loop else sync_httpx2_client
            kwargs["http_client"] = over_ours(self._transport_settings, kwargs["timeout"])
        cls = anthropic.AsyncAnthropic if self._on_event_loop else anthropic.Anthropic
        official = self.__dict__.get("_official_kwargs", {})
        kwargs.update((k, v) for k, v in official.items() if k in _official_settings() and k != "auth_token")
        return cls(**kwargs)


class Anthropic(ClientIO, AnthropicBase):
    """Synchronous client (drop-in for ``anthropic.Anthropic``)."""

    _transport: SyncTransport | None
    _beta_class = Beta

    def __init__(self, **options: Unpack[AnthropicOptions]) -> None:
        super().__init__(**options)
        if self._config.connection.warm:
            self.warmup()

    def _attach(self) -> None:
        self.messages: Messages = Messages(self)
        self.models: Models = Models(self)  # type: ignore[assignment]

    def _open_transport(self) -> None:
        self._transport = None if self._http_client is not None else shared_sync_transport(self._transport_settings)

    def __enter__(self) -> Anthropic:
        return self


# With ``anthropic`` imported, ``isinstance(client, anthropic.Anthropic)`` holds (``_official``).
_official.register(Anthropic, hide=True, packages=("anthropic",))
