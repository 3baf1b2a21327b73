"""When to ping a silent WebSocket, and when a ping unanswered means the peer is gone (pure).

A socket that carries nothing for a while (the app runs a tool between two turns, the model
thinks before its first token) is closed by whatever sits in between: nginx's
``proxy_read_timeout`` (60 s by default), a load balancer's idle timeout (AWS ALB 60 s), a NAT
that forgets the flow. A ping after ``interval`` seconds of silence keeps them open (the pong
comes back the same way), and a pong that does not come within ``timeout`` seconds says the
peer or the path is dead, well before TCP would tell. The official client's socket pings every
20 s and waits 20 s for the pong (``websockets``' defaults); the same figures here.

Any byte received counts as life (a pong, a message, a close). Times are the caller's clock
(seconds, monotonic); no clock is read here.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

__all__ = ["PING_INTERVAL_S", "PING_TIMEOUT_S", "Heartbeat"]

# websockets' own defaults (ping_interval=20, ping_timeout=20), which the official client keeps.
PING_INTERVAL_S = 20.0
PING_TIMEOUT_S = 20.0


@dataclass
class Heartbeat:
    """``interval``: seconds of silence before a ping (None: never ping); ``timeout``: seconds a
    ping may go unanswered, with nothing else received either (None: wait for ever)."""

    interval: float | None = PING_INTERVAL_S
    timeout: float | None = PING_TIMEOUT_S
    last_received: float = 0.0
    ping_sent_at: float | None = None  # the ping in flight, if any
    _payload: bytes = field(default=b"", repr=False)

    def start(self, now: float) -> None:
        self.last_received = now
        self.ping_sent_at = None

    def received(self, now: float) -> None:
        """Bytes came in: the peer is alive, and a ping in flight is answered by them too."""
        self.last_received = now
        self.ping_sent_at = None

    def pong(self, payload: bytes, now: float) -> None:
        self.received(now)

    def due(self, now: float) -> bool:
        """Whether to send a ping now."""
        return (self.interval is not None and self.ping_sent_at is None
                and now - self.last_received >= self.interval)

    def ping(self, now: float) -> bytes:
        """Note a ping sent now; its payload (unique per ping, RFC 6455 section 5.5.2 lets any)."""
        self.ping_sent_at = now
        self._payload = struct.pack("!d", now) + os.urandom(4)
        return self._payload

    def dead(self, now: float) -> bool:
        """A ping went out ``timeout`` seconds ago and nothing came back since."""
        return (self.timeout is not None and self.ping_sent_at is not None
                and now - self.ping_sent_at >= self.timeout)

    def poll_in(self, now: float) -> float | None:
        """Seconds until a poller that only sees input when it looks should look again: with a
        ping in flight, within ``interval`` too (its pong makes the next ping due then)."""
        wait = self.next_check(now)
        if self.ping_sent_at is not None and self.interval is not None:
            return self.interval if wait is None else min(wait, self.interval)
        return wait

    def next_check(self, now: float) -> float | None:
        """Seconds until :meth:`due` or :meth:`dead` can change (None: never)."""
        if self.ping_sent_at is not None:
            if self.timeout is None:
                return None
            return max(0.0, self.ping_sent_at + self.timeout - now)
        if self.interval is None:
            return None
        return max(0.0, self.last_received + self.interval - now)
