"""How long a connection carries new requests: a maximum age with jitter (pure, no clock).

A connection that lives for the whole process pins it to the address it resolved and the
load-balancer backend it landed on: a DNS change, a backend drained for a deploy, a fleet
scaled out, none of it reaches a process that never reconnects (openai-python #2688:
"clients that start timing out after a day"). So every connection, HTTP/2 or HTTP/1.1, is
retired at its age: from then on new requests go to a new connection while the old one's
streams finish where they are (it is closed once idle), and nothing is cut.

The age is jittered per connection (``max_age x (1 +/- AGE_JITTER)``) so that connections
opened together (a fleet started at once, a burst after a deploy) do not all reconnect in the
same second. Why :data:`MAX_CONNECTION_AGE_S` = 300 s: DNS answers for load balancers are kept
short (AWS's ELB names carry a 60 s TTL) and gRPC servers retire connections on the same
principle (``MAX_CONNECTION_AGE``, gRFC A9), so a change reaches a process within a few
minutes; one reconnect per 5 minutes per connection costs one handshake (1-3 round trips),
which no call notices. It is also our idle keep-alive limit (``http2.pool.KEEPALIVE_EXPIRY_S``):
no connection, busy or idle, outlives 5 minutes (+10 %).
"""

from __future__ import annotations

from typing import Final

__all__ = ["AGE_JITTER", "MAX_CONNECTION_AGE_S", "check_max_age", "retire_at"]

MAX_CONNECTION_AGE_S: Final = 300.0
AGE_JITTER: Final = 0.1  # +/- 10 %


def retire_at(opened: float, max_age_s: float | None, u: float) -> float:
    """When a connection opened at ``opened`` stops taking new requests; ``u`` is a uniform
    draw in [0, 1) (the caller's random source). ``max_age_s`` None: never (infinity)."""
    if max_age_s is None:
        return float("inf")
    return opened + max_age_s * (1.0 + AGE_JITTER * (2.0 * u - 1.0))


def check_max_age(value: object) -> float | None:
    """``max_connection_age`` as given by a user: seconds > 0, or None for no limit; anything
    else is a ValueError that names it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"max_connection_age must be a number of seconds > 0, or None (no limit), "
                         f"got {value!r}")
    return float(value)
