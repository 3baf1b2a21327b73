"""One call as plain data (``Call``), and the pure function that builds it from ``create(**kw)``.

Every pipeline stage (prepare, lookup, encode, send, decode, store, after) reads and annotates
a ``Call``; none of them needs the client object. See docs/CONTRACTS.md, "Client pipeline seams".
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._redact import SECRET_HEADERS, redact_headers, redact_url
from ..features.admit.priority import check as check_priority
from ..features.admit.priority import header as priority_header
from ..features.hedge import hedge_config
from ..wire.codec import Wire
from .resume import check_early_resume, check_stream_resume
from .timings import CallRecord
from .tracing import TraceContext, new_trace_context
from .watchdog import DEFAULT_STREAM_IDLE_TIMEOUT, check_idle_timeout

__all__ = [
    "NOT_GIVEN",
    "OPTION_KEYS",
    "SCOPE_HEADERS",
    "Call",
    "CallOptions",
    "NotGiven",
    "build_call",
    "credential_scope",
    "http_client_auth",
    "is_given",
    "not_given",
    "omit",
    "split_options",
]


class NotGiven:
    """Sentinel for "argument not passed" (the official client's ``NOT_GIVEN``)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()
not_given = NOT_GIVEN


class Omit:
    """Sentinel for "leave this out of the request", e.g. a default header (the official
    ``omit``): ``extra_headers={"x-stainless-lang": omit}``."""

    _instance: Omit | None = None

    def __new__(cls) -> Omit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False


omit = Omit()
# The official client's sentinels count too (frameworks built on it pass ``openai.NOT_GIVEN``
# for every argument they leave unset): recognised by class name, so openai is never imported.
_SENTINEL_NAMES = frozenset({"NotGiven", "Omit"})


def is_given(value: object) -> bool:
    """False for ``NOT_GIVEN`` / ``omit``, ours or the official client's."""
    return value is not NOT_GIVEN and type(value).__name__ not in _SENTINEL_NAMES


@dataclass(slots=True)
class CallOptions:
    """Per-call options the official client does not have; never sent to the server."""

    cache: Any = None  # None | bool | llmclient.cache.CacheOptions
    prefetch: Any = None  # None | list | callable | True | "prefix"
    images: Any = None  # None | False | str target | dict
    wire: Wire = "json"
    hedge: Any = None  # None (no second copy) | llmclient.HedgeConfig
    # A stream without an event this long ends (APITimeoutError); None: no watchdog.
    stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT
    # Derive a prompt_cache_key when the app sets none (features/route/cache_key): True: for any
    # origin; False: never; None: only where the field is documented (api.openai.com).
    auto_cache_key: bool | None = None
    # "continue": a chat stream cut after content is continued from its partial answer
    # (pipeline.resume); "auto": only what needs no opt-in (background resume, re-send).
    stream_resume: str = "auto"
    # A silent background stream resumed beside its connection before the idle limit
    # (pipeline.resume.early_resume_after); False: only at the limit.
    stream_early_resume: bool = True
    # "low": work that may wait (x-llm-priority: low, and vLLM's body field where the client has
    # priority_field=True: features/admit/priority); "normal": not low; None: as the headers say.
    priority: str | None = None


OPTION_KEYS = frozenset({"cache", "prefetch", "images", "wire", "hedge", "stream_idle_timeout",
                         "auto_cache_key", "stream_resume", "stream_early_resume", "priority"})


@dataclass(slots=True, repr=False)
class Call:
    method: str
    path: str
    body: dict[str, Any] | None
    stream: bool
    headers: dict[str, str]
    query: dict[str, Any]
    timeout: httpx.Timeout
    max_retries: int
    trace: TraceContext
    scope: str
    base_url: str
    options: CallOptions = field(default_factory=CallOptions)
    record: CallRecord = field(default_factory=CallRecord)
    # A hedge copy's CancelToken (llmclient.features.hedge), passed to the transport with each attempt.
    cancel: Any = None
    # Several replicas: the one this call must go to (a warm-up, a resumed stream), else None.
    route_pin: str | None = None

    @property
    def url(self) -> str:
        return self.base_url + self.path

    def __repr__(self) -> str:
        # Never the credentials: headers and URL as ``_redact`` masks them; no body (it is the
        # user's data, and can be megabytes of image).
        return (f"Call({self.method} {redact_url(self.url)}, stream={self.stream}, "
                f"headers={redact_headers(self.headers)!r}, trace_id={self.trace.trace_id}, "
                f"scope={self.scope[:12]}...)")

    def sibling(self, headers: dict[str, str], record: CallRecord, cancel: Any) -> Call:
        """The same call with these headers, record and cancel token (a hedge's two copies);
        built directly: ``dataclasses.replace`` costs ~10x more on this per-call path."""
        return Call(self.method, self.path, self.body, self.stream, headers, self.query,
                    self.timeout, self.max_retries, self.trace, self.scope, self.base_url,
                    self.options, record, cancel)


# What names a tenant on the wire: every credential header, and the organisation and project
# headers that select whose account answers. The scope hashes exactly what is sent under
# these names, after default_headers, extra_headers and the api_key's Authorization are merged.
SCOPE_HEADERS: frozenset[str] = SECRET_HEADERS | {"openai-organization", "openai-project"}
_SCOPE_DOMAIN = b"llmclient-scope-v2\x00"
_scopes: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
_SCOPES_MAX = 1024


def scope_material(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The (name, value) pairs of ``headers`` that name whose credentials a call runs under,
    sorted by lower-cased name (pure)."""
    return tuple(sorted((k.lower(), v) for k, v in headers.items() if k.lower() in SCOPE_HEADERS))


def credential_scope(headers: Mapping[str, str], base_url: str, auth: str = "") -> str:
    """Hex SHA-256 naming whose credentials a call runs under: the credential headers it
    sends (:data:`SCOPE_HEADERS`), the base URL it goes to (userinfo included) and ``auth``
    (what an ``http_client``'s own auth adds). Cache entries and prefetches never cross it;
    the secrets themselves are never stored (only this hash is). Memoised: a client's calls
    share a handful of header sets, and this runs per call when ``extra_headers`` touch one."""
    material = scope_material(headers)
    memo_key = (base_url, auth, material)
    scope = _scopes.get(memo_key)
    if scope is None:
        h = hashlib.sha256(_SCOPE_DOMAIN)
        for part in (base_url, auth, *(f"{k}:{v}" for k, v in material)):
            encoded = part.encode("utf-8", "surrogatepass")
            h.update(len(encoded).to_bytes(8, "big"))  # length-prefixed: no two lists collide
            h.update(encoded)
        scope = h.hexdigest()
        if len(_scopes) >= _SCOPES_MAX:
            _scopes.clear()
        _scopes[memo_key] = scope
    return scope


def http_client_auth(http_client: Any) -> str:
    """What a caller's ``http_client`` adds as credentials on its own, for the scope.

    ``httpx.Client(auth=...)`` is applied when the client sends; a ``BasicAuth`` is known
    exactly (its header), any other auth (a callable, a token flow) cannot be read, so it
    gets a scope of its own in this process (never shared with another client object).
    Headers added by event hooks are not seen: pass credentials as headers or api_key."""
    auth = getattr(http_client, "auth", None) if http_client is not None else None
    if auth is None:
        return ""
    header = getattr(auth, "_auth_header", None)
    if isinstance(header, str):
        return "basic:" + header
    return f"opaque:{type(auth).__qualname__}:{id(auth):x}"


def split_options(params: dict[str, Any], defaults: CallOptions) -> tuple[dict[str, Any], CallOptions]:
    """Take llmclient's own options out of ``create(**params)``; drop NOT_GIVEN values."""
    names = _SENTINEL_NAMES
    body = {k: v for k, v in params.items() if type(v).__name__ not in names and k not in OPTION_KEYS}
    if not OPTION_KEYS.intersection(params):
        return body, defaults
    opts = CallOptions(defaults.cache, defaults.prefetch, defaults.images, defaults.wire,
                       defaults.hedge, defaults.stream_idle_timeout, defaults.auto_cache_key,
                       defaults.stream_resume, defaults.stream_early_resume, defaults.priority)
    for key in OPTION_KEYS.intersection(params):
        value = params[key]
        if is_given(value):
            setattr(opts, key, value)
    if "hedge" in params and is_given(params["hedge"]):
        opts.hedge = hedge_config(opts.hedge)
    if "stream_idle_timeout" in params and is_given(params["stream_idle_timeout"]):
        opts.stream_idle_timeout = check_idle_timeout(opts.stream_idle_timeout)
    if opts.auto_cache_key is not None and not isinstance(opts.auto_cache_key, bool):
        raise ValueError(f"auto_cache_key must be True, False or None, got {opts.auto_cache_key!r}")
    if "stream_resume" in params and is_given(params["stream_resume"]):
        opts.stream_resume = check_stream_resume(opts.stream_resume)
    if "stream_early_resume" in params and is_given(params["stream_early_resume"]):
        opts.stream_early_resume = check_early_resume(opts.stream_early_resume)
    if "priority" in params and is_given(params["priority"]):
        opts.priority = check_priority(opts.priority)
    if opts.wire not in ("json", "protobuf", "auto"):
        raise ValueError(f"wire must be 'json', 'protobuf' or 'auto', got {opts.wire!r}")
    return body, opts


def to_timeout(value: float | httpx.Timeout | NotGiven | None, default: httpx.Timeout) -> httpx.Timeout:
    if not is_given(value):
        return default
    if isinstance(value, httpx.Timeout):
        return value
    return httpx.Timeout(value)  # type: ignore[arg-type]


def build_call(
    method: str,
    path: str,
    body: dict[str, Any] | None,
    *,
    base_url: str,
    headers: Mapping[str, str],
    query: Mapping[str, Any],
    timeout: httpx.Timeout,
    max_retries: int,
    scope: str,
    options: CallOptions,
    stream: bool = False,
    extra_headers: Mapping[str, str] | None = None,
    extra_query: Mapping[str, Any] | None = None,
    extra_body: Mapping[str, Any] | None = None,
    scope_auth: str = "",
) -> Call:
    """Merge client defaults with per-call extras into a Call (no I/O).

    ``scope`` is the credential scope of ``headers`` (the client computes it once); when
    ``extra_headers`` add, change or remove a credential header it is computed again from the
    merged headers, the ones that go on the wire."""
    merged = dict(headers)
    if extra_headers:
        rescope = False
        for key, value in extra_headers.items():
            lower = key.lower()
            if lower in SCOPE_HEADERS:
                rescope = True
            if value is None or not is_given(value):  # the official ways to remove a header
                merged.pop(lower, None)
            else:
                merged[lower] = str(value)
        if rescope:
            scope = credential_scope(merged, base_url, scope_auth)
    priority_header(merged, options.priority)
    trace = new_trace_context(merged.pop("traceparent", None), merged.pop("tracestate", None))
    for key, value in trace.headers().items():
        if key == "x-request-id":
            merged.setdefault(key, value)  # a caller's own X-Request-ID wins
        else:
            merged[key] = value
    if method != "GET":
        # One key for every attempt of this call, so a retried POST is processed at most once
        # by servers that honour it (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/).
        merged.setdefault("idempotency-key", uuid.uuid4().hex)
    if extra_body:
        body = {**(body or {}), **extra_body}
    q = dict(query)
    if extra_query:
        q.update(extra_query)
    record = CallRecord()
    record.wire = options.wire if options.wire != "auto" else "json"
    return Call(method, path, body, stream, merged, q, timeout, max_retries, trace, scope,
                base_url, options, record)
