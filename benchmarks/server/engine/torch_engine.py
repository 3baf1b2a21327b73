"""``--engine torch``: real transformer forward passes with continuous batching.

One step loop, as in vLLM's scheduler: each step admits waiting requests into free batch slots
(prefilling each, reusing cached prefix KV where the prompt starts with one seen before), then
runs ONE batched decode forward for every running sequence, each at its own length. Requests
join and leave the batch between steps. Text from random weights is meaningless; token counts,
timings, KV memory and GPU memory are real.

Prefix reuse: after prefill, the KV of the prompt's whole blocks (``BLOCK`` tokens) is kept in
a bounded LRU keyed by the chained hash of the blocks; a later prompt that starts with the same
blocks copies that KV into its slot and prefills only the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .base import (
    ContextLengthError,
    EngineError,
    EngineNotReady,
    EngineOOM,
    EngineOverloaded,
    EngineRequest,
    EngineStats,
    RequestTiming,
    TokenEvent,
)

log = logging.getLogger("benchmarks.server.torch")

BLOCK = 16
PREFILL_CHUNK = 512  # tokens per prefill forward: bounds the step time a long prompt adds


def block_hashes(tokens: tuple[int, ...], image_digest: str = "") -> list[str]:
    """Chained hashes of the prompt's whole blocks (pure): block i's hash covers blocks 0..i."""
    out: list[str] = []
    prev = image_digest.encode()
    for i in range(len(tokens) // BLOCK):
        h = hashlib.blake2b(prev + repr(tokens[i * BLOCK : (i + 1) * BLOCK]).encode(), digest_size=12)
        prev = h.digest()
        out.append(h.hexdigest())
    return out


@dataclass
class _Seq:
    req: EngineRequest
    queue: asyncio.Queue[TokenEvent | BaseException]
    loop: asyncio.AbstractEventLoop
    arrived: float
    slot: int = -1
    length: int = 0  # tokens in the KV cache
    generated: list[int] = field(default_factory=list)
    last_token: int = 0
    admitted: float = 0.0
    prefill_ms: float = 0.0
    cached_tokens: int = 0
    cancelled: bool = False
    generator: Any = None

    def emit(self, item: TokenEvent | BaseException) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


def _is_oom(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or (
        "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text
    )


class TorchEngine:
    name = "torch"

    def __init__(
        self,
        config: str = "auto",
        *,
        device: str = "auto",
        max_batch: int = 32,
        max_len: int | None = None,
        max_waiting: int = 256,
        prefix_cache_entries: int = 64,
        seed: int = 0,
    ) -> None:
        try:
            import torch
        except ImportError as exc:  # optional extra
            raise RuntimeError("--engine torch needs torch: pip install 'llmclient[torch]'") from exc
        self._torch = torch
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self._dev = torch.device(device)
        if config == "auto":
            config = "1b" if self._dev.type == "cuda" else "tiny"
        from .torch_model import load_config

        self.cfg, self._checkpoint = load_config(config)
        self.config_name = config
        self.dtype = torch.bfloat16 if self._dev.type == "cuda" else torch.float32
        self.context_window = min(max_len or self.cfg.max_position_embeddings, self.cfg.max_position_embeddings)
        self.max_batch = max_batch
        self.max_waiting = max_waiting
        self.seed = seed
        gpu = torch.cuda.get_device_name(self._dev) if self._dev.type == "cuda" else None
        self.device = f"{self._dev} ({gpu})" if gpu else str(self._dev)
        self._prefix: OrderedDict[str, Any] = OrderedDict()
        self._prefix_index: dict[str, str] = {}
        self._prefix_entries = prefix_cache_entries
        self._waiting: deque[_Seq] = deque()
        self._running: list[_Seq] = []
        self._lock = threading.Lock()
        self._ready = False
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stats = EngineStats()
        self._nvml: Any = None

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._ready

    async def start(self) -> None:
        await asyncio.to_thread(self._load)
        self._ready = True
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop())
        log.info(
            "torch engine ready: config %s (%.2fB params), %s, %s, KV cache %.1f MiB for %d slots",
            self.config_name, self.cfg.parameter_count() / 1e9, self.device, self.dtype,
            self._cache.nbytes() / 2**20, self.max_batch,
        )

    def _load(self) -> None:
        from .torch_model import KVCache, build, rope_tables

        torch = self._torch
        try:
            self._net = build(self.cfg, self._checkpoint, self._dev, self.dtype, self.seed)
            self._rope = rope_tables(self.cfg, self._dev)
            self._cache = KVCache(self.cfg, self.max_batch, self.context_window, self._dev, self.dtype)
        except (torch.OutOfMemoryError, MemoryError, RuntimeError) as exc:
            if not _is_oom(exc):
                raise
            raise EngineOOM(
                f"out of memory loading the model and a KV cache of {self.max_batch} x "
                f"{self.context_window} tokens on {self.device}: lower --max-batch or --max-len"
            ) from exc
        self._free_slots = list(range(self.max_batch - 1, -1, -1))
        self._stats.kv_blocks_total = self.max_batch * (self.context_window // BLOCK)

    async def stop(self) -> None:
        self._ready = False
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with self._lock:
            pending = [*self._waiting, *self._running]
            self._waiting.clear()
            self._running.clear()
        for seq in pending:
            seq.emit(EngineError("engine stopped"))

    # -- requests -------------------------------------------------------------------------
    def submit(self, request: EngineRequest) -> AsyncIterator[TokenEvent]:
        if not self._ready:
            raise EngineNotReady("model is still loading")
        total = len(request.prompt_token_ids) + request.image_tokens + request.max_tokens
        if total > self.context_window:
            raise ContextLengthError(
                f"prompt ({len(request.prompt_token_ids) + request.image_tokens} tokens) plus "
                f"max_tokens ({request.max_tokens}) exceeds the context window of {self.context_window}"
            )
        with self._lock:
            if len(self._waiting) >= self.max_waiting:
                raise EngineOverloaded("waiting queue is full", retry_after_s=1.0)
            seq = _Seq(request, asyncio.Queue(), asyncio.get_running_loop(), time.perf_counter())
            self._waiting.append(seq)
        self._wake.set()
        return self._events(seq)

    async def _events(self, seq: _Seq) -> AsyncIterator[TokenEvent]:
        try:
            while True:
                item = await seq.queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.finish_reason is not None:
                    return
        finally:
            seq.cancelled = True  # a consumer that stops early frees its slot at the next step

    # -- the step loop --------------------------------------------------------------------
    async def _loop(self) -> None:
        while True:
            with self._lock:
                idle = not self._waiting and not self._running
            if idle:
                self._wake.clear()
                await self._wake.wait()
                continue
            await asyncio.to_thread(self._step)

    def _step(self) -> None:
        torch = self._torch
        self._reap()
        admitted = self._admit()
        try:
            for seq in admitted:
                self._prefill(seq)
            if self._running:
                self._decode()
        except Exception as exc:  # any failure ends this step's requests, never the step loop
            if not _is_oom(exc):
                self._fail_all(EngineError(f"engine step failed: {type(exc).__name__}: {exc}"))
                log.exception("engine step failed")
                return
            self._fail_all(EngineOOM(f"out of memory during a step on {self.device}"))
            if self._dev.type == "cuda":
                torch.cuda.empty_cache()

    def _reap(self) -> None:
        with self._lock:
            for seq in [s for s in self._running if s.cancelled]:
                self._release(seq)
            self._waiting = deque(s for s in self._waiting if not s.cancelled)

    def _admit(self) -> list[_Seq]:
        out = []
        with self._lock:
            ordered = sorted(self._waiting, key=lambda s: (s.req.priority, s.arrived))
            for seq in ordered:
                if not self._free_slots:
                    break
                seq.slot = self._free_slots.pop()
                seq.admitted = time.perf_counter()
                self._waiting.remove(seq)
                self._running.append(seq)
                out.append(seq)
        return out

    def _prefill(self, seq: _Seq) -> None:
        from .torch_model import forward

        torch = self._torch
        t0 = time.perf_counter()
        # Images have no token ids here: they occupy prefill as placeholder ids derived from
        # their digest, so their cost (and their effect on prefix hashing) is real.
        image_ids = tuple(
            int.from_bytes(hashlib.blake2b(f"{seq.req.image_digest}:{i}".encode(), digest_size=4).digest(), "big")
            % self.cfg.vocab_size
            for i in range(seq.req.image_tokens)
        )
        prompt = image_ids + tuple(t % self.cfg.vocab_size for t in seq.req.prompt_token_ids)
        if not prompt:
            prompt = (0,)
        hashes = block_hashes(prompt)
        self._stats.prefix_cache_queries += 1
        start = self._reuse_prefix(hashes, len(prompt), seq.slot)
        seq.cached_tokens = start
        logits = None
        for lo in range(start, len(prompt), PREFILL_CHUNK):
            chunk = torch.tensor([prompt[lo : lo + PREFILL_CHUNK]], device=self._dev)
            logits = forward(self._net, self._cache, self._rope, [seq.slot], chunk, [lo])
        seq.length = len(prompt)
        if hashes and len(hashes) * BLOCK > start:
            self._save_prefix(hashes, seq.slot)
        if seq.req.temperature > 0:
            seed = seq.req.seed if seq.req.seed is not None else int.from_bytes(hashlib.blake2b(seq.req.request_id.encode(), digest_size=8).digest(), "big")
            # Within the 64-bit seed torch takes (a request-id hash times 1000 is not).
            seq.generator = torch.Generator().manual_seed((seed * 1000 + seq.req.n_index) % 2**63)
        assert logits is not None
        seq.prefill_ms = (time.perf_counter() - t0) * 1000
        self._stats.prompt_tokens_total += len(prompt)
        self._accept(seq, self._sample(logits, [seq])[0])

    def _reuse_prefix(self, hashes: list[str], prompt_len: int, slot: int) -> int:
        """Copy the longest cached prefix of the prompt into ``slot``; returns its length."""
        for n in range(len(hashes), 0, -1):
            # Keep at least one token to run, so the last prompt position yields logits.
            if n * BLOCK >= prompt_len or hashes[n - 1] not in self._prefix_index:
                continue
            entry = self._prefix_index[hashes[n - 1]]
            saved = self._prefix.get(entry)
            if saved is None:
                continue
            self._prefix.move_to_end(entry)
            self._stats.prefix_cache_hits += 1
            return self._cache.copy_prefix(saved, slot, n * BLOCK)
        return 0

    def _save_prefix(self, hashes: list[str], slot: int) -> None:
        """Keep one KV snapshot of the prompt's whole blocks; index it under every block hash.

        One snapshot per prompt (not per block): per-block copies would cost memory quadratic
        in the prompt's length.
        """
        entry = hashes[-1]
        self._prefix[entry] = self._cache.snapshot(slot, len(hashes) * BLOCK)
        for h in hashes:
            self._prefix_index[h] = entry
        while len(self._prefix) > self._prefix_entries:
            evicted, _ = self._prefix.popitem(last=False)
            self._prefix_index = {h: e for h, e in self._prefix_index.items() if e != evicted}

    def _decode(self) -> None:
        from .torch_model import forward

        torch = self._torch
        batch = [s for s in self._running if s.generated and not s.cancelled]
        if not batch:
            return
        tokens = torch.tensor([[s.last_token] for s in batch], device=self._dev)
        logits = forward(self._net, self._cache, self._rope, [s.slot for s in batch], tokens, [s.length for s in batch])
        for seq in batch:
            seq.length += 1
        for seq, token in zip(batch, self._sample(logits, batch), strict=True):
            self._accept(seq, token)

    def _sample(self, logits: Any, seqs: list[_Seq]) -> list[int]:
        torch = self._torch
        greedy = logits.argmax(dim=-1).tolist()
        out = []
        for i, seq in enumerate(seqs):
            if seq.req.temperature <= 0:
                out.append(int(greedy[i]))
            else:
                probs = torch.softmax(logits[i].cpu() / seq.req.temperature, dim=-1)
                out.append(int(torch.multinomial(probs, 1, generator=seq.generator)))
        return out

    def _accept(self, seq: _Seq, token: int) -> None:
        seq.generated.append(token)
        seq.last_token = token
        self._stats.generation_tokens_total += 1
        finish = None
        if token in seq.req.stop_token_ids:
            finish = "stop"
        elif len(seq.generated) >= seq.req.max_tokens:
            finish = "length"
        if finish is None:
            first = len(seq.generated) == 1  # prefill is done: say what the prefix cache served
            seq.emit(TokenEvent((token,), cached_prompt_tokens=seq.cached_tokens if first else None))
            return
        now = time.perf_counter()
        timing = RequestTiming(
            queue_ms=(seq.admitted - seq.arrived) * 1000,
            prefill_ms=seq.prefill_ms,
            decode_ms=(now - seq.admitted) * 1000 - seq.prefill_ms,
            prompt_tokens=len(seq.req.prompt_token_ids) + seq.req.image_tokens,
            cached_prompt_tokens=seq.cached_tokens,
            completion_tokens=len(seq.generated),
        )
        ids = () if finish == "stop" else (token,)
        seq.emit(TokenEvent(ids, finish, timing, seq.cached_tokens if len(seq.generated) == 1 else None))
        with self._lock:
            self._release(seq)

    def _release(self, seq: _Seq) -> None:
        if seq in self._running:
            self._running.remove(seq)
            self._free_slots.append(seq.slot)

    def _fail_all(self, error: EngineError) -> None:
        with self._lock:
            victims = list(self._running)
            for seq in victims:
                self._release(seq)
        for seq in victims:
            seq.emit(error)

    # -- telemetry ------------------------------------------------------------------------
    def stats(self) -> EngineStats:
        s = self._stats
        with self._lock:
            s.running = len(self._running)
            s.waiting = len(self._waiting)
            s.kv_blocks_used = sum(-(-seq.length // BLOCK) for seq in self._running)
        s.extra["prefix_cache_entries"] = float(len(self._prefix))
        if self._dev.type == "cuda":
            self._gpu_telemetry(s)
        return s

    def _gpu_telemetry(self, s: EngineStats) -> None:
        try:
            if self._nvml is None:
                import pynvml

                pynvml.nvmlInit()
                index = self._dev.index or 0
                self._nvml = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(index))
            nv, handle = self._nvml
            mem = nv.nvmlDeviceGetMemoryInfo(handle)
            s.gpu_memory_used_bytes = int(mem.used)
            s.gpu_memory_total_bytes = int(mem.total)
            s.gpu_utilization_pct = float(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:  # no NVML: leave the fields absent rather than invent them
            torch = self._torch
            s.gpu_memory_used_bytes = int(torch.cuda.memory_allocated(self._dev))
            s.gpu_memory_total_bytes = int(torch.cuda.get_device_properties(self._dev).total_memory)
