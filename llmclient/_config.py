"""A client's settings, typed, grouped and checked once.

``OpenAI(**options)`` turns its keywords into one frozen :class:`Config` of four groups (who
calls: :class:`Credentials`; where and how: :class:`Connection`; what each call does by default:
:class:`~llmclient.layers.options.CallOptions`; which opt-in features run: :class:`Features`),
plus the official client's own settings that llmclient only passes on (``official``). Each group
checks its fields in ``__post_init__``, so a bad value raises at construction, in
``with_options`` and per call alike, naming the option and what it takes. The keyword names are
the groups' fields (:data:`OPTION_NAMES`); ``with_options`` is :meth:`Config.replace`, and a copy
is the same config with changes. ``_client_options.ClientOptions`` spells the keywords out for
type checkers and editors (``OpenAI(api_kye=...)`` and ``OpenAI(max_retries="three")`` fail
there); a test holds it to the groups.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

import httpx

from ._errors import OpenAIError
from ._keywords import check_keywords
from .features.admit.concurrency import AdaptiveConfig, adaptive_config
from .features.admit.pacer import pacing_mode
from .features.admit.priority import check_field as check_priority_field
from .features.admit.retry_budget import RetryBudget
from .features.admit.retry_budget import check_setting as check_retry_budget
from .features.batch import BatchConfig, batch_config
from .features.route import Replicas
from .layers.calls import to_timeout
from .layers.options import CallOptions
from .pipeline.call import NOT_GIVEN, is_given
from .transport.aging import MAX_CONNECTION_AGE_S, check_max_age

__all__ = ["OPTION_NAMES", "Config", "Connection", "Credentials", "Features", "check_cache_setting"]

DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)  # the official client's default
DEFAULT_MAX_RETRIES: Final = 2
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


def _frozen(value: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(value).__name__}")
    return MappingProxyType(dict(value))


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True, slots=True)
class Credentials:
    """Who the calls run as: the key, the organisation and project headers, and the headers and
    query every request carries (``default_headers``; a None value removes a header)."""

    api_key: str
    organization: str | None = None
    project: str | None = None
    default_headers: Mapping[str, str | None] = field(default_factory=lambda: _EMPTY)
    default_query: Mapping[str, object] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        if not isinstance(self.api_key, str):
            raise TypeError(f"api_key must be a string, got {type(self.api_key).__name__}")
        for name in ("organization", "project"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
        object.__setattr__(self, "default_headers", _frozen(self.default_headers, "default_headers"))
        object.__setattr__(self, "default_query", _frozen(self.default_query, "default_query"))


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the calls go and how: the base URL (or several replicas), timeouts, retries, and the
    connections' settings (HTTP/2, TLS verification, proxy, a caller's own ``http_client``, the
    connections' maximum age)."""

    base_url: httpx.URL | Replicas
    timeout: httpx.Timeout = field(default_factory=lambda: DEFAULT_TIMEOUT)
    max_retries: int = DEFAULT_MAX_RETRIES
    http_client: Any = None
    http2: bool = True
    verify: Any = True  # True, False, a CA bundle path, or an ssl.SSLContext
    proxy: str | httpx.URL | None = None
    warm: bool = False  # open the connection (GET /models) when the client is made
    compress: bool = True  # compress request bodies for servers that read zstd or gzip
    # every connection retired at this age, jittered (seconds; None: never): transport/aging.py
    max_connection_age: float | None = MAX_CONNECTION_AGE_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", check_base_url(self.base_url))
        object.__setattr__(self, "max_connection_age", check_max_age(self.max_connection_age))
        if not isinstance(self.timeout, httpx.Timeout):
            raise TypeError(f"timeout must be a number of seconds, an httpx.Timeout or None, got {self.timeout!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {self.max_retries!r}")
        for name in ("http2", "warm", "compress"):
            _check_bool(name, getattr(self, name))
        if not isinstance(self.verify, (bool, str)) and type(self.verify).__name__ != "SSLContext":
            raise TypeError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, got {self.verify!r}")
        if self.proxy is not None and not isinstance(self.proxy, (str, httpx.URL)):
            raise TypeError(f"proxy must be a URL or None, got {self.proxy!r}")

    @property
    def replicas(self) -> Replicas | None:
        return self.base_url if isinstance(self.base_url, Replicas) else None

    @property
    def url(self) -> httpx.URL:
        """The base URL (the first replica's with several), ending in a slash."""
        if isinstance(self.base_url, Replicas):
            return httpx.URL(self.base_url.replicas[0].url.rstrip("/") + "/")
        return self.base_url


