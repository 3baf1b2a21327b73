"""The HTTP/1.1 response parser (llmclient/transport/http1_parser.py), byte by byte, without sockets.

Every valid response is fed whole, at every split point into two pieces, and one byte at a
time: the result must not depend on how TCP cut it. Malformed input fails with a
MalformedResponse (or ConnectionLost at a premature end) that names what was wrong.
"""

from __future__ import annotations

import httpx
import pytest

from llmclient.transport.http1_parser import (
    MAX_CHUNK_LINE,
    MAX_HEAD,
    MAX_HEADERS,
    ConnectionLost,
    H1Error,
    MalformedResponse,
    ResponseParser,
    request_bytes,
)


def feed(pieces: list[bytes], no_body: bool = False, eof: bool = False) -> ResponseParser:
    parser = ResponseParser(no_body=no_body)
    for piece in pieces:
        parser.receive(piece)
    if eof:
        parser.eof()
    return parser


def splits(raw: bytes) -> list[list[bytes]]:
    """Whole; every two-piece split; one byte at a time."""
    out = [[raw]]
    out += [[raw[:i], raw[i:]] for i in range(1, len(raw))]
    out.append([raw[i:i + 1] for i in range(len(raw))])
    return out


def body(parser: ResponseParser) -> bytes:
    return b"".join(parser.body)


CONTENT_LENGTH = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
                  b"X-Request-ID: abc\r\n\r\n{\"a\": \"bc\"}")
CHUNKED = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"7\r\ndata: 1\r\n"
           b"A;name=value\r\n0123456789\r\n"
           b"1\r\nx\r\n"
           b"0\r\nX-Trailer: t\r\n\r\n")


@pytest.mark.parametrize("pieces", splits(CONTENT_LENGTH))
def test_content_length_response_is_the_same_at_every_split(pieces: list[bytes]) -> None:
    p = feed(pieces)
    assert p.complete and p.keep_alive and not p.extra
    assert (p.status, p.reason, p.version) == (200, b"OK", b"HTTP/1.1")
    assert p.headers == [(b"content-type", b"application/json"), (b"content-length", b"11"),
                         (b"x-request-id", b"abc")]
    assert body(p) == b'{"a": "bc"}'


@pytest.mark.parametrize("pieces", splits(CHUNKED))
def test_chunked_response_is_the_same_at_every_split(pieces: list[bytes]) -> None:
    p = feed(pieces)
    assert p.complete and p.keep_alive and not p.extra
    assert body(p) == b"data: 1\n0123456789x"[:0] + b"data: 1" + b"0123456789" + b"x"
    assert p.received == 18


def test_head_done_before_the_body_arrives_and_body_is_handed_out_as_it_comes() -> None:
    p = ResponseParser()
    p.receive(CHUNKED[:CHUNKED.index(b"\r\n\r\n") + 4])
    assert p.head_done and not p.complete and p.body == []
    p.receive(b"7\r\ndata: 1\r\n")
    assert p.body == [b"data: 1"]
    p.body = []
    p.receive(b"0\r\n\r\n")
    assert p.complete and p.body == []


def test_interim_1xx_responses_are_skipped() -> None:
    raw = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
           + CONTENT_LENGTH)
    for pieces in splits(raw)[::7]:
        p = feed(pieces)
        assert p.status == 200 and body(p) == b'{"a": "bc"}' and p.complete


