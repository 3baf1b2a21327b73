"""Network profiles as data: what a link between client and server looks like.

A profile is pure data; the shaper (`_shaper.py`) turns it into delivery times and the
forwarder (`_forwarder.py`) applies them to real sockets.
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["PROFILES", "NetworkProfile", "get_profile", "parse_profile"]

# Linux's default TCP MSS over Ethernet (1500-byte MTU minus 20 IP, 20 TCP and 12 bytes of
# timestamp options), the unit in which TCP loses and retransmits data.
DEFAULT_MSS = 1448

# RFC 6298 §2.4 rounds the retransmission timeout up to at least 1 s; Linux uses
# TCP_RTO_MIN = 200 ms, which is what a client on a Linux or Android host meets.
DEFAULT_MIN_RTO_MS = 200.0


@dataclasses.dataclass(frozen=True)
class NetworkProfile:
    """One emulated path.

    `rtt_ms` is the round trip, split evenly between the two directions. `jitter_ms` is the
    half-width of a uniform spread added to each one-way delay (the default shape of Linux
    netem's `delay X Y`); bytes of one connection are never reordered by it. Bandwidths are
    per direction in Mbit/s (10**6 bit/s); None means unshaped. `loss` is the probability
    that one MSS-sized TCP segment is lost; the forwarder models it as the delay TCP turns it
    into (see `_shaper.py`).
    """

    name: str
    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    down_mbit: float | None = None
    up_mbit: float | None = None
    loss: float = 0.0
    burst_bytes: int = 0
    mss: int = DEFAULT_MSS
    min_rto_ms: float = DEFAULT_MIN_RTO_MS
    description: str = ""

    def __post_init__(self) -> None:
        for field in ("rtt_ms", "jitter_ms", "min_rto_ms"):
            value = getattr(self, field)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"profile {self.name!r}: {field} must be >= 0, got {value!r}")
        if self.jitter_ms > self.rtt_ms / 2:
            raise ValueError(
                f"profile {self.name!r}: jitter_ms ({self.jitter_ms}) must not exceed the "
                f"one-way delay ({self.rtt_ms / 2} ms), or a delay would go negative"
            )
        for field in ("down_mbit", "up_mbit"):
            value = getattr(self, field)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise ValueError(
                    f"profile {self.name!r}: {field} must be > 0 or None, got {value!r}"
                )
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"profile {self.name!r}: loss must be in [0, 1), got {self.loss!r}")
        if self.mss <= 0 or self.burst_bytes < 0:
            raise ValueError(f"profile {self.name!r}: mss must be > 0 and burst_bytes >= 0")

    @property
    def one_way_ms(self) -> float:
        return self.rtt_ms / 2

    @property
    def rto_ms(self) -> float:
        """Delay one lost segment costs: max(min RTO, RTT), see `_shaper.py`."""
        return max(self.min_rto_ms, self.rtt_ms)

    @property
    def shaped(self) -> bool:
        return bool(self.rtt_ms or self.jitter_ms or self.loss or self.down_mbit or self.up_mbit)

    def replace(self, **changes: object) -> NetworkProfile:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


PROFILES: dict[str, NetworkProfile] = {
    p.name: p
    for p in (
        NetworkProfile(
            name="loopback",
            description="No shaping: the forwarder only relays bytes (measures its own cost).",
        ),
        NetworkProfile(
            name="lan",
            rtt_ms=1.0,
            down_mbit=1000.0,
            up_mbit=1000.0,
            description="Same data centre or office LAN: ~1 ms RTT, gigabit both ways.",
        ),
        NetworkProfile(
            name="wan",
            rtt_ms=50.0,
            jitter_ms=2.0,
            down_mbit=50.0,
            up_mbit=20.0,
            description=(
                "Broadband client to a cloud region: ~50 ms RTT, 2 ms jitter, "
                "50 Mbit/s down, 20 Mbit/s up (the default)."
            ),
        ),
        NetworkProfile(
            name="mobile",
            rtt_ms=100.0,
            jitter_ms=5.0,
            down_mbit=20.0,
            up_mbit=10.0,
            loss=0.005,
            description=(
                "4G/LTE phone: ~100 ms RTT, 5 ms jitter, 20 Mbit/s down, 10 Mbit/s up, "
                "0.5% segment loss."
            ),
        ),
    )
}


def get_profile(profile: str | NetworkProfile) -> NetworkProfile:
    """Return a named profile (or pass a NetworkProfile through)."""
    if isinstance(profile, NetworkProfile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        names = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown network profile {profile!r}; known: {names}") from None


_SPEC_FIELDS = {
    "rtt": "rtt_ms",
    "jitter": "jitter_ms",
    "down": "down_mbit",
    "up": "up_mbit",
    "loss": "loss",
    "burst": "burst_bytes",
}


def parse_profile(spec: str) -> NetworkProfile:
    """Parse `wan`, or a name with overrides `wan:rtt=80,loss=0.01`, or `rtt=40,down=8,up=8`.

    Keys: rtt and jitter (ms), down and up (Mbit/s, `none` for unshaped), loss (0..1),
    burst (bytes).
    """
    name, _, rest = spec.partition(":")
    if "=" in name:
        name, rest = "loopback", spec
    base = get_profile(name.strip())
    if not rest.strip():
        return base
    changes: dict[str, object] = {}
    for item in rest.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _SPEC_FIELDS:
            known = ", ".join(_SPEC_FIELDS)
            raise ValueError(f"bad profile override {item!r} in {spec!r}; keys: {known}")
        field = _SPEC_FIELDS[key]
        value = value.strip()
        if field == "burst_bytes":
            changes[field] = int(value)
        elif field in ("down_mbit", "up_mbit") and value.lower() == "none":
            changes[field] = None
        else:
            changes[field] = float(value)
    return base.replace(name=spec, **changes)
