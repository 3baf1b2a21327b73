"""Which replica serves a call: the policies (pure functions of the fleet's state) and the
:class:`Router` that holds that state for one client (and its ``with_options`` copies).

Policies:

* ``prefix`` (the default): the replica already holding at least ``MATCH_RATIO`` of the
  prompt's blocks (``affinity``; SGLang's cache-aware router uses the same kind of threshold),
  else the call's place on the ring (``ring``), both under the bounded-load rule; weights are
  scaled down for a replica slower than the fleet's median (latency-aware), so a slow
  replica's bound shrinks and its keys spill over;
* ``least_loaded``: the fewest in-flight calls per unit of weight, then the lowest TTFT;
* ``round_robin``: what a plain load balancer does (for comparison).

Whatever the policy, the plan is an order over every replica: the choice first, then the other
healthy ones, a replica whose cooldown is over (half-open: it takes one probe call) and last the
ejected ones, soonest back first. A call fails over along that order.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .affinity import PrefixIndex
from .health import Ejection, Health, on_failure, on_success, state
from .key import RouteKey, route_key
from .ring import Ring, bound, pick_bounded
from .shared import SharedEjections, merge

__all__ = ["DEFAULT_BALANCE", "HOLDER_SLACK", "POLICIES", "Policy", "Replica", "Replicas", "Router", "holder_keeps",
           "model_labels", "model_mismatch", "plan"]

Policy = Literal["prefix", "least_loaded", "round_robin"]
POLICIES: tuple[str, ...] = ("prefix", "least_loaded", "round_robin")
DEFAULT_BALANCE = 1.25  # c: a replica takes at most 1.25x its share of the in-flight calls
MIN_SPEED = 0.1         # a slow replica keeps at least a tenth of its weight
MATCH_RATIO = 0.5       # a replica holding half the prompt or more keeps it (if not overloaded)
# Calls beyond its bound that the replica holding a call's prefix still takes (per unit of its
# speed-scaled weight, relative to the fleet's mean; rounded down, so a slow replica gets none).
# A continuous-batching server adds a few sequences to its batch at almost no cost, while a
# spill recomputes the whole prefix elsewhere: with a handful of calls in flight, c = 1.25
# alone moved a quarter of the conversations' turns off their replica (benchmarks, replicas).
HOLDER_SLACK = 4


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica: its base URL (``http(s)://host:port/v1``), its weight (its share of the
    load, relative to the others) and, where it differs from the client's, its API key."""

    url: str
    weight: float = 1.0
    api_key: str | None = None
    # With hedge=...: how long a call whose first choice is this replica waits for its first
    # token before a copy starts on the next replica; None: learned from this replica's own
    # calls (the hedge's quantile of them), or the HedgeConfig's after_ms when that is set.
    hedge_after_ms: float | None = None

    def __repr__(self) -> str:  # never the key
        key = ", api_key=..." if self.api_key else ""
        after = f", hedge_after_ms={self.hedge_after_ms}" if self.hedge_after_ms is not None else ""
        return f"Replica({self.url!r}, weight={self.weight}{key}{after})"


def _normal(url: str) -> str:
    return url.strip().rstrip("/")


