"""A continuous-batching scheduler as a pure state machine (no asyncio, no sleeps, no clock).

The simulated GPU (``sim.py``) calls :meth:`Scheduler.step` with the current time, sleeps the
returned :attr:`StepPlan.duration_s` once for the whole batch, and delivers the plan's outputs.
Tests drive the same object with a fake clock. The policy follows vLLM's V1 scheduler
(docs.vllm.ai, "Optimization and Tuning" and "Automatic Prefix Caching"), simplified:

* **Queues.** New requests wait ordered by ``priority`` (lower first), then arrival (FIFO). A
  request becomes schedulable ``api_overhead_ms`` after it arrives. The waiting queue is bounded:
  beyond ``max_waiting``, :meth:`Scheduler.add` raises :class:`EngineOverloaded` with a
  ``retry_after_s`` from the recent drain (completion) rate.
* **One step.** Running sequences are served first, oldest first, then waiting ones are admitted
  while batch slots (``max_batch``), KV blocks and the step's token budget (``max_batched_tokens``)
  allow. Every decoding sequence computes one token; prefills take what is left of the budget,
  so long prompts are split over several steps (chunked prefill).
* **KV cache.** Blocks of ``block_size`` tokens. Full prompt blocks are named by a chained hash
  ``hash((previous block's hash, block tokens))``, the chain seeded by the request's
  ``image_digest`` (so the same text with other images never matches). A new request reuses the
  longest chain of cached blocks and skips their prefill. Unreferenced cached blocks stay cached
  and are evicted least-recently-used when a block is needed.
* **Preemption.** When a running sequence needs a block and none is free, the newest running
  sequence is preempted (its blocks freed; it re-queues at the front and later recomputes its
  prompt and generated tokens, often from the prefix cache). Its tokens do not change.
* **Policy** (``policy``; vLLM's ``--scheduling-policy``). ``fcfs`` (the default, as vLLM's):
  ``priority`` is ignored, the waiting queue is arrival order. ``priority``: the waiting queue is
  ordered by ``(priority, arrival)``, lower first, and a sequence ranks by the same pair. When a
  running sequence needs a block, the victim is the lowest-ranked running sequence, not the
  newest (vLLM V1, ``vllm/v1/core/sched/scheduler.py``: ``max(self.running, key=lambda r:
  (r.priority, r.arrival_time))``). With ``preempt_for_waiting`` (the default in ``priority``
  mode) the head of the waiting queue also preempts lower-ranked running sequences, the lowest
  first, while it finds no batch slot or KV room: vLLM V0's ``_schedule_priority_preemption``
  (``vllm/core/scheduler.py``). vLLM V1 has no such step (its waiting loop stops at
  ``max_num_running_reqs``); ``preempt_for_waiting=False`` is that behaviour. V0 admits the head
  at its next step (a prefill-only step there); here it is admitted in the step that made room.
* **Rejections.** ``prompt + max_tokens`` beyond the context window: :class:`ContextLengthError`;
  a request whose KV can never fit the cache: :class:`EngineOOM`.
* **Cost.** ``Profile.step_ms``: overhead + prefill per token (+ an attention term quadratic in
  prompt length) + decode cost growing with the number of decoding sequences.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from ..profiles import Profile
from .base import (
    ContextLengthError,
    EngineOOM,
    EngineOverloaded,
    EngineRequest,
    EngineStats,
    RequestTiming,
)
from .textgen import TextGen, sample_key

__all__ = ["POLICIES", "BlockPool", "Policy", "Scheduler", "StepOutput", "StepPlan"]

Policy = Literal["fcfs", "priority"]
POLICIES: tuple[Policy, ...] = ("fcfs", "priority")

# How many recent completions the drain-rate estimate (for Retry-After) looks at.
_DRAIN_WINDOW = 64
_RETRY_AFTER_MIN_S, _RETRY_AFTER_MAX_S = 1.0, 60.0


class BlockPool:
    """KV blocks with reference counts and a hash-addressed cache of unreferenced full blocks.

    Block ids are handed out lazily (``_fresh``), so a huge pool costs nothing until used.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self._fresh = 0                            # ids below this have been handed out once
        self._free: list[int] = []                 # released blocks with no hash
        self._evictable: OrderedDict[int, None] = OrderedDict()  # ref 0, hashed; LRU first
        self._ref: dict[int, int] = {}
        self._hash_of: dict[int, int] = {}
        self._by_hash: dict[int, int] = {}

    @property
    def available(self) -> int:
        return self.total - self._fresh + len(self._free) + len(self._evictable)

    @property
    def used(self) -> int:
        return self.total - self.available

    @property
    def cached(self) -> int:
        return len(self._evictable)

    def allocate(self) -> int:
        if self._free:
            block = self._free.pop()
        elif self._fresh < self.total:
            block, self._fresh = self._fresh, self._fresh + 1
        elif self._evictable:
            block, _ = self._evictable.popitem(last=False)
            del self._by_hash[self._hash_of.pop(block)]
        else:
            raise EngineOOM("KV cache exhausted")  # callers check `available` first
        self._ref[block] = 1
        return block

    def lookup(self, block_hash: int) -> int | None:
        """Take a reference on the cached block named ``block_hash``, if there is one."""
        block = self._by_hash.get(block_hash)
        if block is None:
            return None
        if self._ref.get(block, 0) == 0:
            del self._evictable[block]
        self._ref[block] = self._ref.get(block, 0) + 1
        return block

    def register(self, block: int, block_hash: int) -> None:
        """Name a freshly computed full block so later prompts can reuse it."""
        if block_hash not in self._by_hash and block not in self._hash_of:
            self._by_hash[block_hash] = block
            self._hash_of[block] = block_hash

    def release(self, block: int) -> None:
        ref = self._ref[block] - 1
        if ref:
            self._ref[block] = ref
            return
        del self._ref[block]
        if block in self._hash_of:
            self._evictable[block] = None          # most recently used at the end
        else:
            self._free.append(block)


