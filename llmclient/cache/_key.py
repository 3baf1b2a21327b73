"""Cache keys: a pure function of everything that changes the answer.

The key is a full SHA-256 over a canonical orjson encoding (``OPT_SORT_KEYS``) of the
origin, the endpoint, the request body and the credential scope. Two requests that differ
only in JSON key order, in ``stream``/``stream_options`` or in how an image was inlined
(same bytes) share a key; anything else that the server could answer differently splits it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "ENDPOINTS",
    "KEY_PREFIX",
    "cache_key",
    "endpoint_for",
    "scope_hash",
    "validate_namespace",
]

# Bump when the material hashed below changes meaning: old entries then simply miss.
KEY_VERSION = 1
KEY_PREFIX = f"llmc:v{KEY_VERSION}:"

# Paths (relative to the base URL) that the cache understands, by endpoint name.
ENDPOINTS: Mapping[str, str] = {
    "chat/completions": "chat.completions",
    "completions": "completions",
    "embeddings": "embeddings",
    "responses": "responses",
    "v1/messages": "messages",  # Anthropic's Messages API (its base URL has no /v1)
}

# Fields that choose the transport shape of the answer, not the answer: a stored completion
# can answer a streamed or a non-streamed call (replay), so they must not split the key.
_TRANSPORT_ONLY = frozenset({"stream", "stream_options"})

# Domain separation: a key hash can never equal a scope hash of the same bytes.
_KEY_DOMAIN = b"llmclient-key\x00"

_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def endpoint_for(path: str) -> str | None:
    """The endpoint name for a request path (``/chat/completions`` -> ``chat.completions``)."""
    return ENDPOINTS.get(path.strip("/"))


def scope_hash(api_key: str | None, organization: str | None = None, project: str | None = None) -> str:
    """Hex SHA-256 of the credentials so tenants never share entries; the key never leaves here."""
    material = orjson.dumps([api_key or "", organization or "", project or ""])
    return hashlib.sha256(b"llmclient-scope\x00" + material).hexdigest()


def validate_namespace(namespace: str | None) -> str:
    """Namespaces are short tokens (they appear in backend keys); reject anything else."""
    if namespace is None or namespace == "":
        return "-"
    if not isinstance(namespace, str) or not _NAMESPACE_RE.match(namespace):
        raise ValueError(
            f"cache namespace must be 1-64 characters of [A-Za-z0-9_.-], got {namespace!r}"
        )
    return namespace


def _hash_data_urls(value: Any) -> Any:
    """Replace inline ``data:`` URLs by the hash of their content.

    A prepared image can be megabytes of base64; hashing it once here keeps the canonical
    encoding small while two requests with the same image bytes still share a key.
    """
    if isinstance(value, str):
        if value.startswith("data:"):
            return "data-sha256:" + hashlib.sha256(value.encode()).hexdigest()
        return value
    if isinstance(value, Mapping):
        return {k: _hash_data_urls(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_hash_data_urls(v) for v in value]
    return value


def _canonical_body(body: Mapping[str, Any], inline_data: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name in _TRANSPORT_ONLY:
            continue
        if inline_data and name in ("messages", "input", "prompt"):
            value = _hash_data_urls(value)
        out[name] = value
    return out


def _encode(material: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(material, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        raise TypeError(f"cache_key: request body is not JSON-encodable: {exc}") from exc


def cache_key(
    *,
    base_url: str,
    path: str,
    body: Mapping[str, Any],
    scope: str,
    namespace: str | None = None,
    query: Mapping[str, Any] | None = None,
) -> str:
    """The backend key for one request: ``llmc:v1:<namespace>:<sha256 hex>``.

    ``scope`` is a credential hash (see :func:`scope_hash`), never the API key itself.
    Raises ``TypeError`` if the body holds values orjson cannot encode canonically.
    """
    if not isinstance(body, Mapping):
        raise TypeError(f"cache_key: body must be a mapping, got {type(body).__name__}")
    ns = validate_namespace(namespace)
    material = {
        "v": KEY_VERSION,
        "origin": base_url.rstrip("/"),
        "path": path.strip("/"),
        "scope": scope,
        "body": _canonical_body(body, inline_data=False),
        # Query parameters can select a different deployment or API version (Azure).
        "query": dict(query) if query else None,
    }
    encoded = _encode(material)
    if b'"data:' in encoded:
        # Walk the messages only when an inline data URL is present (rare, and the walk costs
        # more than the whole key otherwise).
        material["body"] = _canonical_body(body, inline_data=True)
        encoded = _encode(material)
    return f"{KEY_PREFIX}{ns}:{hashlib.sha256(_KEY_DOMAIN + encoded).hexdigest()}"

