"""The keywords of the clients' constructors and ``with_options``, spelled out for type checkers
and editors (PEP 692 ``Unpack``): the faces import this module under ``TYPE_CHECKING`` only, so
``import llmclient`` builds none of these TypedDicts. tests/test_typing.py holds the keys to the
Config's groups (``_config.OPTION_NAMES``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import httpx

from .features.route import Replica, Replicas
from .pipeline.call import NotGiven

if TYPE_CHECKING:
    from .cache import ResponseCache
    from .features.admit.concurrency import AdaptiveConfig
    from .features.admit.retry_budget import RetryBudget
    from .features.batch import BatchConfig
    from .features.hedge import HedgeConfig
    from .features.prefetch import SpeculationConfig

__all__ = ["AnthropicOptions", "ClientOptions", "CopyOptions"]


class ClientOptions(TypedDict, total=False):
    """The keywords of ``OpenAI(...)`` / ``AsyncOpenAI(...)`` and ``with_options(...)``, for
    type checkers and editors (PEP 692). The official client's own come first; llmclient's
    after (README, "What it does")."""

    api_key: str | None
    organization: str | None
    project: str | None
    base_url: str | httpx.URL | Sequence[str | Replica] | Replicas | NotGiven | None
    timeout: float | httpx.Timeout | NotGiven | None
    max_retries: int
    default_headers: Mapping[str, str | None] | None
    default_query: Mapping[str, object] | None
    http_client: httpx.Client | httpx.AsyncClient | Any | None
    # the official client's own, passed on to the calls llmclient does not run itself
    admin_api_key: str | None
    workload_identity: Any
    webhook_secret: str | None
    provider: Any
    data_residency: Any
    websocket_base_url: str | httpx.URL | None
    _strict_response_validation: bool
    _enforce_credentials: bool
    # llmclient's: connections
    http2: bool
    verify: Any
    proxy: str | httpx.URL | None
    warm: bool
    compress: bool
    max_connection_age: float | None
    # llmclient's: what each call does unless it says otherwise
    images: bool | str | Mapping[str, Any] | Any | None
    prefetch: bool | Literal["prefix"] | Sequence[Any] | Any | None
    wire: Literal["json", "protobuf", "auto"]
    hedge: bool | HedgeConfig | None
    stream_idle_timeout: float | None
    auto_cache_key: bool | None
    stream_resume: Literal["auto", "continue"]
    stream_early_resume: bool
    priority: Literal["low", "normal"] | None
    # llmclient's: opt-in features
    cache: bool | str | ResponseCache | Any | None
    speculation: SpeculationConfig | Mapping[str, Any] | None
    pacing: Literal["auto"] | bool
    redis: str | Any | None
    retry_budget: bool | RetryBudget | None
    concurrency: Literal["adaptive"] | bool | AdaptiveConfig | Mapping[str, Any] | None
    embedding_batch: bool | BatchConfig | Mapping[str, Any] | None
    priority_field: bool


class CopyOptions(ClientOptions, total=False):
    """``with_options(...)`` / ``copy(...)``: the constructor's keywords, and the official
    ``set_default_headers`` / ``set_default_query`` (replace rather than merge)."""

    set_default_headers: Mapping[str, str] | None
    set_default_query: Mapping[str, object] | None


class AnthropicOptions(ClientOptions, total=False):
    """``Anthropic(...)`` / ``AsyncAnthropic(...)``: the same, and the official anthropic client's
    ``auth_token`` (sent as ``Authorization: Bearer``)."""

    auth_token: str | None
