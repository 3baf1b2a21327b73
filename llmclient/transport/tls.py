"""TLS for a socket that two threads use at once: the TLS state in memory, the bytes on a plain
socket.

OpenSSL does not allow one ``SSL`` object to be read and written from two threads at the same
time (the OpenSSL FAQ; CPython's ``ssl.SSLSocket`` adds no lock, and releases the GIL around
both). The sync HTTP/2 driver does exactly that: one thread reads the connection for every
stream while others send their requests. Over an ``SSLSocket`` this broke connections now and
then (``SSLError: internal error`` from a send, ``SSLEOFError`` from a read, which ``recv``
reports as a clean EOF: "Server disconnected without sending a response").

:class:`MemoryTLS` keeps the ``ssl.SSLObject`` between two ``MemoryBIO``\\ s and touches it only
under a lock, for the microseconds it takes to encrypt or decrypt; the ciphertext goes through
the plain socket, which the kernel lets one thread ``recv`` on while another ``send``\\ s. The
plain socket also keeps its timeouts in the kernel, as a cleartext one does (one ``recv`` per
read, no ``poll``).
"""

from __future__ import annotations

import socket
import ssl
import threading
import time

from .reads import READ_SIZE, buffer, recv

__all__ = ["MemoryTLS"]



class MemoryTLS:
    """A TLS client connection over ``raw``, safe for one reader and one writer at a time
    (each side serialises its own callers: the driver has one reader, and a write lock).

    ``recv`` returns plaintext, b"" at the end (the peer's close_notify or the socket closed);
    ``sendall`` encrypts and sends. Errors are the socket's (``BlockingIOError`` when a kernel
    timeout expires) or :class:`ssl.SSLError` (an ``OSError``) for what the peer sent.
    """

    def __init__(self, raw: socket.socket, context: ssl.SSLContext, server_hostname: str) -> None:
        self.raw = raw
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._lock = threading.Lock()  # the SSLObject and its BIOs
        self._send_lock = threading.Lock()  # ciphertext leaves in the order it was made
        self._eof = False

    # -- the handshake (before anyone else has the connection) ---------------------------------

    def handshake(self, timeout: float | None) -> None:
        """Run the TLS handshake over ``raw`` (blocking, within ``timeout`` seconds in all).
        Raises TimeoutError, ssl.SSLError (certificate verification included) or OSError."""
        deadline = None if timeout is None else time.monotonic() + timeout
        raw, tls = self.raw, self._tls
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            out = self._outgoing.read()
            if out:
                raw.settimeout(_left(deadline))
                raw.sendall(out)
            raw.settimeout(_left(deadline))
            data = recv(raw)
            if not data:
                raise ConnectionResetError("the server closed the connection during the TLS handshake")
            self._incoming.write(data)
        out = self._outgoing.read()
        if out:
            raw.settimeout(_left(deadline))
            raw.sendall(out)

    # -- what the handshake chose --------------------------------------------------------------

    def selected_alpn_protocol(self) -> str | None:
        return self._tls.selected_alpn_protocol()

    def version(self) -> str | None:
        return self._tls.version()

    # -- I/O -----------------------------------------------------------------------------------

    def recv(self, size: int = READ_SIZE) -> bytes:
        """Plaintext, waiting (the raw socket's timeout) until a whole record has come; b"" at
        the end of the connection."""
        while True:
            if self._eof:
                return b""
            # Into this thread's buffer (reads.py: no 256 KiB block shrunk per read), and from
            # there into the BIO, which copies it.
            view = buffer()
            got = self.raw.recv_into(view, min(size, READ_SIZE))
            with self._lock:
                if got:
                    self._incoming.write(view[:got])
                else:
                    self._incoming.write_eof()
                plain = self._decrypt()
                # A handshake message to answer (a TLS 1.2 renegotiation; OpenSSL answers a TLS
                # 1.3 KeyUpdate with the next write): sent here unless a writer holds the send
                # lock, in which case it sends it before letting go.
                reply = self._outgoing.pending > 0 and self._send_lock.acquire(blocking=False)
            if reply:
                try:
                    self._drain_and_release()
                except OSError:
                    pass  # the connection is broken: the next read or write says so
            if plain or not got:
                return plain

    def _decrypt(self) -> bytes:
        """Every whole record in the incoming BIO, decrypted (the lock held), through this
        thread's buffer (the raw bytes in it are in the BIO by now)."""
        parts: list[bytes] = []
        view = buffer()
        while True:
            try:
                # With a buffer, read() fills it and returns the count (ssl docs, SSLSocket.read);
                # typeshed types only the bytes-returning form.
                n: int = self._tls.read(READ_SIZE, view)  # type: ignore[assignment]
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the peer's close_notify
                self._eof = True
                break
            except ssl.SSLEOFError:  # cut without close_notify: an end, as SSLSocket.recv says
                self._eof = True
                break
            if not n:
                self._eof = True
                break
            parts.append(bytes(view[:n]))
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def sendall(self, data: bytes) -> None:
        """Encrypt ``data`` and send it. A write while the peer renegotiates (TLS 1.2; HTTP/2
        forbids it, RFC 9113 section 9.2.1) would have to wait for the reader: it fails the
        connection instead, with an error that says so."""
        self._send_lock.acquire()
        try:
            with self._lock:
                view = memoryview(data)
                while view:
                    view = view[self._tls.write(view):]
        except ssl.SSLWantReadError as exc:
            self._send_lock.release()
            raise ssl.SSLError("the server renegotiated TLS while we were sending (HTTP/2 forbids "
                               "TLS renegotiation)") from exc
        except BaseException:
            self._send_lock.release()
            raise
        self._drain_and_release()

    def _drain_and_release(self) -> None:
        """With the send lock held: send the outgoing BIO until it is empty, then let go of
        the send lock. The last look and the release happen under the TLS lock, so a reader
        that found bytes to answer either got the send lock or left them to this loop."""
        while True:
            self._lock.acquire()
            out = self._outgoing.read()
            if not out:
                self._send_lock.release()
                self._lock.release()
                return
            self._lock.release()
            try:
                self.raw.sendall(out)
            except BaseException:
                self._send_lock.release()
                raise

    def close(self) -> None:
        self.raw.close()


def _left(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("TLS handshake timed out")
    return left
