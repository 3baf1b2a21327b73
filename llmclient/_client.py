"""``OpenAI`` / ``AsyncOpenAI``: one BaseClient holds every decision, the subclasses only do I/O.

The journey of one call (docs/ARCHITECTURE.md): build a ``Call`` -> prepare (images) -> lookup
(cache) -> encode -> send (retries decided by ``_retry``) -> decode -> store -> after (prefetch).
Each stage below is a small method; the sync and async ``_request`` loops call the same ones.
"""

from __future__ import annotations

import functools
import inspect
import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import httpx
import orjson

from . import _hints, _official, wire
from ._async.pipeline import AsyncPipeline
from ._async.resources import (
    AsyncChat,
    AsyncCompletions,
    AsyncEmbeddings,
    AsyncModels,
    AsyncResponses,
)
from ._errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    MalformedResponseError,
    OpenAIError,
    describe_error_body,
    status_error_class,
)
from ._keywords import check_keywords, official_settings
from ._logging import logger
from ._sync.pipeline import Pipeline
from ._sync.resources import Chat, Completions, Embeddings, Models, Responses
from ._version import __version__
from .api.passthrough import AsyncPassthrough, SyncPassthrough
from .api.resources import Beta
from .features.admit.priority import FIELD as PRIORITY_FIELD
from .features.admit.priority import body_value as priority_body_value
from .features.admit.priority import check as check_priority
from .features.admit.priority import check_field as check_priority_field
from .features.hedge import hedge_config
from .features.route import Replica, Replicas
from .features.route.cache_key import FIELD as CACHE_KEY_FIELD
from .features.route.cache_key import derive as derive_cache_key
from .features.route.cache_key import wanted as wants_cache_key
from .features.route.router import model_labels, model_mismatch
from .pipeline import retry as _retry
from .pipeline.call import (
    NOT_GIVEN,
    Call,
    CallOptions,
    NotGiven,
    build_call,
    credential_scope,
    http_client_auth,
    to_timeout,
)
from .pipeline.hooks import Features
from .pipeline.resume import check_early_resume, check_stream_resume
from .pipeline.shared import RawResponse, response_coding, start_task
from .pipeline.watchdog import DEFAULT_STREAM_IDLE_TIMEOUT, body_read_timeout, check_idle_timeout
from .transport.http_clients import client_headers
from .transport.lanes import (
    AsyncTransport,
    SyncTransport,
    TransportSettings,
    shared_async_transport,
    shared_sync_transport,
)
from .transport.origins import record_for
from .transport.proxy import proxy_map
from .wire.codec import JSON_CODEC, RESPONSES_PATH, Codec, WholeJsonDecoder
from .wire.compression import (
    MIN_COMPRESS_BYTES,
    CompressionError,
    accept_encoding,
    choose_request_encoding,
    compress,
    decompress,
    parse_accept_encoding,
)

if TYPE_CHECKING:
    import asyncio

    from .features.route.router import Router

__all__ = ["AsyncOpenAI", "BaseClient", "OpenAI", "RawResponse"]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)  # the official client's default
DEFAULT_MAX_RETRIES = 2
_USER_AGENT = f"llmclient/{__version__} python/{sys.version_info[0]}.{sys.version_info[1]}"


def stainless_headers(is_async: bool, system: str, machine: str, runtime: str, runtime_version: str) -> dict[str, str]:
    """The official client's ``X-Stainless-*`` identification headers, with llmclient's own
    values under the same names (README, "What goes on the wire"): the package version is
    llmclient's, the platform the same as the official client would report. The per-attempt
    ``X-Stainless-Retry-Count`` and ``-Read-Timeout`` are not sent."""
    return {
        "x-stainless-lang": "python",
        "x-stainless-package-version": __version__,
        "x-stainless-os": _STAINLESS_OS.get(system.lower(), f"Other:{system}" if system else "Unknown"),
        "x-stainless-arch": _STAINLESS_ARCH.get(machine.lower(), f"other:{machine}" if machine else "unknown"),
        "x-stainless-runtime": runtime,
        "x-stainless-runtime-version": runtime_version,
        "x-stainless-async": "async:asyncio" if is_async else "false",
    }


