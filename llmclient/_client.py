"""``OpenAI`` / ``AsyncOpenAI``: the OpenAI face over llmclient's chain of layers.

A face holds settings and resources, not stages: its keywords become one checked
:class:`~llmclient._config.Config`; from it the face makes the headers every call starts from,
its credential scope, and the :class:`~llmclient.layers.context.Context` its chain is built on
(``layers/_async/chain.py``). Its I/O (run a call through the chain, warm up, close) is written
once in ``_async/client.py`` and generated for the sync client (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import httpx

from . import _official
from ._config import Config, openai_config
from ._keywords import official_settings
from ._sync.client import ClientIO
from ._version import __version__
from .api.errors import OPENAI_ERRORS
from .api.headers import merge_custom, openai_headers
from .api.models import ChatCompletion
from .api.passthrough import SyncPassthrough
from .api.raw import RawResponse
from .api.resources import Beta
from .features.port import Port
from .layers.answer import finish
from .layers.calls import build_call, to_timeout
from .layers.context import Context
from .layers.options import CallOptions, split_options
from .layers.request import header_forms
from .layers.setup import cache_for, speculation, speculation_stats
from .layers.setup import start as start_features
from .pipeline.call import NOT_GIVEN, Call, NotGiven, credential_scope, http_client_auth
from .pipeline.knowledge import Knowledge
from .transport.http_clients import client_headers
from .transport.lanes import SyncTransport, TransportSettings, shared_sync_transport
from .transport.proxy import proxy_map
from .wire.compression import accept_encoding

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

    from ._client_options import ClientOptions, CopyOptions
    from .features.prefetch import Speculation
    from .features.route.router import Router

__all__ = ["BaseClient", "OpenAI", "RawResponse", "__version__"]

# The client a copy is made from (with_options): the copy shares what it learned about servers.
_copying: ContextVar[BaseClient | None] = ContextVar("llmclient_copying", default=None)


class BaseClient:
    """A client's settings, headers and chain; no I/O (that is ``ClientIO`` / ``AsyncClientIO``)."""

    _on_event_loop: bool  # the I/O mixed in says (AsyncClientIO: True)
    _router: Router | None = None  # several replicas (base_url=[...]): the route layer's
    _ctx: Context
    # The face's errors and how an answer gets the call's facts (the Anthropic face has its own).
    _errors: Any = OPENAI_ERRORS
    _finish: Any = staticmethod(finish)
    # The face's chat call, for what features send on the app's behalf (client.warm(...)):
    # its path and the type of its answer.
    _chat_path: str = "/chat/completions"
    _chat_answer: Any = ChatCompletion
    if TYPE_CHECKING:  # the I/O mixed in (ClientIO / AsyncClientIO)
        def _request(self, call: Call, make: Any, raw: bool = False, stream_make: Any = None) -> Any: ...
        def _make_chain(self, ctx: Context) -> Any: ...
        @staticmethod
        def _cache_lookup(ctx: Context) -> Any: ...

    def __init__(self, **options: Unpack[ClientOptions]) -> None:
        azure = hasattr(self, "_setup_azure")
        config = openai_config(options, lambda: official_settings("AzureOpenAI" if azure else "OpenAI"),
                               f"{type(self).__name__}.__init__")
        self._setup(config, _copying.get())

    def _setup(self, config: Config, original: BaseClient | None) -> None:
        self._config = config
        credentials, connection = config.credentials, config.connection
        self.api_key = credentials.api_key
        self.organization, self.project = credentials.organization, credentials.project
        replicas = connection.replicas
        if replicas is not None:  # several replicas: the route layer (features/route)
            self._replicas = replicas
            self._router = replicas.router()
        self.base_url = connection.url
        self._base = str(self.base_url).rstrip("/")
        self.timeout, self.max_retries = connection.timeout, connection.max_retries
        self._custom_headers: dict[str, Any] = dict(credentials.default_headers)
        self._custom_query = dict(credentials.default_query)
        self._http_client = connection.http_client
        self._proxy = connection.proxy
        # proxy= for every origin, else HTTP(S)_PROXY / ALL_PROXY / NO_PROXY as httpx reads them
        self._transport_settings = TransportSettings(verify=connection.verify, http2=connection.http2,
                                                     proxies=proxy_map(connection.proxy),
                                                     max_connection_age=connection.max_connection_age)
        self.cache = config.features.cache
        self._options: CallOptions = config.calls
        if config.official:
            self._official_kwargs = dict(config.official)  # the official client behind the pass-through
        self._headers = self._default_headers()
        # Whose credentials the calls run under, from the headers that go on the wire (not
        # from api_key alone: a credential may travel in default_headers or extra_headers).
        http_client = self._http_client
        self._scope_auth = http_client_auth(http_client)
        scope_headers = {**client_headers(http_client), **self._headers} if http_client is not None else self._headers
        self._scope = credential_scope(scope_headers, self._base, self._scope_auth)
        self._open_transport()
        is_async = self._on_event_loop
        ctx = Context(
            is_async=is_async, defaults=config.calls, errors=self._errors, build=self._build_call, finish=self._finish,
            transport=self._transport_now, http_client=http_client, header_forms=header_forms(self._headers),
            knowledge=original._ctx.knowledge if original is not None else Knowledge(),
            router=self._router, compress=connection.compress,
            retry_budget=original._ctx.retry_budget if original is not None else None,  # a copy's: shared
            fixed_transport=None if is_async else self.__dict__.get("_transport"),
        )
        ctx.port = Port(
            build=self._build_call, request=self._request,
            lookup=self._cache_lookup(ctx),
            cache_for=lambda call: cache_for(ctx, call), defaults=config.calls,
            has_cache=config.features.cache is not None, is_async=is_async, options=CallOptions,
            split=lambda params: split_options(params, config.calls), chat_completion=self._chat_answer,
            chat_path=self._chat_path,
        )
        start_features(ctx, config.features, config.calls.prefetch)
        self._ctx = ctx
        self._chain = self._make_chain(ctx)
        self._attach()  # type: ignore[attr-defined]

    # -- settings ---------------------------------------------------------------------------

    def _open_transport(self) -> None:
        """The sync client's shared connections (the async client's are per event loop)."""

    def _token_provider(self) -> Any:
        """A function giving the credential for each request (None: the headers' own)."""
        return None

    @staticmethod
    def _set_token(call: Call, token: object) -> None:
        """Put the credential ``token`` a provider gave on the call (the face's own header)."""

    def _transport_now(self) -> Any:
        return self._transport  # type: ignore[attr-defined]

    def _default_headers(self) -> dict[str, str]:
        return openai_headers(self.api_key, self.organization, self.project, self._on_event_loop,
                              self._custom_headers)

    def _copy_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """The keywords of a copy: this client's settings, with ``overrides`` given (None leaves
        a setting as it is, except ``stream_idle_timeout``, where None turns the watchdog off, and
        ``max_connection_age``, where it means no age);
        ``default_headers`` are merged into this client's, ``set_default_headers`` replace them."""
        kwargs = self._config.options()
        kwargs["base_url"] = self.__dict__.get("_replicas") or self.base_url
        kwargs["api_key"] = self.api_key
        kwargs["organization"], kwargs["project"] = self.organization, self.project
        kwargs["default_headers"], kwargs["default_query"] = dict(self._custom_headers), dict(self._custom_query)
        kwargs["speculation"] = self._ctx.speculation.state.config if self._ctx.speculation is not None else None
        kwargs["hedge"] = kwargs["hedge"] or False
        set_default_query = overrides.pop("set_default_query", None)
        if overrides.get("default_query") is not None and set_default_query is None:
            overrides["default_query"] = {**self._custom_query, **overrides["default_query"]}
        elif set_default_query is not None:
            overrides["default_query"] = set_default_query
        set_default_headers = overrides.pop("set_default_headers", None)
        if overrides.get("default_headers") is not None and set_default_headers is None:
            overrides["default_headers"] = merge_custom({**self._custom_headers}, overrides["default_headers"])
        elif set_default_headers is not None:
            overrides["default_headers"] = set_default_headers
        for name in ("stream_idle_timeout", "max_connection_age"):  # None is a value here
            if name in overrides:
                kwargs[name] = overrides.pop(name)
        kwargs.update({k: v for k, v in overrides.items() if v is not None and v is not NOT_GIVEN})
        return kwargs

    @contextlib.contextmanager
    def _copying(self) -> Iterator[None]:
        token = _copying.set(self)
        try:
            yield
        finally:
            _copying.reset(token)

    def with_options(self, **overrides: Unpack[CopyOptions]) -> Self:
        """A copy with some settings changed, sharing this client's connections and what it
        learned about the servers it called."""
        with self._copying():
            return type(self)(**self._copy_kwargs(**overrides))

    copy = with_options

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def default_headers(self) -> dict[str, str]:
        """The headers every request starts from (the official property): accept,
        content-type, user-agent, the credentials and ``default_headers``."""
        return dict(self._headers)

    @property
    def default_query(self) -> dict[str, object]:
        return dict(self._custom_query)

    @property
    def beta(self) -> Any:
        """``client.beta.chat.completions.parse / stream``, as in the official client."""
        return Beta(self.chat)  # type: ignore[attr-defined]

    def is_closed(self) -> bool:
        """True after :meth:`close` (or when the caller's ``http_client`` is closed)."""
        if self._http_client is not None:
            return bool(getattr(self._http_client, "is_closed", False))
        return self.__dict__.get("_closed", False)

    # -- a call -----------------------------------------------------------------------------

    def _build_call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        options: CallOptions | None = None,
        stream: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
    ) -> Call:
        call = build_call(
            method, path, body,
            base_url=self._base, headers=self._headers, query=self._custom_query,
            timeout=to_timeout(timeout, self.timeout), max_retries=self.max_retries,
            scope=self._scope, options=options or self._options, stream=stream,
            extra_headers=extra_headers, extra_query=extra_query, extra_body=extra_body,
            scope_auth=self._scope_auth,
        )
        # A stream asks with the official client's Accept (application/json): the server reads
        # ``stream`` from the body, and a mock of the API's spec answers that Accept (an answer
        # that is one JSON object becomes a one-chunk stream).
        if "accept-encoding" not in call.headers:
            # Whole bodies may come compressed (undone under a cap as they are read); streams
            # ask for none, so that no server or proxy holds chunks back to fill a compressor.
            call.headers["accept-encoding"] = "identity" if stream else accept_encoding()
        return call

    def _warm_calls(self) -> list[Call]:
        """``GET /models`` for the warm-up: one per replica (each pinned to it), else one."""
        urls = [r.url for r in self._router.replicas] if self._router is not None else [None]
        calls = []
        for url in urls:
            call = self._build_call("GET", "/models")
            call.max_retries = 0
            call.route_pin = url
            calls.append(call)
        return calls

    def _speculation(self) -> Speculation:
        made = speculation(self._ctx, create=True)
        assert made is not None
        return made

    @property
    def _pacing(self) -> Any:
        return self._config.features.pacing

    # -- what the features learned ------------------------------------------------------------

    @property
    def rate_limits(self) -> dict[str, dict[str, Any]]:
        """The rate limits learned from answers, per ``"base_url scope"``: each budget's limit,
        window and remaining now, whether calls are paced, 429s seen, calls held and for how long
        (``features/admit``)."""
        pacer = self._ctx.pacer
        return pacer.snapshot() if pacer is not None else {}

    @property
    def retry_budgets(self) -> dict[str, dict[str, Any]]:
        """Per origin: the retry budget's tokens, its policy, whether it is spent and the
        retries it refused (``features/admit/retry_budget``); empty with ``retry_budget=False``."""
        budget = self._ctx.retry_budget
        return budget.stats() if budget is not None else {}

    @property
    def concurrency_limits(self) -> dict[str, dict[str, Any]]:
        """With ``concurrency="adaptive"``: per base URL, the calls allowed in flight now, in
        flight, waiting, the latency baseline, cuts and the reason of the last change."""
        gates = self._ctx.gates
        return gates.stats() if gates is not None else {}

    def hedge_stats(self) -> dict[str, dict[str, Any]]:
        """Per ``"path model"``: samples, learned delay_ms, hedges sent, wins, budget left."""
        per_replica = self._router is not None  # one track per replica: its URL ends the name
        return {f"{path} {model}" + (f" {site}" if per_replica else ""): track.stats()
                for (site, path, model), track in self._ctx.hedge_tracks.items()}

    def replica_stats(self) -> list[dict[str, Any]]:
        """Per replica (``base_url=[...]``): url, state (up, probe, down), in-flight calls, TTFT
        and queue EWMAs, error rate, calls served and failed, the last error; [] for one URL."""
        return self._router.stats() if self._router is not None else []

    def speculation_stats(self) -> dict[str, Any]:
        """Prefetch counters: predictions, sent, warmups, hits, joins, cancelled, refused,
        errors, wasted_tokens, used_tokens, latency_saved_ms, in_flight, extra_load."""
        return speculation_stats(self._ctx)


class OpenAI(SyncPassthrough, ClientIO, BaseClient):
    """Synchronous client (drop-in for ``openai.OpenAI``)."""

    _transport: SyncTransport | None

    def __init__(self, **options: Unpack[ClientOptions]) -> None:
        super().__init__(**options)
        if self._config.connection.warm:
            self.warmup()

    def _open_transport(self) -> None:
        self._transport = None if self._http_client is not None else shared_sync_transport(self._transport_settings)

    def __enter__(self) -> OpenAI:
        return self


# With ``openai`` imported, ``isinstance(client, openai.OpenAI)`` holds (``_official``); the
# official attributes these classes lack stay missing.
_official.register(OpenAI, hide=True)
