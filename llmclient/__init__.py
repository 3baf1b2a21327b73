"""llmclient: a drop-in OpenAI-compatible client that removes client-side latency.

``from llmclient import OpenAI`` works like ``from openai import OpenAI``; responses also carry
``.trace_id``, ``._request_id`` and ``.timings`` (a :class:`CallRecord`).
"""

from typing import TYPE_CHECKING

from ._call import NOT_GIVEN, Call, CallOptions, NotGiven, Omit
from ._client import AsyncOpenAI, OpenAI, RawResponse, __version__
from ._codec import Codec, JsonCodec, SSEDecoder, StreamDecoder
from ._errors import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IncompleteStreamError,
    InternalServerError,
    MalformedResponseError,
    NotFoundError,
    OpenAIError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._streaming import AsyncStream, Stream
from ._timings import CallRecord
from ._tracing import TraceContext
from ._transport import aclose_all, close_all

if TYPE_CHECKING:  # the lazy names below, for type checkers
    from preprocess import ImageError

    from ._hedge import HedgeConfig
    from ._prefetch import PrefetchError, SpeculationConfig
    from .cache import CacheOptions

Client = OpenAI
AsyncClient = AsyncOpenAI
LLMClientError = OpenAIError

# Names whose modules cost import time (Pillow, the speculative package, the cache backends):
# imported on first access, so ``import llmclient`` stays light.
_LAZY = {
    "ImageError": ("preprocess", "ImageError"),
    "SpeculationConfig": ("llmclient._prefetch", "SpeculationConfig"),
    "PrefetchError": ("llmclient._prefetch", "PrefetchError"),
    "CacheOptions": ("llmclient.cache", "CacheOptions"),
    "HedgeConfig": ("llmclient._hedge", "HedgeConfig"),
}


def __getattr__(name: str) -> object:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'llmclient' has no attribute {name!r}")
    import importlib

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
    "AsyncClient",
    "AsyncOpenAI",
    "AsyncStream",
    "AuthenticationError",
    "BadRequestError",
    "CacheOptions",
    "Call",
    "CallOptions",
    "CallRecord",
    "Client",
    "Codec",
    "ConflictError",
    "HedgeConfig",
    "ImageError",
    "IncompleteStreamError",
    "InternalServerError",
    "JsonCodec",
    "LLMClientError",
    "MalformedResponseError",
    "NotFoundError",
    "NotGiven",
    "Omit",
    "OpenAI",
    "OpenAIError",
    "PermissionDeniedError",
    "PrefetchError",
    "RateLimitError",
    "RawResponse",
    "SSEDecoder",
    "SpeculationConfig",
    "Stream",
    "StreamDecoder",
    "TraceContext",
    "UnprocessableEntityError",
    "__version__",
    "aclose_all",
    "close_all",
]