def check_base_url(value: object) -> httpx.URL | Replicas:
    """``base_url`` as the client keeps it: an http(s) URL ending in a slash, or the replicas
    (a list of URLs or ``llmclient.Replica``, or ``llmclient.Replicas``)."""
    if isinstance(value, Replicas):
        return value
    if isinstance(value, (list, tuple)):
        return Replicas(value)
    if not isinstance(value, (str, httpx.URL)):
        raise TypeError(f"base_url must be a URL, a list of URLs or llmclient.Replicas, got {value!r}")
    url = httpx.URL(value)
    # as the official clients' _enforce_trailing_slash: the path (not the query) ends in a slash;
    # a bare origin stays as written (its path is "/")
    path, separator, query = url.raw_path.partition(b"?")
    if not path.endswith(b"/"):
        url = url.copy_with(raw_path=path + b"/" + separator + query)
    if url.scheme not in ("http", "https"):
        raise ValueError(f"base_url must be an http:// or https:// URL, got {str(value)!r}")
    return url


_CACHE_SPECS: Final = "True, 'memory', 'sqlite:///path/to/cache.db', 'redis://host:port/db', a cache backend or a ResponseCache"


def check_cache_setting(value: object) -> object:
    """A client's ``cache=``: None or False (no cache of its own), True (in memory), a spec
    string (``cache/_backends.open_backend`` reads the same three forms), a backend object (with
    ``get``/``set``) or a :class:`~llmclient.cache.ResponseCache`. The store is opened on first
    use; only its form is checked here."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value == "memory" or value.startswith(("sqlite:", "redis://", "rediss://")):
            return value
        raise ValueError(f"cache must be {_CACHE_SPECS}; got {value!r}")
    if type(value).__name__ == "ResponseCache" or (hasattr(value, "get") and hasattr(value, "set")):
        return value
    raise ValueError(f"cache must be {_CACHE_SPECS}; got {value!r}")


@dataclass(frozen=True, slots=True)
class Features:
    """The opt-in features and how they run: the response cache's store, speculation's budget,
    rate-limit pacing and the Redis it shares budgets through, adaptive concurrency, embedding
    batching, vLLM's body priority, and the retry budget per origin (on unless False)."""

    cache: Any = None
    speculation: Any = None  # a SpeculationConfig or a dict of its fields (checked when made)
    pacing: Literal["auto"] | bool = "auto"
    redis: Any = None  # a URL, a redis client, or llmclient's SharedBudget
    concurrency: AdaptiveConfig | None = None
    embedding_batch: BatchConfig | None = None
    priority_field: bool = False
    # None/True: a budget of the client's own (its copies share it); False: none; a RetryBudget:
    # that one (features/admit/retry_budget.py; the buckets are made in layers/setup.py)
    retry_budget: RetryBudget | bool | None = None

    def __post_init__(self) -> None:
        check_cache_setting(self.cache)
        check_retry_budget(self.retry_budget)
        pacing_mode(self.pacing)
        object.__setattr__(self, "concurrency", adaptive_config(self.concurrency))
        object.__setattr__(self, "embedding_batch", batch_config(self.embedding_batch))
        check_priority_field(self.priority_field)


# Each keyword of the constructor, by the group that holds it (a call's ``cache`` is not one:
# the client's ``cache=`` is Features.cache).
_GROUPS: Final = ("credentials", "connection", "calls", "features")
_CLASSES: Final = {"credentials": Credentials, "connection": Connection, "calls": CallOptions, "features": Features}
GROUP_OF: Final[Mapping[str, str]] = MappingProxyType({
    f.name: group for group in _GROUPS for f in dataclasses.fields(_CLASSES[group])
    if not (group == "calls" and f.name == "cache")
})
OPTION_NAMES: Final = frozenset(GROUP_OF)