class StepOutput(NamedTuple):
    """What one sequence produced in a step: at most one token, and a finish on the last.
    (A NamedTuple: one is built per token, and tuples are the cheapest to build.)"""

    seq_id: int
    request_id: str
    token_ids: tuple[int, ...]
    finish_reason: str | None = None
    timing: RequestTiming | None = None
    cached: int | None = None               # on a sequence's first output: its prefix-cache hit


@dataclass(frozen=True)
class StepPlan:
    """One engine step: what runs, how long it takes, what comes out at ``start + duration_s``."""

    start: float
    duration_s: float
    prefill_tokens: int = 0
    decode_seqs: int = 0
    batch_size: int = 0                     # sequences that computed something this step
    outputs: tuple[StepOutput, ...] = ()
    preempted: tuple[int, ...] = ()         # seq ids
    wake_at: float | None = None            # for an idle plan: when a queued request is due

    @property
    def idle(self) -> bool:
        return self.batch_size == 0

    @property
    def end(self) -> float:
        return self.start + self.duration_s


@dataclass(eq=False)
class _Seq:
    sid: int
    req: EngineRequest
    arrival: float
    ready_at: float
    gen: TextGen
    target_len: int
    target_reason: str
    prompt_len: int
    block_hashes: list[int]
    output: list[int] = field(default_factory=list)
    num_computed: int = 0
    blocks: list[int] = field(default_factory=list)
    hashed_upto: int = 0                    # leading prompt blocks already named in the pool
    first_scheduled: float | None = None
    first_token: float | None = None
    cached_tokens: int = 0
    preemptions: int = 0
    context_len: int = 0                    # prompt_len + len(output), kept in step

    def __post_init__(self) -> None:
        self.context_len = self.prompt_len + len(self.output)


def _block_hashes(req: EngineRequest, block_size: int) -> list[int]:
    tokens = (-1,) * req.image_tokens + tuple(req.prompt_token_ids)  # image positions hash by digest
    prev = hash(("prefix-root", req.image_digest))
    out = []
    for start in range(0, len(tokens) - block_size + 1, block_size):
        prev = hash((prev, tokens[start:start + block_size]))
        out.append(prev)
    return out


