"""The likely fix for an error a first try meets, decided from what came back.

Pure: a status, the method and URL, the response body or the exception's text in; one
sentence naming the fix, or None, out. What they decide:

- a 404 on an OpenAI endpoint whose URL has no version segment: the base URL lacks ``/v1``
  (vLLM, SGLang, llama.cpp's server, Ollama and OpenAI all serve the API under it);
- ``https://`` to a port that answered in plain HTTP (OpenSSL's "wrong version number"): use
  ``http://``;
- a refused connection to this machine: nothing listens on that port;
- a 401/403 to a call made without a key of the caller's: the server is an API that wants one.

The error's own words stay first; a hint is appended to them (:func:`with_hint`).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

__all__ = ["auth_hint", "describe_transport", "is_loopback", "request_url", "status_hint",
           "transport_hint", "with_hint"]

# Endpoints of the OpenAI API (https://platform.openai.com/docs/api-reference, 2026-12), as a
# path ends: the base URL is what comes before them.
API_PATHS = ("/chat/completions", "/completions", "/embeddings", "/responses", "/models",
             "/moderations", "/audio/speech", "/audio/transcriptions", "/audio/translations",
             "/images/generations", "/images/edits", "/files", "/batches", "/uploads")
# A version segment in a base URL: /v1, /v1beta, /v2 ... (Gemini's OpenAI surface is
# /v1beta/openai): its presence means the base URL names a version, right or wrong.
_VERSION = re.compile(r"/v\d+[a-z0-9]*(?=/|$)")
# What OpenSSL says when the peer's first bytes are not a TLS record (an HTTP response to our
# ClientHello): 1.1.1 and 3.0 "wrong version number", 3.2+ "packet length too long" or
# "record layer failure".
_PLAIN_HTTP = ("WRONG_VERSION_NUMBER", "wrong version number", "packet length too long",
               "record layer failure")


def with_hint(message: str, hint: str | None) -> str:
    """``message`` followed by ``hint`` (nothing when there is none)."""
    return message if not hint else f"{message.rstrip()} (hint: {hint})"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is this machine: ``localhost`` or a loopback address (127.0.0.0/8,
    ::1, an IPv4-mapped loopback)."""
    if not host:
        return False
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _base_of(path: str) -> str | None:
    """The part of ``path`` before its OpenAI endpoint, or None when it ends in none."""
    trimmed = path.rstrip("/")
    for endpoint in API_PATHS:
        if trimmed.endswith(endpoint):
            return trimmed[: -len(endpoint)]
        at = trimmed.find(endpoint + "/")  # /models/{id}, /files/{id}/content ...
        if at >= 0 and endpoint in ("/models", "/files", "/batches", "/responses", "/uploads"):
            return trimmed[:at]
    return None


def status_hint(status: int, method: str, url: str, body: str = "") -> str | None:
    """A likely fix for an HTTP error status (None when the status says nothing more)."""
    if status != 404:
        return None
    parts = urlsplit(url)
    base = _base_of(parts.path)
    if base is None or _VERSION.search(base):
        return None
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme else ""
    return (f"{method.upper()} {parts.path} is not a route here, and the base URL has no /v1: "
            f"OpenAI-compatible servers serve the API under /v1; try "
            f"base_url='{origin}{base}/v1'")


def transport_hint(text: str, url: str | None) -> str | None:
    """A likely fix for a connection that failed before any HTTP answer (``text``: the
    exception's text and its causes')."""
    parts = urlsplit(url or "")
    if "proxy" in text.lower():  # about the proxy, not the server the URL names: said as is
        return None
    if parts.scheme == "https" and any(marker in text for marker in _PLAIN_HTTP):
        plain = parts._replace(scheme="http").geturl()
        return (f"the server at {parts.netloc} answered in plain HTTP, not TLS: use http:// "
                f"({plain})")
    refused = "Connection refused" in text or "Errno 111" in text or "ECONNREFUSED" in text
    if refused and is_loopback(parts.hostname):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return (f"nothing listens on {parts.hostname} port {port}: start the server, or check "
                "the port in the base URL")
    return None


def request_url(exc: BaseException) -> str | None:
    """The URL of the request an httpx error is about, when it carries one."""
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:  # httpx: an error raised without its request
        return None
    return None if request is None else str(request.url)


def describe_transport(exc_type: str, text: str, url: str | None) -> str:
    """What a transport error was, in words, with its likely fix: DNS, TLS, a refused
    connection, else the exception as it is."""
    text = text or exc_type
    if "Name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        described = f"DNS lookup failed ({text})"
    elif "CERTIFICATE_VERIFY_FAILED" in text or "SSL" in text:
        described = f"TLS handshake failed ({text})"
    elif "Connection refused" in text or "Errno 111" in text:
        # on this machine the likely fix is known (nothing listens on that port); elsewhere a
        # question is all that can be said
        local = transport_hint(text, url)
        return f"connection refused ({text}); {local or 'is the server running at this base URL?'}"
    else:
        described = f"{exc_type}: {text}"
    return with_hint(described, transport_hint(text, url))


def auth_hint(status: int, key_given: bool) -> str | None:
    """What a 401/403 means: without a key of the caller's, an API that wants one; with one,
    a key it refused."""
    if status not in (401, 403):
        return None
    if not key_given:
        return ("an API that wants a key: pass --api-key KEY (or set OPENAI_API_KEY); no key "
                "was given")
    return "the API refused the key given: check --api-key / OPENAI_API_KEY and its scope"