@dataclass(frozen=True, slots=True)
class Config:
    """A client's whole settings; what ``with_options`` changes and copies share."""

    credentials: Credentials
    connection: Connection
    calls: CallOptions
    features: Features
    official: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # the official client's own settings, for the pass-through

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (constructor keywords), each group checked again."""
        by_group: dict[str, dict[str, Any]] = {}
        official = dict(self.official)
        for name, value in changes.items():
            group = GROUP_OF.get(name)
            if group is None:
                official[name] = value
            else:
                by_group.setdefault(group, {})[name] = value
        groups = {g: dataclasses.replace(getattr(self, g), **kw) for g, kw in by_group.items()}
        return Config(**{g: groups.get(g, getattr(self, g)) for g in _GROUPS}, official=MappingProxyType(official))

    def options(self) -> dict[str, Any]:
        """The constructor keywords that make this config again (``copy()``'s starting point)."""
        out: dict[str, Any] = {name: getattr(getattr(self, group), name) for name, group in GROUP_OF.items()}
        out["default_headers"] = dict(self.credentials.default_headers)
        out["default_query"] = dict(self.credentials.default_query)
        return {**out, **self.official}


def openai_config(options: Mapping[str, Any], official_names: Callable[[], frozenset[str]], where: str) -> Config:
    """The Config of ``OpenAI(**options)``: the official client's environment defaults
    (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``), every
    keyword checked; a keyword neither llmclient's nor the official client's is the official
    TypeError naming the closest real one."""
    unknown = set(options) - OPTION_NAMES
    if unknown:  # only then are the official client's own names read (its signature: openai imported)
        known = official_names()
        if not known.issuperset(unknown):
            check_keywords(f"{where}()", options, OPTION_NAMES | known)
    api_key = options.get("api_key")
    if api_key is None:
        api_key = os.environ.get("OPENAI_API_KEY")
    if api_key is None:
        raise OpenAIError(
            "The api_key client option must be set either by passing api_key to the client "
            "or by setting the OPENAI_API_KEY environment variable"
        )
    base_url = options.get("base_url")
    if base_url is None or not is_given(base_url):
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    organization = options.get("organization")
    project = options.get("project")
    return make_config(
        options,
        credentials=Credentials(
            api_key=api_key,
            organization=organization if organization is not None else os.environ.get("OPENAI_ORG_ID"),
            project=project if project is not None else os.environ.get("OPENAI_PROJECT_ID"),
            default_headers=options.get("default_headers") or _EMPTY,
            default_query=options.get("default_query") or _EMPTY,
        ),
        base_url=base_url,
    )


def make_config(options: Mapping[str, Any], *, credentials: Credentials, base_url: Any) -> Config:
    """The rest of a face's Config from its keywords: the connection, call defaults, features."""
    http_client = options.get("http_client")
    timeout = to_timeout(options.get("timeout", NOT_GIVEN), _http_client_timeout(http_client) or DEFAULT_TIMEOUT)
    connection = Connection(
        base_url=base_url, timeout=timeout, max_retries=options.get("max_retries", DEFAULT_MAX_RETRIES),
        **_given(options, ("http_client", "http2", "verify", "proxy", "warm", "compress", "max_connection_age")),
    )
    calls = CallOptions(**_given(options, [f for f, g in GROUP_OF.items() if g == "calls"]))
    features = Features(**_given(options, [f for f, g in GROUP_OF.items() if g == "features"]))
    official = {k: v for k, v in options.items() if k not in OPTION_NAMES}
    return Config(credentials, connection, calls, features, MappingProxyType(official))


def _given(options: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The keywords of ``names`` the caller gave (an official ``NOT_GIVEN`` is not given)."""
    return {name: options[name] for name in names if name in options and is_given(options[name])}


def _http_client_timeout(http_client: Any) -> httpx.Timeout | None:
    """A caller's http_client's own timeout when it is not httpx's default (the official rule:
    then it is the client's default timeout)."""
    timeout = getattr(http_client, "timeout", None)
    if timeout is None:
        return None
    mine = httpx.Timeout(**timeout.as_dict()) if not isinstance(timeout, httpx.Timeout) else timeout
    return None if mine == httpx.Timeout(5.0) else mine