def test_101_is_refused() -> None:
    with pytest.raises(MalformedResponse, match="101"):
        feed([b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"])


def test_too_many_interim_responses_fail() -> None:
    with pytest.raises(MalformedResponse, match="interim"):
        feed([b"HTTP/1.1 103 Early Hints\r\n\r\n" * 40])


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses_complete_at_the_head(status: int) -> None:
    p = feed([b"HTTP/1.1 %d X\r\nContent-Length: 99\r\n\r\n" % status])
    assert p.complete and p.keep_alive and body(p) == b""


def test_head_request_response_has_no_body_even_with_content_length() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"], no_body=True)
    assert p.complete and body(p) == b""


def test_empty_body_with_content_length_zero() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
    assert p.complete and p.keep_alive


def test_body_until_close_ends_at_eof_and_is_not_kept_alive() -> None:
    for pieces in splits(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello world"):
        p = feed(pieces)
        assert not p.complete and not p.keep_alive
        p.eof()
        assert p.complete and body(p) == b"hello world"


def test_transfer_encoding_other_than_chunked_reads_until_close() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc"], eof=True)
    assert p.complete and not p.keep_alive and body(p) == b"abc"


def test_transfer_encoding_wins_over_content_length_and_the_connection_closes_after() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5\r\nhello\r\n0\r\n\r\n"])
    assert p.complete and body(p) == b"hello" and not p.keep_alive


@pytest.mark.parametrize("head, keep", [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
])
def test_keep_alive_follows_the_connection_header_and_version(head: bytes, keep: bool) -> None:
    p = feed([head])
    assert p.complete and p.keep_alive is keep


def test_bytes_after_the_response_are_kept_as_extra() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE"])
    assert p.complete and body(p) == b"ok" and p.extra == b"GARBAGE"
    p.receive(b"more")
    assert p.extra == b"GARBAGEmore"


def test_bare_lf_line_endings_are_accepted() -> None:
    p = feed([b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"])
    assert p.complete and body(p) == b"ok" and p.headers == [(b"content-length", b"2")]


def test_repeated_equal_content_lengths_are_one() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok"])
    assert p.complete and body(p) == b"ok"


def test_status_line_without_reason() -> None:
    p = feed([b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"])
    assert p.status == 200 and p.reason == b""


def test_chunk_extensions_and_whitespace_and_uppercase_hex() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"A ; ext=1 ; other\r\n0123456789\r\n0\r\n\r\n"])
    assert body(p) == b"0123456789" and p.complete


# -- malformed input: a clear error, never a hang or a wrong body -----------------------------


@pytest.mark.parametrize("raw, match", [
    (b"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP/1.x status line"),
    (b"\x00\x00\x12\x04\x00\x00\x00\x00\x00", "not an HTTP/1.x status line"),
    (b"HTTP/2 200\r\n\r\n", "not an HTTP/1.x status line"),
    (b"HTTP/1.1 20 OK\r\n\r\n", "bad status line"),
    (b"HTTP/1.1 abc OK\r\n\r\n", "bad status line"),
    (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "bad header line"),
    (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "bad header line"),
    (b"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", "bad header line"),
    (b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", "obsolete line folding"),
    (b"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", "bare CR"),
    (b"HTTP/1.1 200 OK\r\nA: b\x01c\r\n\r\n", "control character"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "conflicting Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n", "bad chunk-size line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "bad chunk-size line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", "bad chunk-size line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", "bad chunk-size line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "not followed by CRLF"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", "bad trailer"),
])
def test_malformed_responses_fail_naming_the_fault(raw: bytes, match: str) -> None:
    with pytest.raises(MalformedResponse, match=match) as info:
        feed([raw])
    assert isinstance(info.value, httpx.RemoteProtocolError)  # an httpx transport error
    assert info.value.unprocessed is False
    with pytest.raises(MalformedResponse, match=match):  # the same one byte at a time
        feed([raw[i:i + 1] for i in range(len(raw))])


def test_garbage_fails_at_its_first_bytes_not_after_the_head_limit() -> None:
    p = ResponseParser()
    with pytest.raises(MalformedResponse):
        p.receive(b"<htm")


def test_a_head_over_the_limit_fails_without_its_end() -> None:
    p = ResponseParser()
    p.receive(b"HTTP/1.1 200 OK\r\n")
    with pytest.raises(MalformedResponse, match="head over"):
        for _ in range(MAX_HEAD // 1000 + 2):
            p.receive(b"X-Big: " + b"a" * 990 + b"\r\n")


def test_too_many_header_fields_fail() -> None:
    raw = b"HTTP/1.1 200 OK\r\n" + b"A: b\r\n" * (MAX_HEADERS + 1) + b"\r\n"
    with pytest.raises(MalformedResponse, match="header fields"):
        feed([raw])


def test_a_chunk_size_line_over_the_limit_fails_without_its_end() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"])
    with pytest.raises(MalformedResponse, match="chunk-size line too long"):
        p.receive(b"1;" + b"e" * MAX_CHUNK_LINE)


def test_a_huge_chunk_size_is_streamed_not_buffered() -> None:
    p = feed([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n"])
    p.receive(b"x" * 1000)
    assert body(p) == b"x" * 1000 and not p.complete


@pytest.mark.parametrize("raw, match", [
    (b"", "without sending a response"),
    (b"HTTP/1.1 200 OK\r\nContent-", "inside the response head"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "after 3 of 10 body bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "inside a chunked body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n", "inside a chunked body"),
])
def test_an_early_end_is_connection_lost_naming_where(raw: bytes, match: str) -> None:
    p = feed([raw])
    with pytest.raises(ConnectionLost, match=match) as info:
        p.eof()
    assert isinstance(info.value, H1Error) and not p.keep_alive


# -- the request side ---------------------------------------------------------------------


def test_request_bytes_origin_form_and_absolute_form() -> None:
    req = httpx.Request("POST", "http://example.com:8080/v1/chat?x=1", content=b"{}",
                        headers={"authorization": "Bearer k"})
    head = request_bytes(req)
    assert head.startswith(b"POST /v1/chat?x=1 HTTP/1.1\r\n") and head.endswith(b"\r\n\r\n")
    assert b"\r\nHost: example.com:8080\r\n" in head and b"\r\nContent-Length: 2\r\n" in head
    proxied = request_bytes(req, b"http://example.com:8080/v1/chat?x=1", [(b"proxy-authorization", b"Basic x")])
    assert proxied.startswith(b"POST http://example.com:8080/v1/chat?x=1 HTTP/1.1\r\n")
    assert b"\r\nproxy-authorization: Basic x\r\n\r\n" in proxied


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\0b"])
def test_request_header_injection_is_refused(value: str) -> None:
    req = httpx.Request("GET", "http://example.com/", headers={"x-a": "ok"})
    req.headers["x-b"] = value
    with pytest.raises(httpx.LocalProtocolError):
        request_bytes(req)