# platform.system() / platform.machine() as the official client names them (openai._base_client)
_STAINLESS_OS = {"darwin": "MacOS", "linux": "Linux", "windows": "Windows", "freebsd": "FreeBSD",
                 "openbsd": "OpenBSD", "android": "Android", "ios": "iOS"}
_STAINLESS_ARCH = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64",
                   "i386": "x32", "i686": "x32", "x86": "x32", "armv7l": "arm", "arm": "arm"}


@functools.cache
def _platform_headers(is_async: bool) -> dict[str, str]:
    return stainless_headers(is_async, platform.system(), platform.machine(),
                             platform.python_implementation(), platform.python_version())


class BaseClient:
    """Settings and every decision of a call; no I/O."""

    _transport_settings: TransportSettings
    _on_event_loop: bool  # set by the pipeline mixed in (AsyncPipeline: True)
    _router: Router | None = None  # several replicas (base_url=[...]): the route stage

    def __init__(
        self,
        *,
        api_key: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        base_url: str | httpx.URL | Sequence[str | Replica] | Replicas | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, object] | None = None,
        http_client: Any = None,
        http2: bool = True,
        verify: bool | str = True,
        proxy: str | httpx.URL | None = None,
        cache: Any = None,
        wire: str = "json",
        images: Any = None,
        prefetch: Any = None,
        speculation: Any = None,
        warm: bool = False,
        compress: bool = True,
        hedge: Any = False,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        pacing: Any = "auto",
        redis: Any = None,
        concurrency: Any = None,
        embedding_batch: Any = None,
        auto_cache_key: bool | None = None,
        stream_resume: str = "auto",
        stream_early_resume: bool = True,
        priority: str | None = None,
        priority_field: bool = False,
        **official: Any,  # official-only args (webhook_secret, ...): for the passed-through calls
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        if api_key is None:
            raise OpenAIError(
                "The api_key client option must be set either by passing api_key to the client "
                "or by setting the OPENAI_API_KEY environment variable"
            )
        self.api_key = api_key
        if official:
            _check_official_kwargs(self, official)
            self._official_kwargs = official  # the official client behind ``_passthrough`` gets them
        self.organization = organization if organization is not None else os.environ.get("OPENAI_ORG_ID")
        self.project = project if project is not None else os.environ.get("OPENAI_PROJECT_ID")
        if isinstance(base_url, (list, tuple, Replicas)):  # several replicas: features/route
            self._replicas = base_url if isinstance(base_url, Replicas) else Replicas(base_url)
            self._router = self._replicas.router()
            base_url = self._replicas.replicas[0].url
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.base_url = httpx.URL(str(base_url).rstrip("/") + "/")
        if self.base_url.scheme not in ("http", "https"):
            raise ValueError(f"base_url must be an http:// or https:// URL, got {str(base_url)!r}")
        self._base = str(self.base_url).rstrip("/")
        self.timeout = to_timeout(timeout, _http_client_timeout(http_client) or DEFAULT_TIMEOUT)
        if max_retries is None or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        self.max_retries = max_retries
        self._custom_headers = dict(default_headers or {})
        self._custom_query = dict(default_query or {})
        self._http_client = http_client
        # proxy= for every origin, else HTTP(S)_PROXY / ALL_PROXY / NO_PROXY as httpx reads them
        self._proxy = proxy
        self._transport_settings = TransportSettings(verify=verify, http2=http2, proxies=proxy_map(proxy))
        self.cache = cache
        # The client-wide cache is self.cache; CallOptions.cache is the per-call override only.
        self._options = CallOptions(cache=None, prefetch=prefetch, images=images, wire=wire,  # type: ignore[arg-type]
                                    hedge=hedge_config(hedge),
                                    stream_idle_timeout=check_idle_timeout(stream_idle_timeout),
                                    stream_resume=check_stream_resume(stream_resume),
                                    stream_early_resume=check_early_resume(stream_early_resume))
        if auto_cache_key is not None and not isinstance(auto_cache_key, bool):
            raise ValueError(f"auto_cache_key must be True, False or None, got {auto_cache_key!r}")
        self._options.auto_cache_key = auto_cache_key
        self._options.priority = check_priority(priority)
        # vLLM's body ``priority`` on low calls (features/admit/priority): opt-in, never by default
        self._priority_field = check_priority_field(priority_field)
        self._warm = warm
        # Compress request bodies of 1 KiB and more for origins that said (Accept-Encoding in a
        # response, RFC 7694) they read zstd or gzip; False sends every body as it is.
        self._compress = compress
        # Images, the cache, speculation and hedging: attached to this client's pipeline here,
        # reached only through these hooks (``_features``); they see a Port, never the client.
        self._features = Features(build=self._build_call, request=self._request, defaults=self._options,  # type: ignore[attr-defined]
                                  is_async=self._on_event_loop, cache=cache, speculation=speculation,
                                  prefetch=prefetch, pacing=pacing, redis=redis, concurrency=concurrency,
                                  embedding_batch=embedding_batch)
        self._pacing, self._redis, self._concurrency = pacing, redis, concurrency
        self._embedding_batch = embedding_batch
        self._features.router = self._router  # several replicas: a hedge deadline per replica
        self._headers = self._default_headers()
        # httpx's form of each header every call starts with, made once: httpx checks and
        # encodes every header of every Request it builds, ~2 us a header (``_request_headers``).
        self._header_forms = _header_forms(self._headers)
        # Whose credentials the calls run under, from the headers that go on the wire (not
        # from api_key alone: a credential may travel in default_headers or extra_headers).
        self._scope_auth = http_client_auth(http_client)
        scope_headers = {**client_headers(http_client), **self._headers} if http_client is not None else self._headers
        self._scope = credential_scope(scope_headers, self._base, self._scope_auth)

    # -- settings ---------------------------------------------------------------------------

    def _default_headers(self) -> dict[str, str]:
        headers = {
            "accept": "application/json",
            "content-type": "application/json",
            "user-agent": _USER_AGENT,
            "authorization": f"Bearer {self.api_key}",
            **_platform_headers(self._on_event_loop),
        }
        if self.organization:
            headers["openai-organization"] = self.organization
        if self.project:
            headers["openai-project"] = self.project
        for key, value in self._custom_headers.items():
            if value is None:
                headers.pop(key.lower(), None)
            else:
                headers[key.lower()] = str(value)
        return headers

    def _copy_kwargs(self, **overrides: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "api_key": self.api_key,
            "organization": self.organization,
            "project": self.project,
            "base_url": self.__dict__.get("_replicas") or self.base_url,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "default_headers": self._custom_headers,
            "default_query": self._custom_query,
            "http_client": self._http_client,
            "http2": self._transport_settings.http2,
            "verify": self._transport_settings.verify,
            "proxy": self._proxy,
            "stream_idle_timeout": self._options.stream_idle_timeout,
            "stream_resume": self._options.stream_resume,
            "stream_early_resume": self._options.stream_early_resume,
            "cache": self.cache,
            "wire": self._options.wire,
            "images": self._options.images,
            "prefetch": self._options.prefetch,
            "speculation": self._features.speculation_config,
            "compress": self._compress,
            "hedge": self._options.hedge or False,
            "pacing": self._pacing,
            "redis": self._redis,
            "concurrency": self._concurrency,
            "embedding_batch": self._embedding_batch,
            "auto_cache_key": self._options.auto_cache_key,
            "priority": self._options.priority,
            "priority_field": self._priority_field,
            **self.__dict__.get("_official_kwargs", {}),
        }
        set_default_headers = overrides.pop("set_default_headers", None)
        if overrides.get("default_headers") is not None and set_default_headers is None:
            overrides["default_headers"] = {**self._custom_headers, **overrides["default_headers"]}
        elif set_default_headers is not None:
            overrides["default_headers"] = set_default_headers
        if "stream_idle_timeout" in overrides:  # None is a value here: the watchdog off
            kwargs["stream_idle_timeout"] = overrides.pop("stream_idle_timeout")
        kwargs.update({k: v for k, v in overrides.items() if v is not None and v is not NOT_GIVEN})
        return kwargs

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

    # -- stage: build the call (pure) ----------------------------------------------------------

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
        # that is one JSON object becomes a one-chunk stream, ``_stream_decoder``).
        if "accept-encoding" not in call.headers:
            # Whole bodies may come compressed (httpx undoes zstd and gzip as it reads); streams
            # ask for none, so that no server or proxy holds chunks back to fill a compressor.
            call.headers["accept-encoding"] = "identity" if stream else accept_encoding()
        return call

    # -- stage: encode -------------------------------------------------------------------------

    def _codec_for(self, call: Call) -> Codec:
        """JSON unless the call asks for protobuf (``llmclient.wire`` loads the protobuf codec
        on first use). The Responses API has no protobuf schema: always JSON."""
        mode = call.options.wire
        if mode == "json" or call.path == RESPONSES_PATH:
            return JSON_CODEC
        state = record_for(call.base_url).wire or wire.WireState()
        chosen = wire.choose_wire(mode, state)
        call.record.wire = chosen
        return wire.PROTOBUF_CODEC if chosen == "protobuf" else JSON_CODEC

    def _encode(self, call: Call, codec: Codec) -> bytes | None:
        """The request body's bytes: codec-encoded, then compressed where the origin reads a
        coding and the body is big enough to pay (``wire.compression.choose_request_encoding``)."""
        if call.body is None:
            return None
        body = call.body
        call.record.cache_key = None
        # One origin that routes by a key: a derived prompt_cache_key (features/route/cache_key)
        if codec is JSON_CODEC and self._router is None and wants_cache_key(call.options.auto_cache_key, call.base_url):
            key = derive_cache_key(call.path, body, call.scope) if record_for(call.base_url).cache_key else None
            if key is not None:
                body = {**body, CACHE_KEY_FIELD: key}
                call.record.cache_key = key
        call.record.priority_field = None
        if self._priority_field and codec is JSON_CODEC:  # vLLM's priority on a low call
            value = priority_body_value(call.headers, call.path, body, record_for(call.base_url).priority_field)
            if value is not None:
                body = {**body, PRIORITY_FIELD: value}
                call.record.priority_field = value
        content = codec.encode(call.path, body)
        call.record.request_encoding = None
        if self._compress and len(content) >= MIN_COMPRESS_BYTES:
            caps = record_for(call.base_url).codings
            if caps:
                coding = choose_request_encoding(len(content), caps)
                if coding is not None:
                    content = compress(content, coding)
                    call.record.request_encoding = coding
        return content

    @staticmethod
    def _priority_field_refused(call: Call) -> None:
        """The origin answered 400 or 422 naming vLLM's priority: never send it the field again."""
        record_for(call.base_url).priority_field = False

    @staticmethod
    def _cache_key_refused(call: Call) -> None:
        """The origin answered 400 or 422 naming the derived prompt_cache_key: never send it one again."""
        record_for(call.base_url).cache_key = False

    @staticmethod
    def _observe_wire(call: Call, response: httpx.Response) -> bool:
        """Record what the origin showed about protobuf; True when this call failed only because
        of the wire (415 or an unparsed protobuf body) and must be sent again as JSON."""
        record = record_for(call.base_url)
        state = record.wire or wire.WireState()
        sent: Literal["json", "protobuf"] = "protobuf" if call.record.wire == "protobuf" else "json"
        seen = wire.observe_response(state, sent, response.status_code, response.headers)
        record.wire = seen.state
        return seen.retry_as_json

    def _build_request(self, call: Call, content: bytes | None, codec: Codec, on_trace: Any) -> httpx.Request:
        headers = call.headers
        if codec is not JSON_CODEC:
            headers = {**headers, "content-type": codec.content_type, "accept": codec.accept}
        if call.record.request_encoding is not None:
            headers = {**headers, "content-encoding": call.record.request_encoding}
        if content is None:
            headers = {k: v for k, v in headers.items() if k != "content-type"}
        timeout = call.timeout
        extensions: dict[str, Any] = {
            "timeout": {"connect": timeout.connect,
                        # a stream's reads wait at most its idle limit (the stall watchdog)
                        "read": body_read_timeout(timeout.read, call.options.stream_idle_timeout)
                        if call.stream else timeout.read,
                        "write": timeout.write, "pool": timeout.pool},
            "trace": on_trace,
        }
        if call.cancel is not None:
            extensions["llmclient.cancel"] = call.cancel
        url = _url(call.url)
        if not _RAW_HEADERS:
            return httpx.Request(call.method, url, params=call.query or None, headers=headers, content=content,
                                 extensions=extensions)
        # Given its body as a stream, httpx adds no header of its own and checks none again (with
        # content= it checks and scans every header six more times): the list it would make
        # (Host first, Content-Length last) is made here, the client's own headers in their
        # checked form (``_request_headers``).
        request = httpx.Request(call.method, url, params=call.query or None,
                                headers=self._request_headers(headers, url, call.method, content),
                                stream=httpx.ByteStream(content or b""), extensions=extensions)
        request.read()  # .content, as content= leaves it
        return request

    def _request_headers(self, headers: dict[str, str], url: httpx.URL, method: str,
                         content: bytes | None) -> httpx.Headers:
        """``headers`` as httpx.Headers, with the Host and Content-Length httpx would add; the
        client's own taken in the form httpx gave them once (``_header_forms``), only the call's
        own (trace, extra_headers) are checked anew."""
        forms = self._header_forms
        triples: list[Any] = []
        fresh: list[tuple[int, tuple[str, str]]] = []
        for pair in headers.items():
            form = forms.get(pair)
            if form is None:
                fresh.append((len(triples), pair))
            triples.append(form)
        if fresh:
            for (at, _), form in zip(fresh, httpx.Headers([pair for _, pair in fresh])._list, strict=True):
                triples[at] = form
        if "host" not in headers and url.host:
            triples.insert(0, (b"Host", b"host", url.netloc))
        if "content-length" not in headers and "transfer-encoding" not in headers and (
                content or method in ("POST", "PUT", "PATCH")):
            triples.append((b"Content-Length", b"content-length", str(len(content or b"")).encode("ascii")))
        out = httpx.Headers()
        out._list = triples
        return out

    # -- stage: send (pure retry decisions) ----------------------------------------------------

    @staticmethod
    def _connection_error(call: Call, exc: Exception, request: httpx.Request) -> APIConnectionError:
        kw: dict[str, Any] = {"trace_id": call.trace.trace_id, "timings": call.record}
        where = f"{call.method} {call.url}"
        if isinstance(exc, httpx.TimeoutException):
            phase = {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write",
                     "PoolTimeout": "pool"}.get(type(exc).__name__, "request")
            return APITimeoutError(f"Request timed out ({phase} phase) for {where}", request, **kw)
        return APIConnectionError(f"Connection error for {where}: {_describe_transport_error(exc, call.url)}", request, **kw)

    @staticmethod
    def _error_retry(call: Call, exc: Exception, attempt: int, free_used: int) -> tuple[float | None, bool]:
        """(delay or None, whether the retry is free: the request never ran on the server)."""
        if not isinstance(exc, httpx.TransportError) or isinstance(exc, httpx.UnsupportedProtocol):
            return None, False
        if _retry.free_retry(exc, free_used):
            return 0.0, True
        return _retry.error_retry_delay(exc, call.url, attempt, call.max_retries), False

    @staticmethod
    def _status_retry_delay(call: Call, response: httpx.Response, attempt: int) -> float | None:
        if not _retry.is_retryable_status(response.status_code, response.headers):
            return None
        # a 429 without Retry-After: full jitter, so refused callers do not come back together
        return _retry.retry_delay(attempt, call.max_retries, response.headers,
                                  full_jitter=response.status_code == 429)

    def _status_error(self, call: Call, response: httpx.Response, raw: bytes) -> APIStatusError:
        ctype = response.headers.get("content-type", "")
        body: object
        try:
            body = orjson.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace") if raw else None
        message = describe_error_body(response.status_code, body, raw, ctype)
        cls = status_error_class(response.status_code)
        err_body = body.get("error", body) if isinstance(body, dict) else body
        return cls(message, response=response, body=err_body, trace_id=call.trace.trace_id, timings=call.record)

    def _on_headers(self, call: Call, response: httpx.Response) -> bool:
        """Note the response's headers; True when the body must be sent again in a plainer form
        (as JSON after a protobuf refusal, or uncompressed after a coding refusal)."""
        headers = response.headers
        resend = False
        record = record_for(call.base_url)
        if record.codings is None:
            # Learned from the first answer that speaks for the server: one that says what it
            # reads (RFC 7694), or any success. A proxy's error page (nginx's 413 or 502, with
            # no Accept-Encoding) says nothing about the server behind it.
            accept = headers.get("accept-encoding")
            if accept is not None or response.status_code < 400:
                record.codings = parse_accept_encoding(accept)
        if call.options.wire != "json":
            resend = self._observe_wire(call, response)
            if resend:
                call.record.wire = "json"
        if response.status_code == 415 and call.record.request_encoding is not None:
            record.codings = frozenset()  # it said it reads codings; it does not
            resend = True
        call.record.finish_headers(response.http_version, headers.get("server-timing"))
        call.record.bytes_sent += len(response.request.content) if response.request else 0
        return resend

    # -- stage: hedge (decisions in _features and _hedge) --------------------------------------

    def _speaks_h2(self, call: Call) -> bool | None:
        """Whether the call's origin is known to speak HTTP/2 on our connections (None: not
        known yet; False through a caller's http_client)."""
        transport = getattr(self, "_transport", None)
        if transport is None:
            return False
        h2: bool | None = transport.origin_record(_url(call.url)).h2
        return h2

    @property
    def rate_limits(self) -> dict[str, dict[str, Any]]:
        """The rate limits learned from answers, per ``"base_url scope"``: each budget's limit,
        window and remaining now, whether calls are paced, 429s seen, calls held and for how long
        (``features/admit``)."""
        return self._features.rate_limits()

    @property
    def concurrency_limits(self) -> dict[str, dict[str, Any]]:
        """With ``concurrency="adaptive"``: per base URL, the calls allowed in flight now, in
        flight, waiting, the latency baseline, cuts and the reason of the last change."""
        return self._features.concurrency_limits()

    def hedge_stats(self) -> dict[str, dict[str, Any]]:
        """Per ``"path model"``: samples, learned delay_ms, hedges sent, wins, budget left."""
        return self._features.hedge_stats()

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

    def _check_replica_models(self, answers: list[tuple[Call, httpx.Response]]) -> None:
        """Several replicas: their ``GET /models`` (the warm-up's) must list the same models;
        ValueError naming each replica and its models otherwise."""
        if self._router is None:
            return
        served: dict[str, list[str] | None] = {}
        for call, response in answers:
            try:
                listed = orjson.loads(response.content)
            except ValueError:
                listed = None
            # None where the answer is not a model list: nothing to compare
            served[call.base_url] = model_labels(listed.get("data")) if isinstance(listed, dict) else None
        problem = model_mismatch(served)
        if problem is not None:
            raise ValueError(problem)

    def replica_stats(self) -> list[dict[str, Any]]:
        """Per replica (``base_url=[...]``): url, state (up, probe, down), in-flight calls, TTFT
        and queue EWMAs, error rate, calls served and failed, the last error; [] for one URL."""
        return self._router.stats() if self._router is not None else []

    # -- stage: decode -------------------------------------------------------------------------

    @staticmethod
    def _decode(call: Call, response: httpx.Response, raw: bytes, codec: Codec) -> dict[str, Any]:
        try:
            coding = response_coding(response)
            if coding is not None:
                try:
                    raw = decompress(raw, coding, MAX_RESPONSE_BYTES)
                except CompressionError as exc:
                    raise MalformedResponseError(f"Malformed response body: {exc}") from None
                response._content = raw  # what httpx's read() leaves: RawResponse.content works
            return codec.decode(call.path, raw, response.headers.get("content-type", ""))
        except APIError as err:
            BaseClient._stamp(err, call, response)
            raise

    @staticmethod
    def _make(call: Call, make: Callable[[dict[str, Any]], Any], value: dict[str, Any],
              response: httpx.Response) -> Any:
        """``make(value)``: the response object; an error it finds in the answer (a malformed
        embedding) carries the call's trace id like any other."""
        try:
            return make(value)
        except APIError as err:
            BaseClient._stamp(err, call, response)
            raise

    @staticmethod
    def _stamp(err: APIError, call: Call, response: httpx.Response) -> None:
        err.trace_id = call.trace.trace_id
        err.request_id = response.headers.get("x-request-id")
        err.timings = call.record
        err.request = response.request

    @staticmethod
    def _finish(call: Call, obj: Any, response: httpx.Response | None) -> Any:
        """Attach the call's facts to the result object (outside its JSON data)."""
        d = getattr(obj, "__dict__", None)
        if d is not None:
            d["trace_id"] = call.trace.trace_id
            d["timings"] = call.record
            d["_request_id"] = response.headers.get("x-request-id") if response is not None else None
        return obj

    def _stream_decoder(self, call: Call, response: httpx.Response, codec: Codec) -> Any:
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            # The whole answer in one JSON object (a server that ignored ``stream``, or a mock):
            # a stream of one chunk, as that answer would have streamed (``WholeJsonDecoder``).
            return WholeJsonDecoder(call.path)
        try:
            return codec.stream_decoder(content_type)
        except APIError as err:
            err.trace_id = call.trace.trace_id
            err.timings = call.record
            raise

    def _log_attempt(self, call: Call, attempt: int, why: str, delay: float) -> None:
        logger.info("retrying %s %s in %.2fs (attempt %d of %d): %s",
                    call.method, call.path, delay, attempt + 1, call.max_retries, why)


