"""The HTTP/1.1 response side of the protocol, no I/O (RFC 9112): the parser our connections
(``llmclient/transport/http1.py``) and the proxy's CONNECT (``proxy.py``) feed bytes to.

* :class:`ResponseParser` - ``receive(bytes)`` parses the status line, headers (1xx interim
  responses skipped) and the body framed by Content-Length, chunked transfer-coding or the
  connection's close (RFC 9112 section 6.3); ``eof()`` says the peer closed. Limits: the head
  (status line, headers, trailers) at most :data:`MAX_HEAD` bytes and :data:`MAX_HEADERS`
  fields, a chunk-size line :data:`MAX_CHUNK_LINE`.
* :func:`request_bytes` - a request's head and body as bytes; :func:`make_response` - the
  httpx.Response of a parsed head.
* The errors, typed subclasses of httpx.RemoteProtocolError (:class:`MalformedResponse`,
  :class:`ConnectionLost`, :class:`ClosedBeforeSent`) with ``unprocessed`` as http2 has it:
  True only where the server demonstrably did not read the request.
"""

from __future__ import annotations

import re
from typing import Any, Final

import httpx

__all__ = [
    "MAX_CHUNK_LINE",
    "MAX_HEAD",
    "MAX_HEADERS",
    "ClosedBeforeSent",
    "ConnectionLost",
    "H1Error",
    "MalformedResponse",
    "ResponseParser",
    "make_response",
    "request_bytes",
]

MAX_HEAD: Final = 64 * 1024  # status line + header fields, and separately the trailer section
MAX_HEADERS: Final = 256
MAX_CHUNK_LINE: Final = 1024  # chunk-size + extensions + CRLF
MAX_INTERIM: Final = 32  # 1xx responses before the final one

# header field: token ":" OWS value OWS (RFC 9110 section 5.1, RFC 9112 section 5.1: no
# whitespace between name and colon). obs-fold (a line starting with SP/HTAB) fails the match.
_FIELD = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*")
_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: (.*))?")
_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;.*)?")
# Values may hold HTAB, SP, visible characters and obs-text; never other controls.
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")

_HEAD, _LENGTH, _CHUNK_LINE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _UNTIL_CLOSE, _DONE = range(8)


# -- errors: typed, so that retries read attributes, never text -----------------------------


class H1Error(httpx.RemoteProtocolError):
    """An HTTP/1.1 exchange failed. ``unprocessed`` is True only where the server demonstrably
    did not read the request, so it may be sent again at once."""

    unprocessed: bool = False


class MalformedResponse(H1Error):
    """The server's response broke RFC 9112 (or a limit): the connection is closed."""

    def __init__(self, why: str) -> None:
        super().__init__(f"malformed HTTP/1.1 response: {why}")


class ConnectionLost(H1Error):
    """The connection closed (or broke) before the response ended."""


class ClosedBeforeSent(ConnectionLost):
    """The connection was closed (the server's FIN seen, or the first write refused) before
    any byte of the request was written: the server cannot have read it, so it goes to
    another connection at once (``unprocessed``)."""

    unprocessed = True


# -- the protocol, no I/O -------------------------------------------------------------------


