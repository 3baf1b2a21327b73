"""Whether one call may read or write the cache: a pure decision over the request.

By default only deterministic requests are cached (temperature 0 or a seed, one choice);
anything else needs an explicit opt-in (``cache=True`` or ``CacheOptions(force=True)``).
A seed is "mostly deterministic" per OpenAI's docs (reproducible outputs, with
``system_fingerprint``), which is the same promise a cache gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ._key import ENDPOINTS, validate_namespace

__all__ = ["CacheOptions", "CacheSetting", "Decision", "cache_policy", "normalize_options"]


@dataclass(frozen=True)
class CacheOptions:
    """Per-call cache options (``create(..., cache=CacheOptions(...))``).

    enabled: False skips the cache entirely for this call.
    force: cache even a non-deterministic request (temperature > 0, n > 1).
    ttl: seconds the stored answer lives (None: the cache's default).
    namespace: a separate key space (e.g. per prompt version), 1-64 chars of [A-Za-z0-9_.-].
    refresh: skip the read, send upstream, store the new answer.
    """

    enabled: bool = True
    force: bool = False
    ttl: float | None = None
    namespace: str | None = None
    refresh: bool = False

    def __post_init__(self) -> None:
        if self.ttl is not None and not self.ttl > 0:
            raise ValueError(f"CacheOptions.ttl must be a positive number of seconds, got {self.ttl!r}")
        validate_namespace(self.namespace)


_DEFAULT = CacheOptions()
_FORCE = CacheOptions(force=True)
_OFF = CacheOptions(enabled=False)

CacheSetting = bool | CacheOptions | None


class Decision(NamedTuple):
    """What the cache does for one call. ``read``/``write`` are both False when bypassed.

    A NamedTuple rather than a frozen dataclass: it is built on every call's hot path.
    """

    endpoint: str | None
    read: bool
    write: bool
    reason: str
    ttl: float | None = None
    namespace: str | None = None


def normalize_options(setting: Any) -> CacheOptions:
    """None -> defaults (deterministic only), True -> force, False -> disabled."""
    if setting is None:
        return _DEFAULT
    if setting is True:
        return _FORCE
    if setting is False:
        return _OFF
    if isinstance(setting, CacheOptions):
        return setting
    raise TypeError(
        f"cache= must be None, True, False or CacheOptions, got {type(setting).__name__}"
    )


def _is_deterministic(endpoint: str, body: Mapping[str, Any]) -> tuple[bool, str]:
    if endpoint == "embeddings":
        return True, "embeddings are deterministic"
    if endpoint == "responses" and body.get("background"):
        return False, "a background response is polled, not answered"
    n = body.get("n")
    if n not in (None, 1):
        return False, f"n={n!r} asks for several samples"
    if body.get("best_of") not in (None, 1):
        return False, "best_of samples several completions"
    if body.get("seed") is not None:
        return True, "seed given"
    temperature = body.get("temperature")
    if temperature is not None and temperature == 0:
        return True, "temperature 0"
    # The OpenAI default temperature is 1: an absent temperature samples.
    return False, f"temperature={temperature!r} samples"


def cache_policy(
    body: Mapping[str, Any],
    options: Any = None,
    endpoint: str = "chat.completions",
) -> Decision:
    """Decide read/write for one request body; ``options`` is any ``cache=`` value."""
    opts = normalize_options(options)
    namespace = opts.namespace
    if not opts.enabled:
        return Decision(endpoint, False, False, "disabled for this call")
    if endpoint not in ENDPOINTS.values():
        return Decision(endpoint, False, False, f"endpoint {endpoint!r} is not cached")
    deterministic, why = _is_deterministic(endpoint, body)
    if not deterministic and not opts.force:
        return Decision(endpoint, False, False, why + " (pass cache=True to cache anyway)")
    reason = why if deterministic else "forced: " + why
    if opts.refresh:
        return Decision(endpoint, False, True, "refresh: " + reason, opts.ttl, namespace)
    return Decision(endpoint, True, True, reason, opts.ttl, namespace)
