"""Socket reads into one reusable buffer per thread, copied out at the size that came.

``sock.recv(256 KiB)`` allocates 256 KiB and shrinks the block to what arrived (usually a few
hundred bytes). glibc's malloc serves a block that size from its heap once its dynamic mmap
threshold has risen past it (the first such block freed raises it, mallopt(3)), and the
shrink leaves a free tail behind every small answer that outlives the read: a heap that only
grows. In issue 46's soak (16 callers, HTTP/2, 3 minutes) RSS grew 1.34 MB/min while the
bytes malloc had in use stayed flat; with the threshold pinned (``MALLOC_MMAP_THRESHOLD_``)
it grew 0.08 MB/min. asyncio's plain ``Protocol`` path reads the same way
(``sock.recv(max_size)``, 256 KiB); a ``BufferedProtocol`` is handed a buffer instead.

So every read goes into this thread's buffer (``recv_into``) and only the bytes that came are
copied out: one allocation of the right size, nothing to shrink. A thread keeps one buffer;
the event loop's thread one for all its connections. Each copy is made before anything else
can run on that thread, so one buffer per thread is enough.
"""

from __future__ import annotations

import functools
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

__all__ = ["READ_SIZE", "BufferedReads", "buffer", "buffered", "receiver", "recv"]

# As much as one read takes: CPython's asyncio reads 256 KiB at a time too (selector_events).
READ_SIZE: Final = 256 * 1024


class _Local(threading.local):
    def __init__(self) -> None:
        self.view = memoryview(bytearray(READ_SIZE))


_local = _Local()


def buffer() -> memoryview:
    """This thread's read buffer (READ_SIZE bytes). Whatever is read into it must be copied out
    before the thread reads again."""
    return _local.view


def recv(sock: socket.socket | ssl.SSLSocket, size: int = READ_SIZE) -> bytes:
    """``sock.recv(size)`` (at most READ_SIZE), without a block to shrink: b"" at the end."""
    view = _local.view
    n = sock.recv_into(view, min(size, READ_SIZE))
    return bytes(view[:n]) if n else b""


class _Receivable(Protocol):
    def recv(self, size: int = ...) -> bytes: ...


def receiver(sock: Any) -> Callable[[], bytes]:
    """One read of ``sock`` as a call: :func:`recv` for a socket (plain or ``ssl.SSLSocket``),
    the object's own ``recv`` for a TLS object of ours (``MemoryTLS`` reads the same way)."""
    if isinstance(sock, socket.socket):  # ssl.SSLSocket is one too
        return functools.partial(recv, sock)
    own: _Receivable = sock
    return functools.partial(own.recv, READ_SIZE)


class BufferedReads:
    """A protocol's reads through this thread's buffer: asyncio (and uvloop) ``recv_into`` it,
    and :meth:`buffer_updated` hands a copy of what came to the protocol's ``data_received``,
    which a subclass defines as a plain ``asyncio.Protocol`` would. The event loop reads this
    way only into an ``asyncio.BufferedProtocol``: make the instances from :func:`buffered`."""

    def get_buffer(self, sizehint: int) -> memoryview:
        return _local.view

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(_local.view[:nbytes]))

    def data_received(self, data: bytes) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define data_received")


_T = TypeVar("_T", bound=BufferedReads)


@functools.cache
def buffered(cls: type[_T]) -> type[_T]:
    """``cls`` (a :class:`BufferedReads`) with ``asyncio.BufferedProtocol`` among its bases, so
    the event loop reads into its buffer (asyncio tells the kinds apart by ``isinstance``). Made
    on first use: asyncio loads with the async client, not at ``import llmclient``."""
    import asyncio  # heavy: the async client loads it on first use, not `import llmclient`

    made = type(cls.__name__, (cls, asyncio.BufferedProtocol), {"__module__": cls.__module__,
                                                                 "__qualname__": cls.__qualname__})
    return made