class Replicas:
    """Several replicas of one model behind one client: ``OpenAI(base_url=Replicas([...]))``,
    or simply ``OpenAI(base_url=[url1, url2])`` for the defaults.

    ``policy``: ``"prefix"`` (default), ``"least_loaded"`` or ``"round_robin"``; ``balance``:
    the bounded-load factor c (>= 1); ``ejection``: when a failing replica is taken out and for
    how long; ``redis``: a Redis URL (or a ``redis.Redis`` client) through which every process
    with the same list shares its ejections (``shared``; the ``redis`` extra). Raises
    ValueError at once for an empty list, a duplicate, a URL that is not http(s), a weight that
    is not positive, an unknown policy.
    """

    def __init__(self, replicas: Sequence[str | Replica], *, policy: Policy = "prefix",
                 balance: float = DEFAULT_BALANCE, ejection: Ejection | None = None,
                 redis: Any = None) -> None:
        if isinstance(replicas, (str, bytes)) or not replicas:
            raise ValueError("base_url: give one URL, or a non-empty list of replica URLs")
        items = [r if isinstance(r, Replica) else Replica(str(r)) for r in replicas]
        seen: dict[str, int] = {}
        for n, item in enumerate(items):
            url = _normal(item.url)
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"replica {n} must be an http:// or https:// URL, got {item.url!r}")
            if not item.weight > 0:
                raise ValueError(f"replica {url}: weight must be positive, got {item.weight!r}")
            if item.hedge_after_ms is not None and not item.hedge_after_ms >= 0:
                raise ValueError(f"replica {url}: hedge_after_ms must be >= 0, got {item.hedge_after_ms!r}")
            if url in seen:
                raise ValueError(f"replica {url} is listed twice (entries {seen[url]} and {n})")
            seen[url] = n
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if not balance >= 1.0:
            raise ValueError(f"balance must be >= 1 (a replica's share of the load), got {balance!r}")
        self.replicas = tuple(Replica(_normal(r.url), float(r.weight), r.api_key, r.hedge_after_ms) for r in items)
        self.policy: Policy = policy
        self.balance = float(balance)
        self.ejection = ejection or Ejection()
        self.redis = redis
        self._router: Router | None = None
        self._lock = threading.Lock()

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]

    def router(self) -> Router:
        """This fleet's router, made once: every client made from this object (``with_options``
        copies too) shares its view of the replicas' load and health."""
        with self._lock:
            if self._router is None:
                self._router = Router(self)
            return self._router

    def __repr__(self) -> str:
        return f"Replicas({list(self.replicas)!r}, policy={self.policy!r}, balance={self.balance})"


def model_labels(entries: Any) -> list[str] | None:
    """The models of a ``GET /models`` answer's ``data``: each its id, or ``id (root)`` where the
    entry names other weights behind the id (vLLM's ``root``: the model a
    ``--served-model-name`` stands for), so two replicas serving one name over different
    weights differ too. None when ``entries`` is not a model list. Pure."""
    if not isinstance(entries, list):
        return None
    labels = []
    for entry in entries:
        if not isinstance(entry, dict) or "id" not in entry:
            return None
        ident, root = str(entry["id"]), entry.get("root")
        labels.append(f"{ident} ({root})" if isinstance(root, str) and root and root != ident else ident)
    return labels


def model_mismatch(served: dict[str, list[str] | None]) -> str | None:
    """What is wrong when replicas list different models (``GET /models`` of each, None where
    the answer was no model list), naming each replica; None when they agree. Pure."""
    lists = {url: frozenset(ids) for url, ids in served.items() if ids is not None}
    if len(set(lists.values())) <= 1:
        return None
    listing = "; ".join(f"{url}: {', '.join(sorted(ids)) or 'none'}" for url, ids in lists.items())
    return f"the replicas serve different models ({listing}): base_url=[...] is for replicas of one model"


def _speeds(health: Sequence[Health], eligible: Sequence[int]) -> dict[int, float]:
    """Per eligible replica, min(1, median TTFT / its TTFT) once two or more have a TTFT."""
    known = sorted(t for i in eligible if (t := health[i].ttft_ms))
    if len(known) < 2:
        return {}
    half = len(known) // 2
    mid = known[half] if len(known) % 2 else (known[half - 1] + known[half]) / 2
    return {i: max(MIN_SPEED, min(1.0, mid / t)) for i in eligible
            if (t := health[i].ttft_ms)}


def holder_keeps(holder: int, eligible: Sequence[int], load: Callable[[int], int],
                 weight: Callable[[int], float], balance: float, slack: int = HOLDER_SLACK) -> bool:
    """Whether the replica holding a call's prefix takes it: its load is below its bounded-load
    bound plus ``slack`` calls scaled by its weight against the eligible replicas' mean weight
    (rounded down). Pure."""
    total_weight = sum(weight(i) for i in eligible)
    mean = total_weight / len(eligible) if eligible else 1.0
    extra = math.floor(slack * weight(holder) / mean) if mean > 0 else 0
    total_load = sum(load(i) for i in eligible)
    return load(holder) < bound(balance, total_load, weight(holder), total_weight) + extra


