"""transport/reads.py: socket reads into one buffer per thread, copied out at their size (issue
46's soak: ``sock.recv(256 KiB)`` shrunk per read grew glibc's heap 1.34 MB/min).

The reads are checked on real sockets (a socketpair, an asyncio server, TLS through
``MemoryTLS`` in the transport tests); the heap effect in a fresh interpreter on this machine's
glibc, beside ``sock.recv`` as the control, so the test shows the difference it guards.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from llmclient.transport import reads


def test_recv_gives_what_came_at_its_size_and_empty_at_the_end() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"hello")
        assert reads.recv(b) == b"hello"
        big = bytes(range(256)) * 2000  # 512,000 bytes: more than one read
        threading.Thread(target=a.sendall, args=(big,)).start()
        got = bytearray()
        while len(got) < len(big):
            part = reads.recv(b)
            assert 0 < len(part) <= reads.READ_SIZE
            assert type(part) is bytes
            got += part
        assert bytes(got) == big
        a.shutdown(socket.SHUT_WR)
        assert reads.recv(b) == b""


def test_recv_takes_at_most_the_size_asked() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"abcdef")
        assert reads.recv(b, 4) == b"abcd"
        assert reads.recv(b) == b"ef"


def test_each_thread_reads_into_its_own_buffer() -> None:
    mine = reads.buffer()
    theirs: list[memoryview] = []
    t = threading.Thread(target=lambda: theirs.append(reads.buffer()))
    t.start()
    t.join()
    assert mine is reads.buffer()
    assert theirs[0] is not mine and len(theirs[0]) == len(mine) == reads.READ_SIZE


def test_receiver_reads_a_socket_through_the_buffer() -> None:
    a, b = socket.socketpair()
    with a, b:
        read = reads.receiver(b)
        a.sendall(b"xyz")
        assert read() == b"xyz"


class _Collect(reads.BufferedReads):
    def __init__(self, done: asyncio.Future[bytes]) -> None:
        self.parts: list[bytes] = []
        self.done = done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert type(data) is bytes
        self.parts.append(data)

    def eof_received(self) -> None:
        self.done.set_result(b"".join(self.parts))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(exc or ConnectionError("lost"))


def test_a_buffered_protocol_gets_every_byte_through_the_event_loop() -> None:
    payload = bytes(range(256)) * 3000  # 768,000 bytes: several reads into one buffer

    async def main() -> tuple[bytes, object]:
        async def serve(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            w.write(payload)
            await w.drain()
            w.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bytes] = loop.create_future()
        transport, proto = await loop.create_connection(lambda: reads.buffered(_Collect)(done), "127.0.0.1", port)
        try:
            return await asyncio.wait_for(done, 30), proto
        finally:
            transport.close()
            server.close()
            await server.wait_closed()

    got, proto = asyncio.run(main())
    assert got == payload
    # the event loop took the buffered path: the class has asyncio's base, and is still ours
    assert isinstance(proto, asyncio.BufferedProtocol) and isinstance(proto, _Collect)
    assert reads.buffered(_Collect) is reads.buffered(_Collect)
    assert type(proto).__qualname__ == _Collect.__qualname__


def test_a_protocol_that_forgot_data_received_says_so() -> None:
    class Bare(reads.BufferedReads):
        pass

    proto = reads.buffered(Bare)()
    view = proto.get_buffer(-1)
    view[:2] = b"hi"
    with pytest.raises(NotImplementedError, match="Bare must define data_received"):
        proto.buffer_updated(2)


# In a fresh interpreter, 4 threads read small answers from socketpairs (sock.recv as the
# control, or reads.recv), keep most for a while and a few (0.2%) for good, beside other
# short-lived allocations, as a client's answers and frames do; glibc's heap (mallinfo2, all
# arenas) is measured over the second of two equal phases. With sock.recv every kept answer
# can pin a hole as large as a read (+13 to +16 MB here), with reads.recv nothing (+0.3 MB).
_HEAP = textwrap.dedent("""
    import collections, ctypes, random, socket, sys, threading
    from llmclient.transport import reads

    class M(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                    "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    info = ctypes.CDLL(None).mallinfo2
    info.restype = M
    THREADS, ITERS = 4, 5000
    # One large block freed (a big body once, or an import) raises glibc's dynamic mmap
    # threshold past a read's size (mallopt(3)): from then on reads come from the heap.
    del_me = bytes(1 << 20)
    del del_me
    kept, lock, phase_end = [], threading.Lock(), threading.Barrier(THREADS + 1)

    def work(seed):
        rng = random.Random(seed)
        a, b = socket.socketpair()
        read = (lambda: b.recv(reads.READ_SIZE)) if sys.argv[1] == "recv" else (lambda: reads.recv(b))
        live = collections.deque(maxlen=200)
        for _phase in range(2):
            for _ in range(ITERS):
                a.sendall(b"x" * rng.randint(100, 3000))
                answer = read()
                if rng.random() < 0.002:
                    with lock:
                        kept.append(answer)
                else:
                    live.append(answer)
                live.append([None] * rng.randint(70, 1000))
                if rng.random() < 0.3:
                    live.append(bytes(rng.randint(100, 20000)))
            phase_end.wait()

    for seed in range(THREADS):
        threading.Thread(target=work, args=(seed,), daemon=True).start()
    phase_end.wait()
    before = info().arena
    phase_end.wait()
    print((info().arena - before) / 2**20)
""")


def _heap_growth_mb(how: str) -> float:
    out = subprocess.run([sys.executable, "-c", _HEAP, how], capture_output=True, text=True, timeout=120, check=True)
    return float(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc and mallinfo2")
def test_answers_kept_from_reads_do_not_pin_read_sized_holes_in_the_heap() -> None:
    try:
        control = _heap_growth_mb("recv")
    except subprocess.CalledProcessError as exc:
        if "mallinfo2" in exc.stderr:
            pytest.skip("no mallinfo2 (glibc before 2.33, or not glibc)")
        raise
    if control < 5:  # this allocator does not show the pattern: nothing to compare against
        pytest.skip(f"sock.recv grew the heap only {control:.1f} MB here")
    ours = _heap_growth_mb("reads")
    assert ours < control / 4, f"reads.recv grew the heap {ours:.1f} MB (sock.recv: {control:.1f} MB)"