class Scheduler:
    """Continuous batching over a :class:`Profile`. All times are seconds on the caller's clock."""

    def __init__(self, profile: Profile, *, rng: random.Random | None = None, policy: Policy = "fcfs",
                 preempt_for_waiting: bool = True) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.profile = profile
        self.policy = policy
        self.preempt_for_waiting = policy == "priority" and preempt_for_waiting
        self.pool = BlockPool(profile.kv_blocks)
        self._rng = rng or random.Random()
        self._seqs: dict[int, _Seq] = {}
        self._pending: list[tuple[float, int]] = []        # (ready_at, sid)
        self._waiting: list[tuple[int, int]] = []          # (priority, sid); sid is FIFO order
        self._running: list[_Seq] = []                     # admission order, oldest first
        self._cancelled: set[int] = set()
        self._next_sid = 0
        self._finish_times: deque[float] = deque(maxlen=_DRAIN_WINDOW)
        self.counters = EngineStats(kv_blocks_total=profile.kv_blocks)
        self.steps_total = 0
        self.busy_s_total = 0.0
        self.priority_preemptions_total = 0    # of preemptions_total: for a waiting request

    # -- intake -----------------------------------------------------------------------------
    def add(self, req: EngineRequest, now: float) -> int:
        """Queue ``req``; returns its sequence id. Raises the engine errors for bad requests."""
        p = self.profile
        prompt_len = len(req.prompt_token_ids) + req.image_tokens
        if req.max_tokens < 1:
            raise ContextLengthError(f"max_tokens must be at least 1, got {req.max_tokens}")
        if prompt_len < 1:
            raise ContextLengthError("the prompt is empty: at least one token is needed")
        if prompt_len + req.max_tokens > p.context_window:
            raise ContextLengthError(
                f"This model's maximum context length is {p.context_window} tokens. However, you "
                f"requested {prompt_len + req.max_tokens} tokens ({prompt_len} in the messages, "
                f"{req.max_tokens} in the completion). Please reduce the length of the messages "
                "or completion.")
        need = math.ceil((prompt_len + req.max_tokens) / p.block_size)
        if need > p.kv_blocks:
            raise EngineOOM(f"the request needs {need} KV blocks ({prompt_len} prompt + "
                            f"{req.max_tokens} completion tokens) but the cache holds {p.kv_blocks}")
        if self.num_waiting >= p.max_waiting:
            raise EngineOverloaded(
                f"the waiting queue is full ({p.max_waiting} requests)", self.retry_after(now))
        key = sample_key(req)
        gen = TextGen(self._rng.getrandbits(64) if key is None else key,
                      p.output_len_median, p.output_len_sigma)
        natural = gen.natural_length
        sid = self._next_sid
        self._next_sid += 1
        seq = _Seq(
            sid=sid, req=req, arrival=now, ready_at=now + p.api_overhead_ms / 1000.0, gen=gen,
            target_len=min(natural, req.max_tokens),
            target_reason="stop" if natural <= req.max_tokens else "length",
            prompt_len=prompt_len,
            block_hashes=_block_hashes(req, p.block_size) if p.prefix_caching else [],
        )
        self._seqs[sid] = seq
        if seq.ready_at <= now:
            heapq.heappush(self._waiting, self._rank(seq))
        else:
            heapq.heappush(self._pending, (seq.ready_at, sid))
        return sid

    def cancel(self, seq_id: int) -> None:
        """Drop a sequence; its slot and blocks are freed at the next step."""
        if seq_id in self._seqs:
            self._cancelled.add(seq_id)

    def cancel_request(self, request_id: str) -> None:
        for seq in self._seqs.values():
            if seq.req.request_id == request_id:
                self._cancelled.add(seq.sid)

    def abort_all(self) -> list[int]:
        """Forget every sequence (engine shutdown); returns their ids."""
        sids = list(self._seqs)
        for seq in self._running:
            self._free(seq)
        self._seqs.clear()
        self._pending.clear()
        self._waiting.clear()
        self._running.clear()
        self._cancelled.clear()
        return sids

    # -- views ------------------------------------------------------------------------------
    @property
    def num_waiting(self) -> int:
        return len(self._pending) + len(self._waiting)

    @property
    def num_running(self) -> int:
        return len(self._running)

    def has_work(self) -> bool:
        return bool(self._seqs)

    def retry_after(self, now: float) -> float:
        """Seconds until the queue has likely drained by one request's worth, from recent
        completions; RFC 9110 §10.2.3 Retry-After is whole seconds, so callers may round up."""
        times = self._finish_times
        if len(times) >= 2 and now > times[0]:
            rate = len(times) / (now - times[0])
            estimate = (self.num_waiting + 1) / rate
        else:
            estimate = _RETRY_AFTER_MIN_S
        return min(_RETRY_AFTER_MAX_S, max(_RETRY_AFTER_MIN_S, estimate))

    def stats(self) -> EngineStats:
        """Counters for /metrics. Prefix-cache queries and hits count prompt *tokens* (as vLLM's
        ``prefix_cache_queries``/``hits`` do), once per request, not again on recompute."""
        c = self.counters
        return EngineStats(
            running=self.num_running, waiting=self.num_waiting,
            kv_blocks_used=self.pool.used, kv_blocks_total=self.pool.total,
            prefix_cache_queries=c.prefix_cache_queries, prefix_cache_hits=c.prefix_cache_hits,
            prompt_tokens_total=c.prompt_tokens_total,
            generation_tokens_total=c.generation_tokens_total,
            preemptions_total=c.preemptions_total,
            extra={"kv_blocks_cached": float(self.pool.cached),
                   "steps_total": float(self.steps_total),
                   "priority_preemptions_total": float(self.priority_preemptions_total),
                   "busy_seconds_total": self.busy_s_total},
        )

    # -- one step ---------------------------------------------------------------------------
    def step(self, now: float) -> StepPlan:
        """Decide and apply one engine step starting at ``now``."""
        self._apply_cancels()
        self._promote(now)
        budget = self.profile.max_batched_tokens
        scheduled: list[tuple[_Seq, int]] = []
        preempted: list[int] = []                  # few: a linear `in` is fine
        outranked = self._preempt_for_waiting(preempted) if self.preempt_for_waiting else 0
        for seq in list(self._running):
            if budget <= 0:
                break
            if seq.sid in preempted:               # preempted earlier in this loop
                continue
            n = min(seq.context_len - seq.num_computed, budget)
            ok, budget = self._reserve(seq, n, preempted, scheduled, budget)
            if ok:
                scheduled.append((seq, n))
                budget -= n
        # like vLLM: no admissions after a preemption for KV; one for a waiting request made room
        if len(preempted) == outranked:
            budget = self._admit(now, budget, scheduled)
        if not scheduled:
            return StepPlan(start=now, duration_s=0.0, wake_at=self._wake_at(now))
        return self._run(now, scheduled, preempted)

    def _wake_at(self, now: float) -> float | None:
        if self._waiting:
            return now
        return self._pending[0][0] if self._pending else None

    def _promote(self, now: float) -> None:
        while self._pending and self._pending[0][0] <= now:
            _, sid = heapq.heappop(self._pending)
            heapq.heappush(self._waiting, self._rank(self._seqs[sid]))

    def _apply_cancels(self) -> None:
        if not self._cancelled:
            return
        gone = self._cancelled
        self._cancelled = set()
        for seq in [s for s in self._running if s.sid in gone]:
            self._running.remove(seq)
            self._free(seq)
        self._pending = [e for e in self._pending if e[1] not in gone]
        self._waiting = [e for e in self._waiting if e[1] not in gone]
        heapq.heapify(self._pending)
        heapq.heapify(self._waiting)
        for sid in gone:
            self._seqs.pop(sid, None)

    def _blocks_needed(self, seq: _Seq, n: int) -> int:
        return max(0, math.ceil((seq.num_computed + n) / self.profile.block_size) - len(seq.blocks))

    def _rank(self, seq: _Seq) -> tuple[int, int]:
        """Where ``seq`` stands, lower first: ``(priority, arrival)`` under the priority policy,
        arrival alone under fcfs (the sequence id counts arrivals)."""
        return (seq.req.priority if self.policy == "priority" else 0, seq.sid)

    def _victim(self) -> _Seq:
        """The running sequence to preempt: the newest admitted (fcfs), or the lowest-ranked."""
        if self.policy == "priority":
            return max(self._running, key=self._rank)
        return self._running[-1]

    def _reserve(self, seq: _Seq, n: int, preempted: list[int], scheduled: list[tuple[_Seq, int]],
                 budget: int) -> tuple[bool, int]:
        """Allocate blocks for ``n`` more tokens of a running sequence, preempting victims
        (:meth:`_victim`) while the pool is short. A victim already scheduled in this step gives
        its tokens back to the budget. Returns (False if ``seq`` itself was preempted, budget)."""
        if seq.num_computed + n <= len(seq.blocks) * self.profile.block_size:
            return True, budget                    # the common decode step: room in its block
        need = self._blocks_needed(seq, n)
        while self.pool.available < need:
            victim = self._victim()
            for i, (done, tokens) in enumerate(scheduled):
                if done is victim:
                    del scheduled[i]
                    budget += tokens
                    break
            self._preempt(victim)
            preempted.append(victim.sid)
            if victim is seq:
                return False, budget
        seq.blocks.extend(self.pool.allocate() for _ in range(need))
        return True, budget

    def _preempt_for_waiting(self, preempted: list[int]) -> int:
        """vLLM V0's priority preemption: while the head of the waiting queue finds no batch slot
        or KV room for its first chunk, preempt the lowest-ranked running sequence if it ranks
        below the head. Returns how many were preempted. The KV need is counted without the
        prefix cache (an upper bound: at worst one victim too many when blocks are short)."""
        if not self._waiting or not self._running:
            return 0
        head = self._seqs[self._waiting[0][1]]
        p = self.profile
        need = math.ceil(min(head.context_len, p.max_batched_tokens) / p.block_size)
        count = 0
        while self._running and (len(self._running) >= p.max_batch or self.pool.available < need):
            victim = self._victim()
            if self._rank(victim) <= self._rank(head):
                break
            self._preempt(victim)
            preempted.append(victim.sid)
            self.priority_preemptions_total += 1
            count += 1
        return count

    def _preempt(self, seq: _Seq) -> None:
        self._running.remove(seq)
        self._free(seq)
        seq.num_computed = 0
        seq.hashed_upto = 0
        seq.preemptions += 1
        self.counters.preemptions_total += 1
        heapq.heappush(self._waiting, self._rank(seq))  # its old sid keeps it first

    def _free(self, seq: _Seq) -> None:
        # Tail first, so the shared prefix blocks stay cached longest (LRU end = most recent).
        for block in reversed(seq.blocks):
            self.pool.release(block)
        seq.blocks = []

    def _match_prefix(self, seq: _Seq) -> int:
        """Reuse cached prompt blocks; returns the tokens whose prefill is skipped."""
        bs = self.profile.block_size
        for h in seq.block_hashes:
            block = self.pool.lookup(h)
            if block is None:
                break
            seq.blocks.append(block)
        seq.hashed_upto = len(seq.blocks)
        # At least one token must be computed to sample from (vLLM recomputes the last one).
        seq.num_computed = min(len(seq.blocks) * bs, seq.context_len - 1)
        return seq.num_computed

    def _admit(self, now: float, budget: int, scheduled: list[tuple[_Seq, int]]) -> int:
        p = self.profile
        while self._waiting and budget > 0 and len(self._running) < p.max_batch:
            seq = self._seqs[self._waiting[0][1]]
            cached = self._match_prefix(seq)
            n = min(seq.context_len - seq.num_computed, budget)
            need = self._blocks_needed(seq, n)
            if self.pool.available < need:        # wait for blocks; never preempt for newcomers
                self._free(seq)
                seq.num_computed = seq.hashed_upto = 0
                break
            heapq.heappop(self._waiting)
            seq.blocks.extend(self.pool.allocate() for _ in range(need))
            if seq.first_scheduled is None:       # count each request's lookup once
                seq.first_scheduled = now
                seq.cached_tokens = cached
                self.counters.prefix_cache_queries += seq.prompt_len
                self.counters.prefix_cache_hits += cached
                self.counters.prompt_tokens_total += seq.prompt_len
            self._running.append(seq)
            scheduled.append((seq, n))
            budget -= n
        return budget

    def _run(self, now: float, scheduled: list[tuple[_Seq, int]], preempted: list[int]) -> StepPlan:
        chunks: list[tuple[int, int]] = []
        decoding = 0
        for seq, n in scheduled:
            if n == 1 and seq.output and seq.num_computed == seq.context_len - 1:
                decoding += 1
            else:
                chunks.append((seq.num_computed, n))
        duration = self.profile.step_ms(chunks, decoding) / 1000.0
        end = now + duration
        outputs = []
        for seq, n in scheduled:
            seq.num_computed += n
            if seq.hashed_upto < len(seq.block_hashes):
                self._name_blocks(seq)
            if seq.num_computed == seq.context_len:  # else a prefill chunk: no token yet
                outputs.append(self._sample(seq, end))
        self.steps_total += 1
        self.busy_s_total += duration
        return StepPlan(
            start=now, duration_s=duration, prefill_tokens=sum(n for _, n in chunks),
            decode_seqs=decoding, batch_size=len(scheduled), outputs=tuple(outputs),
            preempted=tuple(preempted))

    def _sample(self, seq: _Seq, end: float) -> StepOutput:
        token = seq.gen.next_token()
        cached: int | None = None
        if seq.first_token is None:
            seq.first_token = end
            cached = seq.cached_tokens
        finish: str | None = None
        if token in seq.req.stop_token_ids:
            finish = "stop"                        # like vLLM: the stop token is not emitted
            tokens: tuple[int, ...] = ()
        else:
            tokens = (token,)
            seq.output.append(token)
            seq.context_len += 1
            self.counters.generation_tokens_total += 1
            if len(seq.output) >= seq.target_len:
                finish = seq.target_reason
            elif seq.context_len >= self.profile.context_window:
                finish = "length"
        if finish is None:
            return StepOutput(seq.sid, seq.req.request_id, tokens, None, None, cached)
        self._finish(seq, end)
        return StepOutput(seq.sid, seq.req.request_id, tokens, finish, self._timing(seq, end), cached)

    def _name_blocks(self, seq: _Seq) -> None:
        full = min(seq.num_computed // self.profile.block_size, len(seq.block_hashes))
        for i in range(seq.hashed_upto, full):
            self.pool.register(seq.blocks[i], seq.block_hashes[i])
        seq.hashed_upto = max(seq.hashed_upto, full)

    def _finish(self, seq: _Seq, end: float) -> None:
        self._running.remove(seq)
        self._free(seq)
        del self._seqs[seq.sid]
        self._cancelled.discard(seq.sid)
        self._finish_times.append(end)

    @staticmethod
    def _timing(seq: _Seq, end: float) -> RequestTiming:
        scheduled = seq.first_scheduled if seq.first_scheduled is not None else seq.arrival
        first = seq.first_token if seq.first_token is not None else end
        return RequestTiming(
            queue_ms=(scheduled - seq.arrival) * 1000.0,
            prefill_ms=(first - scheduled) * 1000.0,
            decode_ms=(end - first) * 1000.0,
            prompt_tokens=seq.prompt_len,
            cached_prompt_tokens=seq.cached_tokens,
            completion_tokens=len(seq.output),
            preemptions=seq.preemptions,
        )