class ResponseParser:
    """One response, bytes in: ``status``/``headers`` once ``head_done``, body pieces in
    ``body`` (the consumer takes them), ``complete`` at its end. Raises :class:`H1Error`.

    ``no_body``: the request was HEAD, or a CONNECT whose 2xx opens a tunnel (RFC 9110
    section 9.3.6), so the head is all there is."""

    __slots__ = (
        "_buf", "_interim", "_mode", "_remaining", "_trailer_bytes", "body", "complete", "extra",
        "head_done", "headers", "keep_alive", "keep_alive_said", "no_body", "reason", "received",
        "status", "version",
    )

    def __init__(self, no_body: bool = False) -> None:
        self.no_body = no_body
        self._buf = b""
        self._mode = _HEAD
        self._remaining = 0
        self._interim = 0
        self._trailer_bytes = 0
        self.head_done = False
        self.complete = False
        self.status = 0
        self.reason = b""
        self.version = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.received = 0  # body bytes, as framed
        self.keep_alive = True
        self.keep_alive_said = False  # Connection or Proxy-Connection: keep-alive, explicitly
        self.extra = b""  # bytes after the end of the response: the connection is not reused

    def receive(self, data: bytes) -> None:
        mode = self._mode
        if mode == _LENGTH and not self._buf:  # the common case: body bytes, no copy
            n = len(data)
            if n <= self._remaining:
                if n:
                    self.body.append(data)
                    self.received += n
                    self._remaining -= n
                    if not self._remaining:
                        self._finish()
                return
        if mode == _DONE:
            self.extra += data
            return
        self._buf = self._buf + data if self._buf else data
        self._advance()

    def eof(self) -> None:
        """The peer closed its side: ends a body read until close, or fails the response."""
        if self.complete:
            return
        if self._mode == _UNTIL_CLOSE:
            self._finish()
            return
        self.keep_alive = False
        if self._mode == _HEAD:
            if self._buf:
                raise ConnectionLost(f"server closed the connection inside the response head "
                                     f"({len(self._buf)} bytes: {self._buf[:40]!r})")
            raise ConnectionLost("Server disconnected without sending a response.")
        if self._mode == _LENGTH:
            raise ConnectionLost(f"server closed the connection after {self.received} of "
                                 f"{self.received + self._remaining} body bytes (Content-Length)")
        raise ConnectionLost(f"server closed the connection inside a chunked body "
                             f"(after {self.received} bytes)")

    # -- parsing ---------------------------------------------------------------------------

    def _advance(self) -> None:
        while self._buf and not self.complete:
            mode = self._mode
            if mode == _HEAD:
                if not self._parse_head():
                    return
            elif mode == _LENGTH:
                self._take_length()
            elif mode == _CHUNK_DATA:
                self._take_chunk_data()
            elif mode == _UNTIL_CLOSE:
                self.body.append(self._buf)
                self.received += len(self._buf)
                self._buf = b""
            elif not self._parse_chunk_framing(mode):
                return
        if self.complete and self._buf:
            self.extra, self._buf = self.extra + self._buf, b""

    def _parse_head(self) -> bool:
        buf = self._buf
        if not buf.startswith(b"HTTP/1."[:len(buf)]):
            raise MalformedResponse(f"not an HTTP/1.x status line: {buf[:40]!r}")
        end, sep = buf.find(b"\r\n\r\n"), 4
        bare = buf.find(b"\n\n")  # RFC 9112 section 2.2: a bare LF may end a line
        if bare >= 0 and (end < 0 or bare < end):
            end, sep = bare, 2
        if end < 0:
            if len(buf) > MAX_HEAD:
                raise MalformedResponse(f"response head over {MAX_HEAD} bytes")
            return False
        if end + sep > MAX_HEAD:
            raise MalformedResponse(f"response head over {MAX_HEAD} bytes")
        head, self._buf = buf[:end], buf[end + sep:]
        if head.count(b"\r") != head.count(b"\r\n"):
            raise MalformedResponse("bare CR in the response head")
        lines = head.split(b"\n")
        if len(lines) > MAX_HEADERS + 1:
            raise MalformedResponse(f"more than {MAX_HEADERS} header fields")
        status_line = lines[0].rstrip(b"\r")
        m = _STATUS.fullmatch(status_line)
        if m is None:
            raise MalformedResponse(f"bad status line {status_line[:80]!r}")
        status = int(m.group(2))
        headers = _parse_fields(lines[1:])
        if 100 <= status < 200:
            return self._interim_response(status)
        self.version = b"HTTP/1." + m.group(1)
        self.status, self.reason, self.headers = status, m.group(3) or b"", headers
        self.head_done = True
        self._frame(headers, m.group(1) == b"0")
        return True

    def _interim_response(self, status: int) -> bool:
        """1xx (RFC 9110 section 15.2): skipped; the final response follows."""
        if status == 101:
            raise MalformedResponse("101 Switching Protocols to a request that asked for no upgrade")
        self._interim += 1
        if self._interim > MAX_INTERIM:
            raise MalformedResponse(f"more than {MAX_INTERIM} interim (1xx) responses")
        return True

    def _frame(self, headers: list[tuple[bytes, bytes]], http10: bool) -> None:
        """How the body is delimited (RFC 9112 section 6.3) and whether the connection stays."""
        lengths: list[bytes] = []
        chunked = False
        te = False
        conn_tokens: list[bytes] = []
        for name, value in headers:
            if name == b"content-length":
                lengths += value.split(b",")
            elif name == b"transfer-encoding":
                te = True
                chunked = value.rsplit(b",", 1)[-1].strip().lower() == b"chunked"
            elif name == b"connection" or name == b"proxy-connection":
                conn_tokens += [t.strip().lower() for t in value.split(b",")]
        if conn_tokens:
            self.keep_alive_said = b"keep-alive" in conn_tokens
        if b"close" in conn_tokens or (http10 and not self.keep_alive_said):
            self.keep_alive = False
        status = self.status
        if self.no_body or status in (204, 304):
            self._finish()
        elif te:
            if lengths:  # a smuggling shape: Transfer-Encoding wins, then close
                self.keep_alive = False
            if chunked:
                self._mode = _CHUNK_LINE
            else:
                self._until_close()
        elif lengths:
            # "5, 5" or repeated equal fields are one length; different ones are not
            length = lengths[0].strip() if len(lengths) == 1 else _one_length(lengths)
            if not length.isdigit() or len(length) > 18:
                raise MalformedResponse(f"bad Content-Length {length[:40]!r}")
            self._remaining = int(length)
            self._mode = _LENGTH
            if not self._remaining:
                self._finish()
        else:
            self._until_close()

    def _until_close(self) -> None:
        self._mode = _UNTIL_CLOSE
        self.keep_alive = False

    def _take_length(self) -> None:
        buf, n = self._buf, self._remaining
        piece, self._buf = (buf, b"") if len(buf) <= n else (buf[:n], buf[n:])
        self.body.append(piece)
        self.received += len(piece)
        self._remaining -= len(piece)
        if not self._remaining:
            self._finish()

    def _take_chunk_data(self) -> None:
        buf, n = self._buf, self._remaining
        piece, self._buf = (buf, b"") if len(buf) <= n else (buf[:n], buf[n:])
        self.body.append(piece)
        self.received += len(piece)
        self._remaining -= len(piece)
        if not self._remaining:
            self._mode = _CHUNK_END

    def _parse_chunk_framing(self, mode: int) -> bool:
        """A chunk-size line, the CRLF after a chunk's data, or a trailer line (RFC 9112
        section 7.1); False when more bytes are needed."""
        buf = self._buf
        nl = buf.find(b"\n")
        if nl < 0:
            limit = MAX_HEAD if mode == _TRAILERS else MAX_CHUNK_LINE
            if len(buf) > limit:
                raise MalformedResponse("chunk-size line too long" if mode == _CHUNK_LINE
                                        else "trailer section too long" if mode == _TRAILERS
                                        else "chunk data not followed by CRLF")
            return False
        line, self._buf = buf[:nl], buf[nl + 1:]
        if line.endswith(b"\r"):
            line = line[:-1]
        if mode == _CHUNK_END:
            if line:
                raise MalformedResponse(f"chunk data not followed by CRLF ({line[:40]!r})")
            self._mode = _CHUNK_LINE
        elif mode == _CHUNK_LINE:
            if nl + 1 > MAX_CHUNK_LINE:
                raise MalformedResponse("chunk-size line too long")
            m = _CHUNK_SIZE.fullmatch(line)
            if m is None:
                raise MalformedResponse(f"bad chunk-size line {line[:40]!r}")
            size = int(m.group(1), 16)
            if size:
                self._remaining, self._mode = size, _CHUNK_DATA
            else:
                self._mode = _TRAILERS
        else:  # trailer fields, ignored (RFC 9110 section 6.5), until the empty line
            self._trailer_bytes += nl + 1
            if self._trailer_bytes > MAX_HEAD:
                raise MalformedResponse("trailer section too long")
            if not line:
                self._finish()
            elif _FIELD.fullmatch(line) is None:
                raise MalformedResponse(f"bad trailer field {line[:40]!r}")
        return True

    def _finish(self) -> None:
        self._mode = _DONE
        self.complete = True


