"""The engine interface: what the HTTP layer asks of a model runner.

The HTTP app (``benchmarks.server.app``) knows nothing of batching, KV caches or devices.
It tokenizes the prompt with the project tokenizer (``benchmarks.server.tokenizer``), hands an
:class:`EngineRequest` to :meth:`Engine.submit` and reads :class:`TokenEvent` items until one
carries a ``finish_reason``. Engines (``sim``: a calibrated simulated GPU; ``torch``: real forward
passes) implement this Protocol and nothing else.

Errors an engine raises (from ``submit`` or while iterating):
  EngineError
   ├── EngineOverloaded     the waiting queue is full          -> HTTP 429 + Retry-After
   ├── ContextLengthError   prompt + max_tokens beyond context -> HTTP 400
   ├── EngineOOM            KV/device memory exhausted          -> HTTP 503 (type "server_error")
   └── EngineNotReady       still loading (cold start)          -> HTTP 503
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class EngineError(Exception):
    """Base class of every error an engine raises."""


class EngineOverloaded(EngineError):
    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ContextLengthError(EngineError, ValueError):
    pass


class EngineOOM(EngineError, MemoryError):
    pass


class EngineNotReady(EngineError):
    pass


@dataclass(frozen=True)
class EngineRequest:
    request_id: str
    prompt_token_ids: tuple[int, ...]
    max_tokens: int
    image_tokens: int = 0          # extra prefill tokens for images (no ids: they hash by content)
    image_digest: str = ""         # content hash of the images, so prefix caching sees them
    temperature: float = 1.0
    seed: int | None = None        # None and temperature > 0: a fresh sample each time
    n_index: int = 0               # which of the `n` choices this is (varies the sample)
    stop_token_ids: tuple[int, ...] = ()
    priority: int = 0              # lower runs first (prefetch/warm-up traffic may ask for 1)


@dataclass(frozen=True)
class TokenEvent:
    """One step's output for one request. The last event has ``finish_reason`` set."""

    token_ids: tuple[int, ...]
    finish_reason: str | None = None      # "stop" | "length" | None while running
    timing: RequestTiming | None = None   # present on the last event
    # On the first event (prefill is done): prompt tokens the prefix cache served. An answer
    # that reports cache use before it ends (Anthropic's ``message_start``) reads it here;
    # None on later events, and from an engine that does not say.
    cached_prompt_tokens: int | None = None


@dataclass
class RequestTiming:
    """Milliseconds, measured by the engine; the app turns these into Server-Timing."""

    queue_ms: float = 0.0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0   # prefill skipped thanks to the prefix cache
    completion_tokens: int = 0
    preemptions: int = 0


@dataclass
class EngineStats:
    """A snapshot for /metrics. Fields an engine cannot know stay None (absent, not zero)."""

    running: int = 0
    waiting: int = 0
    kv_blocks_used: int = 0
    kv_blocks_total: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    preemptions_total: int = 0
    gpu_memory_used_bytes: int | None = None
    gpu_memory_total_bytes: int | None = None
    gpu_utilization_pct: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    name: str          # "sim", "torch"
    device: str        # "simulated h100-8b", "cuda:0 (NVIDIA H100)", "cpu"
    context_window: int

    @property
    def ready(self) -> bool:
        """False until the model is loaded; /health answers 503 until then."""

    async def start(self) -> None:
        """Load the model (cold start) and start the step loop. Returns when ready."""

    async def stop(self) -> None:
        """Stop the step loop; waiting and running requests end with EngineError."""

    def submit(self, request: EngineRequest) -> AsyncIterator[TokenEvent]:
        """Queue a request; iterate for its tokens. Closing the iterator early (``aclose``)
        cancels the request and frees its batch slot and KV blocks at the next step."""

    def stats(self) -> EngineStats:
        """Current counters for /metrics."""
