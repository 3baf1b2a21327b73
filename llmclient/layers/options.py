"""Per-call options: what a call may set for itself that the official client has no word for.

:class:`CallOptions` is frozen and checks itself in ``__post_init__``: the client's defaults
(``OpenAI(wire="auto", hedge=True, ...)``) and a call's own (``create(..., wire="auto")``) go
through the same checks, so a bad value raises with the same message at construction, in
``with_options`` and per call, before anything is sent. :func:`split_options` takes them out of
``create(**params)`` (the rest is the request body); the option names are the dataclass's
fields, listed nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..features.admit.priority import check as check_priority
from ..features.hedge import hedge_config
from ..features.image_settings import check_images
from ..pipeline.call import SENTINEL_NAMES, is_given
from ..pipeline.resume import check_early_resume, check_stream_resume
from ..pipeline.watchdog import DEFAULT_STREAM_IDLE_TIMEOUT, check_idle_timeout
from ..wire.codec import Wire

__all__ = ["OPTION_KEYS", "CallOptions", "check_cache_option", "check_prefetch", "check_wire", "split_options"]

WIRES: Final = ("json", "protobuf", "auto")


def check_wire(value: object) -> Wire:
    if value not in WIRES:
        raise ValueError(f"wire must be one of {', '.join(map(repr, WIRES))}, got {value!r}")
    return value


def check_cache_option(value: object) -> object:
    """A call's ``cache=``: None (the client's), True (cache even a sampled answer), False (not
    this call) or ``llmclient.CacheOptions(...)`` (told by name: the cache is not loaded here)."""
    if value is None or isinstance(value, bool) or type(value).__name__ == "CacheOptions":
        return value
    raise ValueError(f"a call's cache must be None, True, False or llmclient.CacheOptions(...), got {value!r}")


def check_prefetch(value: object) -> object:
    """``prefetch=``: None/False (off), True (the speculator's own guesses), ``"prefix"`` (warm
    the prompt's prefix only), a list of follow-up prompts, or a callable that makes them."""
    if value is None or isinstance(value, bool) or value == "prefix" or isinstance(value, (list, tuple)) \
            or callable(value):
        return value
    raise ValueError(f"prefetch must be None, True, False, 'prefix', a list of follow-ups or a callable, "
                     f"got {value!r}")


def _check_auto_cache_key(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"auto_cache_key must be True, False or None, got {value!r}")
    return value


# Each option's check, by field name: it raises ValueError naming the option and what it takes,
# or gives the value as the call keeps it (hedge=True becomes a HedgeConfig).
_CHECKS: Final[dict[str, Callable[[Any], Any]]] = {
    "cache": check_cache_option,
    "prefetch": check_prefetch,
    "images": check_images,
    "wire": check_wire,
    "hedge": hedge_config,
    "stream_idle_timeout": check_idle_timeout,
    "auto_cache_key": _check_auto_cache_key,
    "stream_resume": check_stream_resume,
    "stream_early_resume": check_early_resume,
    "priority": check_priority,
}


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call options the official client does not have; never sent to the server.

    As a client's defaults they come from its constructor (``cache`` excepted: the client's
    ``cache=`` names a store, a call's says whether and how this call uses it)."""

    cache: Any = None  # None | bool | llmclient.CacheOptions
    prefetch: Any = None  # None | bool | "prefix" | list | callable
    images: Any = None  # None | False | target name | preprocess.Target | dict
    wire: Wire = "json"
    hedge: Any = None  # None (no second copy) | llmclient.HedgeConfig (True given: the defaults)
    # A stream without an event this long ends (APITimeoutError); None: no watchdog.
    stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT
    # Derive a prompt_cache_key when the app sets none (features/route/cache_key): True: for any
    # origin; False: never; None: only where the field is documented (api.openai.com).
    auto_cache_key: bool | None = None
    # "continue": a chat stream cut after content is continued from its partial answer
    # (pipeline.resume); "auto": only what needs no opt-in (background resume, re-send).
    stream_resume: str = "auto"
    # A silent background stream resumed beside its connection before the idle limit
    # (pipeline.resume.early_resume_after); False: only at the limit.
    stream_early_resume: bool = True
    # "low": work that may wait (x-llm-priority: low, and vLLM's body field where the client has
    # priority_field=True: features/admit/priority); "normal": not low; None: as the headers say.
    priority: str | None = None

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            value = getattr(self, name)
            checked = check(value)
            if checked is not value:
                object.__setattr__(self, name, checked)

    def replace(self, **changes: Any) -> CallOptions:
        """A copy with ``changes`` (checked as the constructor checks)."""
        return dataclasses.replace(self, **changes)


OPTION_KEYS: Final = frozenset(f.name for f in dataclasses.fields(CallOptions))
assert frozenset(_CHECKS) == OPTION_KEYS, "every call option has its check"


def split_options(params: dict[str, Any], defaults: CallOptions) -> tuple[dict[str, Any], CallOptions]:
    """Take llmclient's own options out of ``create(**params)``; drop NOT_GIVEN values.

    The body is ``params`` less the options and less every argument left unset (ours or the
    official client's sentinels); the options are ``defaults`` with the call's own given ones."""
    names = SENTINEL_NAMES
    body = {k: v for k, v in params.items() if type(v).__name__ not in names and k not in OPTION_KEYS}
    if not OPTION_KEYS.intersection(params):
        return body, defaults
    given = {key: params[key] for key in OPTION_KEYS.intersection(params) if is_given(params[key])}
    return body, dataclasses.replace(defaults, **given) if given else defaults