def plan(policy: Policy, key: RouteKey, health: Sequence[Health], weights: Sequence[float],
         ring: Ring, index: PrefixIndex, turn: int, balance: float, now: float,
         others: Sequence[int] | None = None) -> list[int]:
    """The order in which a call tries the replicas (pure). ``others``: the in-flight calls
    other processes have on each replica (shared through Redis), added to this one's."""
    n = len(health)
    loads = [h.in_flight + (others[i] if others else 0) for i, h in enumerate(health)]
    states = [state(h, now) for h in health]
    eligible = [i for i in range(n) if states[i] == "up"]
    probes = [i for i in range(n) if states[i] == "probe"]
    down = sorted((i for i in range(n) if states[i] == "down"), key=lambda i: health[i].ejected_until)
    if policy == "round_robin":
        ordered = sorted(eligible, key=lambda i: (i - turn) % n)
    elif policy == "least_loaded" or key.ring is None:
        ordered = sorted(eligible, key=lambda i: (loads[i] / weights[i],
                                                  health[i].ttft_ms or 0.0, (i - turn) % n))
    else:
        walk = [i for i in ring.walk(key.ring) if states[i] == "up"]
        speed = _speeds(health, walk)
        ordered = walk
        if walk:
            load = lambda i: loads[i]  # noqa: E731
            weight = lambda i: weights[i] * speed.get(i, 1.0)  # noqa: E731
            holder, depth = index.best(key.blocks, walk)
            first = None
            if holder is not None and depth >= MATCH_RATIO * len(key.blocks):
                # the holder keeps the call unless above its bound plus the slack; else the walk
                walk = [holder] + [i for i in walk if i != holder]
                if holder_keeps(holder, walk, load, weight, balance):
                    first = holder
            if first is None:
                first = pick_bounded(walk, load, weight, balance)
            ordered = [first] + [i for i in walk if i != first]
    return probes[:1] + ordered + probes[1:] + down


