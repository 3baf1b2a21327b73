"""One call as plain data (``Call``), and the pure function that builds it from ``create(**kw)``.

Every pipeline stage (prepare, lookup, encode, send, decode, store, after) reads and annotates
a ``Call``; none of them needs the client object. See docs/CONTRACTS.md, "Client pipeline seams".
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from ._timings import CallRecord
from ._tracing import TraceContext, new_trace_context

__all__ = [
    "NOT_GIVEN",
    "OPTION_KEYS",
    "Call",
    "CallOptions",
    "NotGiven",
    "build_call",
    "credential_scope",
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
Omit = NotGiven

Wire = Literal["json", "protobuf", "auto"]


@dataclass(slots=True)
class CallOptions:
    """Per-call options the official client does not have; never sent to the server."""

    cache: Any = None  # None | bool | llmclient.cache.CacheOptions
    prefetch: Any = None  # None | list | callable | True | "prefix"
    images: Any = None  # None | False | str target | dict
    wire: Wire = "json"
    hedge: Any = None  # None (no second copy) | llmclient.HedgeConfig


OPTION_KEYS = frozenset({"cache", "prefetch", "images", "wire", "hedge"})


@dataclass(slots=True)
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
    # A hedge copy's CancelToken (llmclient._hedge), passed to the transport with each attempt.
    cancel: Any = None

    @property
    def url(self) -> str:
        return self.base_url + self.path

    def sibling(self, headers: dict[str, str], record: CallRecord, cancel: Any) -> Call:
        """The same call with these headers, record and cancel token (a hedge's two copies);
        built directly: ``dataclasses.replace`` costs ~10x more on this per-call path."""
        return Call(self.method, self.path, self.body, self.stream, headers, self.query,
                    self.timeout, self.max_retries, self.trace, self.scope, self.base_url,
                    self.options, record, cancel)


def credential_scope(api_key: str, organization: str | None, project: str | None) -> str:
    """Hex SHA-256 naming whose credentials a call runs under (cache entries never cross it)."""
    raw = "\x00".join((api_key, organization or "", project or "")).encode()
    return hashlib.sha256(raw).hexdigest()


def split_options(params: dict[str, Any], defaults: CallOptions) -> tuple[dict[str, Any], CallOptions]:
    """Take llmclient's own options out of ``create(**params)``; drop NOT_GIVEN values."""
    body = {k: v for k, v in params.items() if v is not NOT_GIVEN and k not in OPTION_KEYS}
    if not OPTION_KEYS.intersection(params):
        return body, defaults
    opts = CallOptions(defaults.cache, defaults.prefetch, defaults.images, defaults.wire,
                       defaults.hedge)
    for key in OPTION_KEYS.intersection(params):
        value = params[key]
        if value is not NOT_GIVEN:
            setattr(opts, key, value)
    if "hedge" in params and params["hedge"] is not NOT_GIVEN:
        from ._hedge import hedge_config

        opts.hedge = hedge_config(opts.hedge)
    if opts.wire not in ("json", "protobuf", "auto"):
        raise ValueError(f"wire must be 'json', 'protobuf' or 'auto', got {opts.wire!r}")
    return body, opts


def to_timeout(value: float | httpx.Timeout | NotGiven | None, default: httpx.Timeout) -> httpx.Timeout:
    if value is NOT_GIVEN:
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
) -> Call:
    """Merge client defaults with per-call extras into a Call (no I/O)."""
    merged = dict(headers)
    if extra_headers:
        for key, value in extra_headers.items():
            lower = key.lower()
            if value is None or value is NOT_GIVEN:  # the official way to remove a header
                merged.pop(lower, None)
            else:
                merged[lower] = str(value)
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
