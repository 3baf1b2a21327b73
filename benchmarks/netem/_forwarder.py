"""Userspace TCP forwarder that applies a NetworkProfile to every byte that crosses it.

It listens on 127.0.0.1 and relays each accepted connection to the upstream server. It
runs its own event loop (uvloop when installed) in its own thread, so sync benchmark code
uses it with a plain `with`. Each direction of each connection has a `DirectionShaper`
(pure, `_shaper.py`) that says when each piece is due, a queue of pieces, and a writer task
that sleeps until the head is due and then writes everything due. Due times are absolute
(time.monotonic), so a late timer never accumulates: the next wake-up catches up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from ._profiles import NetworkProfile
from ._shaper import DirectionShaper, handshake_delay_s

__all__ = ["Forwarder", "ForwarderStats"]

_READ_SIZE = 256 * 1024
# Bytes a direction may hold in flight before it stops reading from its source, so that
# TCP flow control pushes back on the sender like a real path would (instead of the
# forwarder buffering a whole upload). At least one bandwidth-delay product.
_MIN_WINDOW = 256 * 1024


class ForwarderStats:
    """Counters kept by the forwarder thread; read them after traffic has settled."""

    def __init__(self) -> None:
        self.connections = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.segments = 0
        self.lost_segments = 0
        self.upstream_errors = 0
        # Lateness of writes behind their due time (s), a bounded reservoir for percentiles.
        self.lateness: collections.deque[float] = collections.deque(maxlen=20000)

    def as_dict(self) -> dict[str, Any]:
        late: list[float] = []
        for _ in range(5):  # the forwarder thread may append while we copy
            try:
                late = sorted(self.lateness)
                break
            except RuntimeError:
                continue

        def pct(q: float) -> float | None:
            return round(late[min(len(late) - 1, int(q * len(late)))] * 1000, 3) if late else None

        return {
            "connections": self.connections,
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            "segments": self.segments,
            "lost_segments": self.lost_segments,
            "upstream_errors": self.upstream_errors,
            "write_lateness_ms": {"p50": pct(0.5), "p99": pct(0.99), "n": len(late)},
        }


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # optional: the `bench` extra installs it
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class Forwarder:
    """Relay `listen` -> `upstream` through the profile. Use as a context manager."""

    def __init__(
        self,
        profile: NetworkProfile,
        upstream: tuple[str, int],
        *,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        seed: int | None = None,
        shape_bandwidth: bool = True,
        use_uvloop: bool = True,
    ) -> None:
        self.profile = profile
        self.upstream = upstream
        self.listen = listen
        self.shape_bandwidth = shape_bandwidth
        self.stats = ForwarderStats()
        self._rng = random.Random(seed)
        self._use_uvloop = use_uvloop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._address: tuple[str, int] | None = None
        self._window = max(_MIN_WINDOW, self._bdp_bytes() * 2)

    # -- sync surface -------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        if self._address is None:
            raise RuntimeError("forwarder is not started")
        return self._address

    def start(self) -> Forwarder:
        if self._thread is not None:
            raise RuntimeError("forwarder already started")
        ready: dict[str, Any] = {}
        event = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready, event), name="netem-forwarder", daemon=True
        )
        self._thread.start()
        event.wait()
        if "error" in ready:
            self._thread.join()
            self._thread = None
            raise ready["error"]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._shutdown()))
        thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> Forwarder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- event-loop thread --------------------------------------------------------------
    def _run(self, ready: dict[str, Any], event: threading.Event) -> None:
        loop = _new_loop() if self._use_uvloop else asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._accept, self.listen[0], self.listen[1])
            )
            sock = self._server.sockets[0]
            host, port = sock.getsockname()[:2]
            self._address = (host, port)
        except BaseException as exc:
            ready["error"] = exc
            event.set()
            loop.close()
            return
        event.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _shutdown(self) -> None:
        assert self._server is not None and self._loop is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._loop.stop()

    def _bdp_bytes(self) -> int:
        rates = [r for r in (self.profile.up_mbit, self.profile.down_mbit) if r]
        return int(max(rates, default=0) * 1e6 / 8 * self.profile.rtt_ms / 1000)

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            await self._relay(c_reader, c_writer)
        except asyncio.CancelledError:
            # Shutdown: asyncio's stream server would log a cancelled handler as an error.
            pass

    async def _relay(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        _nodelay(c_writer)
        accepted = time.monotonic()
        handshake = handshake_delay_s(self.profile, self._rng)
        up = DirectionShaper.for_profile(
            self.profile,
            upstream=True,
            rng=self._rng,
            not_before=accepted + handshake,
            shape_bandwidth=self.shape_bandwidth,
        )
        down = DirectionShaper.for_profile(
            self.profile, upstream=False, rng=self._rng, shape_bandwidth=self.shape_bandwidth
        )
        up_pipe = _Pipe(up, self._window, self.stats, upstream=True)
        down_pipe = _Pipe(down, self._window, self.stats, upstream=False)
        parts = [asyncio.ensure_future(up_pipe.read_from(c_reader))]
        u_writer: asyncio.StreamWriter | None = None
        try:
            # The upstream connect happens when the emulated SYN has crossed the path.
            await _sleep_until(accepted + handshake)
            try:
                u_reader, u_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                self.stats.upstream_errors += 1
                return
            _nodelay(u_writer)
            parts += [
                asyncio.ensure_future(up_pipe.write_to(u_writer)),
                asyncio.ensure_future(down_pipe.read_from(u_reader)),
                asyncio.ensure_future(down_pipe.write_to(c_writer)),
            ]
            # A reset on either side ends the whole connection, as it would in TCP.
            await asyncio.wait(parts, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for part in parts:
                part.cancel()
            await asyncio.gather(*parts, return_exceptions=True)
            for writer in (c_writer, u_writer):
                if writer is not None:
                    _abort_or_close(writer)


class _Pipe:
    """One direction: read -> shaper -> due-time queue -> write."""

    def __init__(
        self, shaper: DirectionShaper, window: int, stats: ForwarderStats, *, upstream: bool
    ) -> None:
        self.shaper = shaper
        self.window = window
        self.stats = stats
        self.upstream = upstream
        self.queue: collections.deque[tuple[float, bytes | None]] = collections.deque()
        self.queued = 0
        self.has_data = asyncio.Event()
        self.has_space = asyncio.Event()
        self.has_space.set()

    async def read_from(self, reader: asyncio.StreamReader) -> None:
        # An OSError (reset) propagates and tears the whole connection down.
        while True:
            await self.has_space.wait()
            data = await reader.read(_READ_SIZE)
            now = time.monotonic()
            if not data:
                self.queue.append((self.shaper.eof_due(now), None))
                self.has_data.set()
                return
            self._enqueue(now, data)

    def _enqueue(self, now: float, data: bytes) -> None:
        segments, lost = self.shaper.segments, self.shaper.lost_segments
        view = memoryview(data)
        offset = 0
        for due, length in self.shaper.schedule(now, len(data)):
            self.queue.append((due, bytes(view[offset : offset + length])))
            offset += length
        self.stats.segments += self.shaper.segments - segments
        self.stats.lost_segments += self.shaper.lost_segments - lost
        self.queued += len(data)
        if self.upstream:
            self.stats.bytes_up += len(data)
        else:
            self.stats.bytes_down += len(data)
        if self.queued >= self.window:
            self.has_space.clear()
        self.has_data.set()

    async def write_to(self, writer: asyncio.StreamWriter) -> None:
        while True:
            if not self.queue:
                self.has_data.clear()
                await self.has_data.wait()
                continue
            wait = self.queue[0][0] - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            now = time.monotonic()
            self.stats.lateness.append(now - self.queue[0][0])
            while self.queue and self.queue[0][0] <= now:
                _, data = self.queue.popleft()
                if data is None:
                    await writer.drain()
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                self.queued -= len(data)
            if self.queued < self.window:
                self.has_space.set()
            await writer.drain()


async def _sleep_until(deadline: float) -> None:
    while (wait := deadline - time.monotonic()) > 0:
        await asyncio.sleep(wait)


def _nodelay(writer: asyncio.StreamWriter) -> None:
    # Nagle would hold small pieces back by up to an RTT of the loopback ACK clock and
    # distort the emulated timing; the emulated path does its own pacing.
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _abort_or_close(writer: asyncio.StreamWriter) -> None:
    close: Callable[[], None] = writer.close
    with contextlib.suppress(Exception):
        close()
