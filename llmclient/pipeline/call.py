"""One call as plain data (``Call``), the "not given" sentinels, and whose credentials a call
runs under (its scope).

Every layer of the chain (``llmclient/layers``) reads and annotates a ``Call``; none of them
needs the client object. The call is made by ``layers/calls.py``'s ``build_call`` from what a
resource was given; its options are ``layers/options.py``'s ``CallOptions``. This module
imports no feature: it is the plain data every room below the face may hold. See
docs/CONTRACTS.md, "The call".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from .._redact import SECRET_HEADERS, redact_headers, redact_url
from .timings import CallRecord
from .tracing import TraceContext

if TYPE_CHECKING:
    from ..layers.options import CallOptions

__all__ = [
    "NOT_GIVEN",
    "SCOPE_HEADERS",
    "SENTINEL_NAMES",
    "Call",
    "NotGiven",
    "Omit",
    "credential_scope",
    "http_client_auth",
    "is_given",
    "not_given",
    "omit",
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
SENTINEL_NAMES = frozenset({"NotGiven", "Omit"})


def is_given(value: object) -> bool:
    """False for ``NOT_GIVEN`` / ``omit``, ours or the official client's."""
    return value is not NOT_GIVEN and type(value).__name__ not in SENTINEL_NAMES


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
    options: CallOptions
    record: CallRecord = field(default_factory=CallRecord)
    # A hedge copy's CancelToken (llmclient.features.hedge), passed to the transport with each attempt.
    cancel: Any = None
    # Several replicas: the one this call must go to (a warm-up, a resumed stream), else None.
    route_pin: str | None = None
    # What the answer becomes: ``make(value)`` for a whole answer, ``stream_make(chunk)`` for each
    # event of a stream (None: ``make``), the face's types (llmclient/api/models.py).
    make: Any = None
    stream_make: Any = None
    # with_raw_response / with_streaming_response: the server's own answer, never the cache's.
    raw: bool = False
    # Set by the encode layer: the codec chosen for this call and the body as it goes on the wire
    # (None until encoded; a re-send in a plainer form encodes again).
    codec: Any = None
    content: bytes | None = None
    # Several replicas: the call's plan over them (features/route/attempt.Routed), made by the
    # route layer at its first attempt and kept across its retries.
    route: Any = None
    # Given extra_headers, extra_query or extra_body: a call of its own, never batched with others.
    extras: bool = False

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
                    self.options, record, cancel, self.route_pin, self.make, self.stream_make, self.raw)


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
