"""The HTTP request one attempt sends, built from the call (no I/O): what the send layer
hands the transport.

httpx checks and encodes every header of every Request it builds (about 2 us a header); the
headers every call of a client starts with are taken in the form httpx gave them once
(:func:`header_forms`), and only the call's own (the trace context, ``extra_headers``) are
checked anew.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import httpx

from ..pipeline.watchdog import body_read_timeout
from ..wire.codec import JSON_CODEC

if TYPE_CHECKING:
    from ..pipeline.call import Call

__all__ = ["HeaderForms", "build_request", "header_forms", "url_of"]

HeaderForms = dict[tuple[str, str], tuple[bytes, bytes, bytes]]

# httpx.Headers keeps each header as (raw name, lower-case name, value) bytes in ``_list`` (httpx
# 0.18 to 0.28 and this 0.29); where a version does not, headers go to httpx as a dict.
_RAW_HEADERS: Final = isinstance(getattr(httpx.Headers({"a": "b"}), "_list", None), list) and \
    httpx.Headers({"A": "b"})._list == [(b"A", b"a", b"b")]

_urls: dict[str, httpx.URL] = {}


def url_of(text: str) -> httpx.URL:
    """``httpx.URL(text)``, parsed once: parsing costs ~30 us and a process calls a handful."""
    url = _urls.get(text)
    if url is None:
        if len(_urls) > 256:
            _urls.clear()
        url = _urls[text] = httpx.URL(text)
    return url


def header_forms(headers: Mapping[str, str]) -> HeaderForms:
    """Each (name, value) of ``headers`` with httpx's checked, encoded form of it."""
    if not _RAW_HEADERS:
        return {}
    return dict(zip(headers.items(), httpx.Headers(headers)._list, strict=True))


def build_request(call: Call, forms: HeaderForms, on_trace: Any) -> httpx.Request:
    """The request of the call's current attempt: its codec's content type, its content-coding,
    timeouts (a stream's reads wait at most its idle limit: the stall watchdog), trace hook and
    cancel token as httpx extensions."""
    headers = call.headers
    codec = call.codec
    content = call.content
    if codec is not None and codec is not JSON_CODEC:
        headers = {**headers, "content-type": codec.content_type, "accept": codec.accept}
    if call.record.request_encoding is not None:
        headers = {**headers, "content-encoding": call.record.request_encoding}
    if content is None:
        headers = {k: v for k, v in headers.items() if k != "content-type"}
    timeout = call.timeout
    extensions: dict[str, Any] = {
        "timeout": {"connect": timeout.connect,
                    "read": body_read_timeout(timeout.read, call.options.stream_idle_timeout)
                    if call.stream else timeout.read,
                    "write": timeout.write, "pool": timeout.pool},
        "trace": on_trace,
    }
    if call.cancel is not None:
        extensions["llmclient.cancel"] = call.cancel
    url = url_of(call.url)
    if not _RAW_HEADERS:
        return httpx.Request(call.method, url, params=call.query or None, headers=headers, content=content,
                             extensions=extensions)
    # Given its body as a stream, httpx adds no header of its own and checks none again (with
    # content= it checks and scans every header six more times): the list it would make (Host
    # first, Content-Length last) is made here, the client's own headers in their checked form.
    request = httpx.Request(call.method, url, params=call.query or None,
                            headers=_request_headers(forms, headers, url, call.method, content),
                            stream=httpx.ByteStream(content or b""), extensions=extensions)
    request.read()  # .content, as content= leaves it
    return request


def _form(name: Any, value: Any) -> tuple[bytes, bytes, bytes]:
    """httpx's form of one header: for str name and value what httpx.Headers makes (each
    encoded as ASCII, a UnicodeEncodeError where one is not), without building a Headers for
    the two or three headers a call adds (its trace context, its idempotency key); anything
    else as httpx makes it."""
    if type(name) is str and type(value) is str:
        raw = name.encode("ascii")
        return raw, raw.lower(), value.encode("ascii")
    form: tuple[bytes, bytes, bytes] = httpx.Headers([(name, value)])._list[0]
    return form


def _request_headers(forms: HeaderForms, headers: dict[str, str], url: httpx.URL, method: str,
                     content: bytes | None) -> httpx.Headers:
    """``headers`` as httpx.Headers, with the Host and Content-Length httpx would add."""
    triples: list[Any] = []
    for pair in headers.items():
        form = forms.get(pair)
        triples.append(_form(*pair) if form is None else form)
    if "host" not in headers and url.host:
        triples.insert(0, (b"Host", b"host", url.netloc))
    if "content-length" not in headers and "transfer-encoding" not in headers and (
            content or method in ("POST", "PUT", "PATCH")):
        triples.append((b"Content-Length", b"content-length", str(len(content or b"")).encode("ascii")))
    out = httpx.Headers()
    out._list = triples
    return out
