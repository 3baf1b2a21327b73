"""llmclient: a drop-in OpenAI-compatible client that removes client-side latency.

``from llmclient import OpenAI`` works like ``from openai import OpenAI``; responses also carry
``.trace_id``, ``._request_id`` and ``.timings`` (a :class:`CallRecord`).
"""

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._client import OpenAI, RawResponse, __version__
from ._errors import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientClosedRequestError,
    ConflictError,
    ContentFilterFinishReasonError,
    ContentTooLargeError,
    GatewayTimeoutError,
    HTTPNotImplementedError,
    IncompleteStreamError,
    InternalServerError,
    LengthFinishReasonError,
    MalformedResponseError,
    NotFoundError,
    OpenAIError,
    OverloadedError,
    PaymentRequiredError,
    PermissionDeniedError,
    PreconditionFailedError,
    RateLimitError,
    RequestHeaderFieldsTooLargeError,
    RequestTimeoutError,
    RequestTooLargeError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)
from ._module_client import resource_proxy
from .api.streaming import Stream
from .features.admit.retry_budget import RetryBudget
from .features.route import Ejection, Replica, Replicas
from .layers.options import CallOptions
from .pipeline.call import NOT_GIVEN, Call, NotGiven, Omit, not_given, omit
from .pipeline.partial import PartialAnswer, PartialChoice
from .pipeline.timings import CallRecord
from .pipeline.tracing import TraceContext
from .transport.lanes import aclose_all, close_all
from .wire.codec import Codec, JsonCodec, SSEDecoder, StreamDecoder

if TYPE_CHECKING:  # the lazy names below, for type checkers
    from llmclient.preprocess import ImageError

    from ._anthropic import Anthropic
    from ._anthropic_async import AsyncAnthropic
    from ._azure import AsyncAzureOpenAI, AzureOpenAI
    from ._client_async import AsyncOpenAI
    from ._client_async import AsyncOpenAI as AsyncClient
    from .api._async.streaming import AsyncStream
    from .cache import CacheOptions
    from .features.hedge import HedgeConfig
    from .features.prefetch import PrefetchError, SpeculationConfig
    from .lib._structured import pydantic_function_tool
    from .transport.http_clients import DefaultAsyncHttpxClient, DefaultHttpxClient

Client = OpenAI
LLMClientError = OpenAIError

# Names whose modules cost import time (the async client's layers and streams, Pillow, the
# speculative package, the cache backends):
# imported on first access, so ``import llmclient`` stays light.
_LAZY = {
    "AsyncOpenAI": ("llmclient._client_async", "AsyncOpenAI"),
    "Anthropic": ("llmclient._anthropic", "Anthropic"),
    "AsyncAnthropic": ("llmclient._anthropic_async", "AsyncAnthropic"),
    "AsyncClient": ("llmclient._client_async", "AsyncOpenAI"),
    "AsyncStream": ("llmclient.api._async.streaming", "AsyncStream"),
    "ImageError": ("preprocess", "ImageError"),
    "SpeculationConfig": ("llmclient.features.prefetch", "SpeculationConfig"),
    "PrefetchError": ("llmclient.features.prefetch", "PrefetchError"),
    "CacheOptions": ("llmclient.cache", "CacheOptions"),
    "HedgeConfig": ("llmclient.features.hedge", "HedgeConfig"),
    "AzureOpenAI": ("llmclient._azure", "AzureOpenAI"),
    "AsyncAzureOpenAI": ("llmclient._azure", "AsyncAzureOpenAI"),
    "DefaultHttpxClient": ("llmclient.transport.http_clients", "DefaultHttpxClient"),
    "DefaultAsyncHttpxClient": ("llmclient.transport.http_clients", "DefaultAsyncHttpxClient"),
    "pydantic_function_tool": ("llmclient.lib._structured", "pydantic_function_tool"),
}

# The module-level client's settings (``llmclient.api_key = ...``), read on each use by
# ``llmclient.chat`` / ``.completions`` / ``.embeddings`` / ``.models`` (``_module_client``).
api_key: str | None = None
organization: str | None = None
project: str | None = None
base_url: str | None = None
timeout: Any = None
max_retries: int | None = None
default_headers: Mapping[str, str] | None = None
default_query: Mapping[str, object] | None = None
http_client: Any = None
# The official resources llmclient passes through (``api/passthrough.py``): ``llmclient.responses``...
_MODULE_RESOURCES = frozenset({"chat", "completions", "embeddings", "models", "beta", "responses",
                               "moderations", "files", "batches", "images", "audio", "vector_stores",
                               "uploads", "fine_tuning", "containers", "conversations", "evals",
                               "realtime", "webhooks", "videos", "admin", "skills"})


def __getattr__(name: str) -> object:
    if name in _MODULE_RESOURCES:
        return resource_proxy(name)
    if name == "types":  # ``openai.types`` after ``import openai``: here, imported on first use
        return importlib.import_module("llmclient.types")
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'llmclient' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value

__all__ = [
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "Anthropic",
    "AsyncAnthropic",
    "AsyncAzureOpenAI",
    "AsyncClient",
    "AsyncOpenAI",
    "AsyncStream",
    "AuthenticationError",
    "AzureOpenAI",
    "BadRequestError",
    "CacheOptions",
    "Call",
    "CallOptions",
    "CallRecord",
    "Client",
    "ClientClosedRequestError",
    "Codec",
    "ConflictError",
    "ContentFilterFinishReasonError",
    "ContentTooLargeError",
    "DefaultAsyncHttpxClient",
    "DefaultHttpxClient",
    "Ejection",
    "GatewayTimeoutError",
    "HTTPNotImplementedError",
    "HedgeConfig",
    "ImageError",
    "IncompleteStreamError",
    "InternalServerError",
    "JsonCodec",
    "LLMClientError",
    "LengthFinishReasonError",
    "MalformedResponseError",
    "NotFoundError",
    "NotGiven",
    "Omit",
    "OpenAI",
    "OpenAIError",
    "OverloadedError",
    "PartialAnswer",
    "PartialChoice",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "PrefetchError",
    "RateLimitError",
    "RawResponse",
    "Replica",
    "Replicas",
    "RequestHeaderFieldsTooLargeError",
    "RequestTimeoutError",
    "RequestTooLargeError",
    "RetryBudget",
    "SSEDecoder",
    "ServiceUnavailableError",
    "SpeculationConfig",
    "Stream",
    "StreamDecoder",
    "TraceContext",
    "UnprocessableEntityError",
    "__version__",
    "aclose_all",
    "close_all",
    "not_given",
    "omit",
    "pydantic_function_tool",
]