def _check_official_kwargs(client: BaseClient, official: Mapping[str, Any]) -> None:
    """The official client's own settings pass (for ``_passthrough``); any other keyword is a
    TypeError naming the closest real one, as the official client raises."""
    azure = "api_version" in client.__dict__ or hasattr(client, "_setup_azure")
    theirs = official_settings("AzureOpenAI" if azure else "OpenAI")
    if not theirs.issuperset(official):
        mine = set(inspect.signature(BaseClient.__init__).parameters) - {"self", "official"}
        check_keywords(f"{type(client).__name__}.__init__()", official, theirs | mine)


def _http_client_timeout(http_client: Any) -> httpx.Timeout | None:
    """A caller's http_client's own timeout when it is not httpx's default (the official rule:
    then it is the client's default timeout)."""
    timeout = getattr(http_client, "timeout", None)
    if timeout is None:
        return None
    mine = httpx.Timeout(**timeout.as_dict()) if not isinstance(timeout, httpx.Timeout) else timeout
    return None if mine == httpx.Timeout(5.0) else mine


_urls: dict[str, httpx.URL] = {}

# httpx.Headers keeps each header as (raw name, lower-case name, value) bytes in ``_list`` (httpx
# 0.18 to 0.28 and this 0.29); where a version does not, headers go to httpx as a dict.
_RAW_HEADERS: Final = isinstance(getattr(httpx.Headers({"a": "b"}), "_list", None), list) and \
    httpx.Headers({"A": "b"})._list == [(b"A", b"a", b"b")]


