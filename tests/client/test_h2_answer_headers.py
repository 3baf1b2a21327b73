"""An HTTP/2 answer's headers (transport/http2/common.AnswerHeaders) read exactly as
httpx.Headers made from the same pairs reads, before and after changes (pure, no sockets)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llmclient.transport.http2.common import AnswerHeaders, response_headers

PAIRS = [(b":status", b"200"), (b"Content-Type", b"application/json"), (b"x-a", b"1"), (b"X-A", b"2"),
         (b"server-timing", b"total;dur=1.5"), (b"request-id", b"req_1")]
NAMES = ["content-type", "Content-Type", "x-a", "X-A", "server-timing", "request-id", "missing", "\u00fc"]


def _pair() -> tuple[httpx.Headers, httpx.Headers]:
    ours = response_headers(PAIRS)
    assert isinstance(ours, AnswerHeaders)
    return ours, httpx.Headers([(n, v) for n, v in PAIRS if not n.startswith(b":")])


def _read(headers: httpx.Headers, key: Any) -> Any:
    try:
        return ("get", headers.get(key), headers.get(key, "dflt"), headers[key])
    except Exception as exc:  # the same exception httpx raises (KeyError, UnicodeEncodeError ...)
        return ("raised", type(exc), headers.get(key) if isinstance(exc, KeyError) else None)


def _same(ours: httpx.Headers, theirs: httpx.Headers) -> None:
    for key in NAMES:
        assert _read(ours, key) == _read(theirs, key), key
    assert list(ours.keys()) == list(theirs.keys())
    assert type(ours.keys()) is type(theirs.keys())
    assert list(ours.items()) == list(theirs.items())
    assert list(ours) == list(theirs)
    assert repr(ours) == repr(theirs)
    assert ours == theirs
    assert ours.encoding == theirs.encoding


def test_reads_match_httpx() -> None:
    ours, theirs = _pair()
    _same(ours, theirs)
    assert ours["x-a"] == "1, 2"  # a repeated name: joined, as httpx joins it


@pytest.mark.parametrize("change", [
    lambda h: h.__setitem__("x-a", "3"),
    lambda h: h.__setitem__("new", "v"),
    lambda h: h.__delitem__("x-a"),
    lambda h: h.update({"request-id": "req_2", "other": "o"}),
    lambda h: h.pop("server-timing"),
    lambda h: h.setdefault("late", "x"),
    lambda h: h._list.append((b"appended", b"appended", b"y")),
    lambda h: setattr(h, "_list", [(b"Only", b"only", b"z")]),
])
def test_reads_after_a_change(change: Any) -> None:
    ours, theirs = _pair()
    ours.get("x-a"), ours.keys()  # the index is made before the change
    change(ours)
    change(theirs)
    _same(ours, theirs)
    for name in ("x-a", "new", "request-id", "other", "late", "appended", "only"):
        assert _read(ours, name) == _read(theirs, name), name


def test_non_ascii_values_read_as_httpx_reads_them() -> None:
    pairs = [(b"x-name", "caf\u00e9".encode()), (b"x-latin", b"\xff")]
    ours = response_headers(pairs)
    theirs = httpx.Headers(pairs)
    _same(ours, theirs)
    assert ours.encoding == "iso-8859-1"


def test_bytes_keys_fail_as_they_do_in_httpx() -> None:
    ours, theirs = _pair()
    assert _read(ours, b"x-a") == _read(theirs, b"x-a")


def test_the_response_keeps_them() -> None:
    """httpx.Response(headers=) copies into a plain httpx.Headers: make_response hands its own on."""
    from types import SimpleNamespace

    from llmclient.transport.http2.common import make_response

    response = make_response(SimpleNamespace(headers=PAIRS, id=1), httpx.ByteStream(b"{}"))  # type: ignore[arg-type]
    assert isinstance(response.headers, AnswerHeaders)
    assert response.status_code == 200 and response.http_version == "HTTP/2"
    _same(response.headers, _pair()[1])
