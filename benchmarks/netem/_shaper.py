"""Pure model of one direction of a TCP connection over an emulated path.

No sockets and no clocks: the caller passes `now` and gets back absolute due times, so the
model is tested with a virtual clock and the forwarder only has to write bytes when due.

Model, per direction:
- Bandwidth: a token bucket in GCRA form (ITU-T I.371): each piece of n bytes advances the
  theoretical arrival time by n*8/rate and leaves when at most `burst_bytes` are ahead of
  it. With burst 0 this is a plain serialization queue: a burst, or an upload, drains at
  exactly `rate`.
- Delay: the one-way delay (RTT/2) plus a uniform jitter in [-jitter, +jitter] drawn once
  per chunk read from the socket. A due time is never earlier than the previous one, so
  jitter never reorders bytes of a connection (TCP delivers in order anyway).
- Loss: TCP hides loss from the application as delay. Each MSS-sized segment is lost with
  probability p; the lost segment arrives one retransmission timeout later, max(200 ms, RTT)
  (Linux TCP_RTO_MIN; RFC 6298 §2), and everything behind it waits (head-of-line blocking).
  This is an approximation: real TCP often repairs a loss by fast retransmit (RFC 5681 §3.2)
  in about one RTT and also halves its congestion window; this model charges the RTO and
  keeps the rate, i.e. it is pessimistic per loss and optimistic on throughput afterwards.
- Handshake: the client's first bytes wait one RTT after accept (SYN, SYN-ACK), plus the
  initial RTO of 1 s (RFC 6298 §2.1) for each of SYN and SYN-ACK that the loss draw drops.

Delivered data is split into pieces of at least one MSS and at least ~1 ms of link time,
because the forwarder's timers have millisecond resolution anyway; finer pieces only cost
CPU.
"""

from __future__ import annotations

import random

from ._profiles import NetworkProfile

__all__ = ["DirectionShaper", "handshake_delay_s", "piece_size"]

# RFC 6298 §2.1: the initial RTO before any RTT sample is 1 second.
INITIAL_RTO_S = 1.0
# Target link time per piece: the timer resolution of asyncio/uvloop on Linux (epoll, ms).
PIECE_TIME_S = 0.001


def piece_size(rate_bps: float | None, mss: int) -> int:
    """Bytes per scheduled piece: at least one MSS, about 1 ms of link time."""
    if rate_bps is None:
        return 1 << 30
    per_ms = int(rate_bps * PIECE_TIME_S / 8)
    return max(mss, per_ms - per_ms % mss)


def handshake_delay_s(profile: NetworkProfile, rng: random.Random) -> float:
    """What the TCP three-way handshake costs before the client's first byte may leave."""
    delay = profile.rtt_ms / 1000
    for _ in range(2):  # SYN, then SYN-ACK
        while profile.loss and rng.random() < profile.loss:
            delay += INITIAL_RTO_S
    return delay


class DirectionShaper:
    """Delivery schedule for the bytes of one direction of one connection."""

    def __init__(
        self,
        *,
        one_way_s: float,
        jitter_s: float = 0.0,
        rate_bps: float | None = None,
        burst_bytes: int = 0,
        loss: float = 0.0,
        rto_s: float = 0.2,
        mss: int = 1448,
        rng: random.Random | None = None,
        not_before: float = 0.0,
    ) -> None:
        if one_way_s < 0 or jitter_s < 0 or jitter_s > one_way_s:
            raise ValueError(f"need 0 <= jitter_s <= one_way_s, got {jitter_s}, {one_way_s}")
        if rate_bps is not None and rate_bps <= 0:
            raise ValueError(f"rate_bps must be > 0 or None, got {rate_bps}")
        self.one_way_s = one_way_s
        self.jitter_s = jitter_s
        self.rate_Bps = None if rate_bps is None else rate_bps / 8
        self.tau_s = 0.0 if rate_bps is None else burst_bytes * 8 / rate_bps
        self.loss = loss
        self.rto_s = rto_s
        self.mss = mss
        self.piece = piece_size(rate_bps, mss)
        self.rng = rng or random.Random()
        self.not_before = not_before
        self._tat = 0.0  # GCRA theoretical arrival time of the next byte
        self._last_due = 0.0
        self.segments = 0
        self.lost_segments = 0

    @classmethod
    def for_profile(
        cls,
        profile: NetworkProfile,
        *,
        upstream: bool,
        rng: random.Random,
        not_before: float = 0.0,
        shape_bandwidth: bool = True,
    ) -> DirectionShaper:
        """Shaper for the client->server (`upstream=True`) or server->client direction."""
        mbit = profile.up_mbit if upstream else profile.down_mbit
        return cls(
            one_way_s=profile.one_way_ms / 1000,
            jitter_s=profile.jitter_ms / 1000,
            rate_bps=mbit * 1e6 if mbit is not None and shape_bandwidth else None,
            burst_bytes=profile.burst_bytes,
            loss=profile.loss,
            rto_s=profile.rto_ms / 1000,
            mss=profile.mss,
            rng=rng,
            not_before=not_before,
        )

    def schedule(self, now: float, nbytes: int) -> list[tuple[float, int]]:
        """Due times for `nbytes` handed to the link at `now`: [(due, piece_length), ...]."""
        if nbytes <= 0:
            return []
        start = max(now, self.not_before)
        delay = self.one_way_s
        if self.jitter_s:
            delay += self.rng.uniform(-self.jitter_s, self.jitter_s)
        out: list[tuple[float, int]] = []
        for offset in range(0, nbytes, self.piece):
            length = min(self.piece, nbytes - offset)
            due = self._leave_time(start, length) + delay + self._loss_delay(length)
            due = max(due, self._last_due)
            self._last_due = due
            out.append((due, length))
        return out

    def eof_due(self, now: float) -> float:
        """When a FIN sent at `now` arrives: after every byte before it."""
        due = max(max(now, self.not_before) + self.one_way_s, self._last_due)
        self._last_due = due
        return due

    def _leave_time(self, start: float, length: int) -> float:
        """When the last byte of the piece has been serialized onto the link (GCRA)."""
        if self.rate_Bps is None:
            return start
        self._tat = max(self._tat, start) + length / self.rate_Bps
        return max(start, self._tat - self.tau_s)

    def _loss_delay(self, length: int) -> float:
        if not self.loss:
            self.segments += -(-length // self.mss)
            return 0.0
        extra = 0.0
        for _ in range(-(-length // self.mss)):
            self.segments += 1
            # A retransmission can be lost too; each loss costs another RTO (RFC 6298 §5.5
            # doubles it; kept flat here since p is small and doubling rarely matters).
            while self.rng.random() < self.loss:
                self.lost_segments += 1
                extra += self.rto_s
        return extra
