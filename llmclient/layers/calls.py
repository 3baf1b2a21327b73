"""Making a :class:`~llmclient.pipeline.call.Call` from what a resource was given (pure).

The face merges its defaults (headers, query, timeout, retries, credential scope) with a call's
own extras (``extra_headers``, ``extra_query``, ``extra_body``, ``timeout``) here, adds the
trace context and the idempotency key, and marks a low-priority call; no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from ..features.admit.priority import header as priority_header
from ..pipeline.call import SCOPE_HEADERS, Call, NotGiven, credential_scope, is_given
from ..pipeline.timings import CallRecord
from ..pipeline.tracing import new_trace_context

if TYPE_CHECKING:
    from .options import CallOptions

__all__ = ["build_call", "to_timeout"]


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
    call = Call(method, path, body, stream, merged, q, timeout, max_retries, trace, scope,
                base_url, options, record)
    if extra_headers or extra_query or extra_body:
        call.extras = True
    return call