def _one_length(values: list[bytes]) -> bytes:
    distinct = {v.strip() for v in values}
    if len(distinct) != 1:
        raise MalformedResponse(f"conflicting Content-Length values {sorted(distinct)!r}")
    return distinct.pop()


def _parse_fields(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    match = _FIELD.fullmatch
    for line in lines:
        if line.endswith(b"\r"):
            line = line[:-1]
        m = match(line)
        if m is None:
            if line[:1] in (b" ", b"\t"):
                raise MalformedResponse("obsolete line folding in a header field")
            raise MalformedResponse(f"bad header line {line[:60]!r}")
        name, value = m.groups()
        if _BAD_VALUE.search(value) is not None:
            raise MalformedResponse(f"control character in header {name[:40]!r}")
        headers.append((name.lower(), value))
    return headers


def request_bytes(request: httpx.Request, target: bytes | None = None,
                  extra: list[tuple[bytes, bytes]] | None = None) -> bytes:
    """Request line and header section (RFC 9112 sections 3 and 5); ``target`` in absolute
    form for a forward proxy (section 3.2.2), else the origin form."""
    url = request.url
    if target is None:
        target = url.raw_path
    lines = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        lines += (name, b": ", value, b"\r\n")
    if extra:
        for name, value in extra:
            lines += (name, b": ", value, b"\r\n")
    lines.append(b"\r\n")
    head = b"".join(lines)
    # A CR, LF or NUL inside a field would start a header (or a request) of its own: the
    # line ends must be exactly the ones written here.
    crlf = len(lines) // 4 + 1  # the request line, each field, the blank line
    if (head.count(b"\r\n") != crlf or head.count(b"\n") != crlf or head.count(b"\r") != crlf
            or b"\0" in head):
        raise httpx.LocalProtocolError("CR, LF or NUL inside the request line or a header field")
    return head


def make_response(parser: ResponseParser, stream: Any) -> httpx.Response:
    return httpx.Response(
        parser.status,
        headers=parser.headers,
        stream=stream,
        extensions={"http_version": parser.version, "reason_phrase": parser.reason},
    )