def _header_forms(headers: Mapping[str, str]) -> dict[tuple[str, str], tuple[bytes, bytes, bytes]]:
    """Each (name, value) of ``headers`` with httpx's checked, encoded form of it."""
    if not _RAW_HEADERS:
        return {}
    return dict(zip(headers.items(), httpx.Headers(headers)._list, strict=True))


# A whole response body larger than this once decompressed is refused (a compression bomb from
# a broken or hostile server; 4x the largest OpenAI answer we know of, a 2048 x 3072 embedding
# batch as JSON).
MAX_RESPONSE_BYTES: Final = 320 * 1024 * 1024


def _url(text: str) -> httpx.URL:
    url = _urls.get(text)
    if url is None:  # parsing a URL costs ~30 us; a process calls a handful of them
        if len(_urls) > 256:
            _urls.clear()
        url = _urls[text] = httpx.URL(text)
    return url


def _describe_transport_error(exc: Exception, url: str | None = None) -> str:
    return _hints.describe_transport(type(exc).__name__, str(exc), url or _hints.request_url(exc))


class OpenAI(SyncPassthrough, Pipeline, BaseClient):
    """Synchronous client (drop-in for ``openai.OpenAI``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._transport: SyncTransport | None = (
            None if self._http_client is not None else shared_sync_transport(self._transport_settings)
        )
        self.chat: Chat = Chat(self)
        self.completions: Completions = Completions(self)
        self.embeddings: Embeddings = Embeddings(self)
        self.responses: Responses = Responses(self)
        self.models: Models = Models(self)
        if self._warm:
            self.warmup()

    def with_options(self, **overrides: Any) -> OpenAI:
        """A copy with some settings changed, sharing this client's connections."""
        return type(self)(**self._copy_kwargs(**overrides))

    copy = with_options

    def warmup(self) -> None:
        """Open and prime the connection (TCP, TLS, HTTP/2 SETTINGS) before the first call.

        Sends ``GET /models``; any HTTP status counts as warm, connection errors raise.
        """
        answers = []
        for call in self._warm_calls():
            try:
                response = self._send(call, None, JSON_CODEC)
            except APIConnectionError:
                if self._router is None:
                    raise
                continue  # one replica down: the router has ejected it
            response.read()
            response.close()
            answers.append((call, response))
        self._check_replica_models(answers)

    def close(self) -> None:
        """Connections are shared by every client of the process with the same settings; they
        are kept for the next client. Use :func:`llmclient.close_all` at shutdown if needed.
        Stops keep-warm timers and cancels prefetches in flight. An ``http_client`` the client
        was given is closed, as the official client closes it."""
        self.__dict__["_closed"] = True
        self._features.close()
        official = self.__dict__.get("_official")  # the pass-through's (_passthrough)
        if official is not None:
            official.close()
        if self._http_client is not None:
            self._http_client.close()

    def warm(self, *, messages: Any, model: str, keep_warm: bool | float = False, **params: Any) -> Any:
        """Send this prompt with ``max_tokens=1`` so the server's prefix cache holds it.

        ``keep_warm``: True refreshes it before the provider's prompt cache forgets it
        (``SpeculationConfig.provider``); a number is that cache's TTL in seconds. Stopped by
        :meth:`close`. Returns the one-token completion (its ``usage`` shows what was cached).
        """
        return self._features.warm(keep_warm, {"messages": messages, "model": model, **params})

    def speculation_stats(self) -> dict[str, Any]:
        """Prefetch counters: predictions, sent, warmups, hits, joins, cancelled, refused,
        errors, wasted_tokens, used_tokens, latency_saved_ms, in_flight, extra_load."""
        return self._features.speculation_stats()

    def __enter__(self) -> OpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncOpenAI(AsyncPassthrough, AsyncPipeline, BaseClient):
    """Asynchronous client (drop-in for ``openai.AsyncOpenAI``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chat: AsyncChat = AsyncChat(self)
        self.completions: AsyncCompletions = AsyncCompletions(self)
        self.embeddings: AsyncEmbeddings = AsyncEmbeddings(self)
        self.responses: AsyncResponses = AsyncResponses(self)
        self.models: AsyncModels = AsyncModels(self)
        self._warm_task: asyncio.Task[None] | None = None
        if self._warm:
            # With no running loop, nothing starts: warm on the first call's loop (warmup()).
            self._warm_task = start_task(self.warmup)

    def with_options(self, **overrides: Any) -> AsyncOpenAI:
        return type(self)(**self._copy_kwargs(**overrides))

    copy = with_options

    @property
    def _transport(self) -> AsyncTransport | None:
        if self._http_client is not None:
            return None
        return shared_async_transport(self._transport_settings)

    async def warmup(self) -> None:
        answers = []
        for call in self._warm_calls():
            try:
                response = await self._send(call, None, JSON_CODEC)
            except APIConnectionError:
                if self._router is None:
                    raise
                continue  # one replica down: the router has ejected it
            await response.aread()
            await response.aclose()
            answers.append((call, response))
        self._check_replica_models(answers)

    async def close(self) -> None:
        """See :meth:`OpenAI.close`: connections are shared and kept (:func:`llmclient.aclose_all`
        closes them); an ``http_client`` it was given (httpx, or the official aiohttp one) is closed."""
        self.__dict__["_closed"] = True
        await self._features.aclose()
        official = self.__dict__.get("_official")
        if official is not None:
            await official.close()
        if self._http_client is not None:
            await self._http_client.aclose()

    async def warm(self, *, messages: Any, model: str, keep_warm: bool | float = False, **params: Any) -> Any:
        """See :meth:`OpenAI.warm`."""
        return await self._features.awarm(keep_warm, {"messages": messages, "model": model, **params})

    def speculation_stats(self) -> dict[str, Any]:
        """See :meth:`OpenAI.speculation_stats`."""
        return self._features.speculation_stats()

    async def __aenter__(self) -> AsyncOpenAI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# With ``openai`` imported, ``isinstance(client, openai.OpenAI)`` holds (``_official``); the
# official attributes these classes lack stay missing.
_official.register(OpenAI, AsyncOpenAI, hide=True)