class Router:
    """The fleet's state for one :class:`Replicas` (thread-safe: sync clients call from many
    threads): health per replica, the ring, the prefix picture, a turn counter."""

    def __init__(self, spec: Replicas) -> None:
        self.spec = spec
        self.replicas = spec.replicas
        self.health = [Health() for _ in spec.replicas]
        self.weights = [r.weight for r in spec.replicas]
        self.ring = Ring([r.url for r in spec.replicas], self.weights)
        self.index = PrefixIndex(len(spec.replicas))
        self._positions = {r.url: i for i, r in enumerate(spec.replicas)}
        self.shared = (SharedEjections(spec.redis, [r.url for r in spec.replicas], loads=self._own_loads)
                       if spec.redis else None)
        self._turn = 0
        self._lock = threading.Lock()
        self._models: set[str] = set()  # models some replica has answered a call for

    def served_model(self, model: str) -> None:
        """A replica answered a call for ``model`` (2xx)."""
        if model not in self._models:
            with self._lock:
                self._models.add(model)

    def serves(self, model: str) -> bool:
        """Whether some replica has answered a call for ``model``."""
        return model in self._models

    def eject(self, i: int, reason: str) -> None:
        """Take replica ``i`` out now for ``reason`` (its in-flight count untouched): it said it
        has no model that the others serve."""
        with self._lock:
            now = time.monotonic()
            on_failure(self.health[i], reason, now, self.spec.ejection, at_once=True)
            self.index.forget(i)
            if self.shared is not None:
                self.shared.publish(i, self.health[i].ejected_until - now)

    def _own_loads(self) -> list[int]:
        """This process's in-flight calls per replica (what it shares through Redis)."""
        with self._lock:
            return [h.in_flight for h in self.health]

    def position(self, url: str) -> int | None:
        """The index of the replica at ``url`` (None: not one of this fleet's)."""
        return self._positions.get(url.rstrip("/"))

    def plan(self, key: RouteKey, second: bool = False) -> list[int]:
        """The call's order; ``second``: a hedge copy, which starts at the second choice."""
        with self._lock:
            self._turn += 1
            if self.shared is not None:  # what other processes ejected (at most REFRESH_S old)
                now, wall = time.monotonic(), time.time()
                for h, until in zip(self.health, self.shared.view, strict=True):
                    h.ejected_until = merge(h.ejected_until, until, now, wall)
            others = self.shared.others if self.shared is not None else None  # LOAD_REFRESH_S old at most
            order = plan(self.spec.policy, key, self.health, self.weights, self.ring, self.index,
                         self._turn, self.spec.balance, time.monotonic(), others)
        if second and len(order) > 1:
            order = order[1:] + order[:1]
        return order

    def first_choice(self, path: str, body: dict[str, Any] | None, pin: str | None = None) -> Replica:
        """The replica a call's first attempt will go to, as things stand (a peek: nothing is
        taken): what its hedge deadline is learned for (failover before the first token)."""
        pinned = self.position(pin) if pin else None
        if pinned is not None:
            return self.replicas[pinned]
        key = route_key(path, body)
        with self._lock:
            others = self.shared.others if self.shared is not None else None
            order = plan(self.spec.policy, key, self.health, self.weights, self.ring, self.index,
                         self._turn + 1, self.spec.balance, time.monotonic(), others)
        return self.replicas[order[0]]

    def take(self, i: int, blocks: Sequence[int] = ()) -> None:
        """An attempt starts on replica ``i``. Its prompt's blocks are taken as cached there
        from now on (as SGLang's router inserts a prompt into its tree when it routes it): the
        replica computes them within its prefill, and a conversation's next turn may come
        before this one's answer has ended."""
        with self._lock:
            h = self.health[i]
            h.in_flight += 1
            if state(h, time.monotonic()) == "probe":
                h.probing = True
            if blocks:
                self.index.record(i, blocks)

    def done(self, i: int, ttft_ms: float | None, queue_ms: float | None) -> None:
        """The attempt on ``i`` ended well."""
        with self._lock:
            h = self.health[i]
            h.in_flight -= 1
            on_success(h, ttft_ms, queue_ms)

    def failed(self, i: int, reason: str, at_once: bool) -> bool:
        """The attempt on ``i`` failed; True when that ejected the replica."""
        with self._lock:
            h = self.health[i]
            h.in_flight -= 1
            now = time.monotonic()
            ejected = on_failure(h, reason, now, self.spec.ejection, at_once)
            if ejected:
                self.index.forget(i)  # a replica that comes back may have restarted, cache empty
                if self.shared is not None:
                    self.shared.publish(i, h.ejected_until - now)
            return ejected

    def let_go(self, i: int) -> None:
        """The attempt on ``i`` ended saying nothing about its health (a 4xx, a cancelled copy)."""
        with self._lock:
            h = self.health[i]
            h.in_flight -= 1
            h.probing = False

    def stats(self) -> list[dict[str, object]]:
        """Per replica: url, state, in-flight (this process's; ``fleet_in_flight``: with the
        other processes' shared through Redis), TTFT and queue EWMAs, error rate, counts."""
        now = time.monotonic()
        others = self.shared.others if self.shared is not None else [0] * len(self.health)
        with self._lock:
            return [{"url": r.url, "state": state(h, now), "in_flight": h.in_flight, "fleet_in_flight": h.in_flight + o,
                     "ttft_ms": h.ttft_ms, "queue_ms": h.queue_ms, "error_rate": round(h.error_rate, 4),
                     "served": h.served, "failed": h.failed, "last_error": h.last_error}
                    for r, h, o in zip(self.replicas, self.health, others, strict=True)]
