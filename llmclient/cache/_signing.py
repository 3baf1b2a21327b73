"""Signed entries for shared backends: an entry written by anyone without the key is refused.

A Redis or SQLite store shared by several machines is only as trustworthy as everyone who can
write to it. With a signing key (``ResponseCache(..., signing_key=...)`` or the
``LLMCLIENT_CACHE_KEY`` environment variable) every stored value is::

    b"llmc-sig1" + HMAC-SHA256(key, cache key + b"\\x00" + entry bytes) + entry bytes

The MAC covers the cache key, so a valid entry copied under another key (another tenant's
scope, another prompt) is refused too. Reading checks it in constant time
(``hmac.compare_digest``); a value without a valid MAC is a :class:`SignatureError`, which
ResponseCache counts (``rejected``) and answers as a miss. Pure functions.

Without a key, values are stored bare, and a signed value is read by dropping its MAC
unchecked (such a reader trusts the store anyway), so signing can be switched on one
deployment at a time.
"""

from __future__ import annotations

import hashlib
import hmac
import os

__all__ = [
    "ENV_SIGNING_KEY",
    "MIN_KEY_BYTES",
    "SignatureError",
    "resolve_signing_key",
    "sign",
    "unsign",
]

ENV_SIGNING_KEY = "LLMCLIENT_CACHE_KEY"
MIN_KEY_BYTES = 16  # HMAC-SHA256 keys shorter than this are guessable (RFC 2104 section 3)
_MAGIC = b"llmc-sig1"
_MAC_BYTES = hashlib.sha256().digest_size


class SignatureError(ValueError):
    """A stored value carries no valid signature under this cache's key."""


def resolve_signing_key(key: str | bytes | None) -> bytes | None:
    """The key given, else ``$LLMCLIENT_CACHE_KEY``, as bytes; None when neither is set.
    Refuses keys shorter than :data:`MIN_KEY_BYTES` (naming the problem, never the key)."""
    if key is None:
        key = os.environ.get(ENV_SIGNING_KEY) or None
        source = f"${ENV_SIGNING_KEY}"
    else:
        source = "signing_key"
    if key is None:
        return None
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if len(raw) < MIN_KEY_BYTES:
        raise ValueError(f"cache {source} must be at least {MIN_KEY_BYTES} bytes, got {len(raw)}")
    return raw


def _mac(key: bytes, cache_key: str, data: bytes) -> bytes:
    h = hmac.new(key, cache_key.encode("utf-8"), hashlib.sha256)
    h.update(b"\x00")
    h.update(data)
    return h.digest()


def sign(key: bytes | None, cache_key: str, data: bytes) -> bytes:
    """``data`` as stored: with its MAC under ``key`` for ``cache_key``, or bare without a key."""
    if key is None:
        return data
    return _MAGIC + _mac(key, cache_key, data) + data


def unsign(key: bytes | None, cache_key: str, stored: bytes) -> bytes:
    """The entry bytes of a stored value; raises :class:`SignatureError` when a key is set and
    the value is unsigned, truncated, or signed for other bytes, another cache key or under
    another signing key."""
    signed = stored.startswith(_MAGIC) and len(stored) >= len(_MAGIC) + _MAC_BYTES
    if key is None:
        return stored[len(_MAGIC) + _MAC_BYTES:] if signed else stored
    if not signed:
        raise SignatureError("entry is not signed")
    mac = stored[len(_MAGIC):len(_MAGIC) + _MAC_BYTES]
    data = stored[len(_MAGIC) + _MAC_BYTES:]
    if not hmac.compare_digest(mac, _mac(key, cache_key, data)):
        raise SignatureError("entry signature does not match (forged, or written under another key)")
    return data
