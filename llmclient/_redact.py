"""Secrets out of text: the one place that decides what llmclient never writes.

Everything llmclient writes as text (exception messages, log lines, ``repr`` of calls, what
the benchmarks put in their results) goes through these functions, so a credential reaches
neither a log nor a results file:

* credential headers (:data:`SECRET_HEADERS`) keep their name and lose their value;
* URL userinfo (``https://user:password@host``) becomes ``https://***@host``;
* query parameters that carry keys (``?api-key=``, ``?key=``, ``&sig=`` ...) lose their value;
* ``Authorization``-style text (``Bearer <token>``, ``api-key: <value>``) loses the token.

Pure functions over strings; cheap on text with nothing to hide (one regex scan each).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "MASK",
    "SECRET_HEADERS",
    "redact_argv",
    "redact_headers",
    "redact_text",
    "redact_url",
]

MASK = "<redacted>"

# Headers whose value is a credential (or names whose credential a call runs under). The
# credential scope (``_call.credential_scope``) hashes exactly these; nothing prints them.
# Azure OpenAI: ``api-key``; Anthropic-style gateways: ``x-api-key``; Gemini: ``x-goog-api-key``;
# Azure API Management: ``ocp-apim-subscription-key``.
SECRET_HEADERS = frozenset({
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
    "x-goog-api-key",
    "ocp-apim-subscription-key",
    "cookie",
})

# scheme://userinfo@ -> scheme://***@ (RFC 3986 section 3.2.1: userinfo ends at the last '@'
# before the path; a password may itself hold '@' when it was not percent-encoded).
_USERINFO_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^/?#\s\"'<>]*)@")
# ?api_key=... &sig=...: query parameters that carry credentials (Azure SAS ``sig``, Gemini
# ``key``, generic tokens).
_QUERY_RE = re.compile(
    r"(?P<name>[?&;](?:api[-_]?key|key|token|access[-_]?token|auth|sig|signature|password|"
    r"secret|client[-_]?secret)=)(?P<value>[^&#\s\"'<>]+)",
    re.IGNORECASE,
)
# "Authorization: Bearer xyz", "api-key=xyz", "'x-api-key': 'xyz'" in free text.
_HEADER_TEXT_RE = re.compile(
    r"(?P<name>\b(?:proxy-authorization|authorization|x-goog-api-key|x-api-key|api-key|api_key|"
    r"ocp-apim-subscription-key|cookie)['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(?P<kind>Bearer|Basic|Token)\s+)?(?P<value>[^\s'\",;}]+)",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"\b(?P<kind>Bearer|Basic)\s+(?P<value>[A-Za-z0-9._~+/=\-]{8,})")
# Fast path: text without any of these cannot hold anything the patterns above match.
_HINTS = ("@", "=", ":", "Bearer", "Basic", "bearer", "basic")


def redact_url(url: str) -> str:
    """``url`` without userinfo or credential query values (for messages, logs, results)."""
    return _QUERY_RE.sub(_mask_value, _USERINFO_RE.sub(_mask_userinfo, url))


def redact_text(text: str) -> str:
    """``text`` with URL userinfo, credential query values and header-style secrets masked."""
    if not any(h in text for h in _HINTS):
        return text
    text = _USERINFO_RE.sub(_mask_userinfo, text)
    text = _QUERY_RE.sub(_mask_value, text)
    text = _HEADER_TEXT_RE.sub(_mask_header, text)
    return _BEARER_RE.sub(_mask_bearer, text)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``headers`` with every credential header's value masked."""
    return {k: (MASK if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


def redact_argv(argv: Sequence[str], secret_options: Iterable[str] = ("--api-key",)) -> list[str]:
    """A command line for a results file: values of ``secret_options`` masked (``--api-key X``
    and ``--api-key=X``), URLs in the rest without userinfo."""
    options = tuple(secret_options)
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
        elif arg in options:
            out.append(arg)
            mask_next = True
        elif arg.startswith(tuple(o + "=" for o in options)):
            out.append(arg.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(redact_text(arg))
    return out


def _mask_userinfo(match: re.Match[str]) -> str:
    return match.group("scheme") + "***@"


def _mask_value(match: re.Match[str]) -> str:
    return match.group("name") + MASK


def _mask_header(match: re.Match[str]) -> str:
    kind = match.group("kind")
    return match.group("name") + (kind + " " if kind else "") + MASK


def _mask_bearer(match: re.Match[str]) -> str:
    return match.group("kind") + " " + MASK
