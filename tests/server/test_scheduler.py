"""The continuous-batching scheduler as a pure state machine, on a fake clock (no sockets)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.server.engine.base import (
    ContextLengthError,
    EngineOOM,
    EngineOverloaded,
    EngineRequest,
)
from benchmarks.server.engine.scheduler import BlockPool, Scheduler, StepOutput, StepPlan
from benchmarks.server.profiles import Profile

# Round numbers so step durations can be written down by hand.
BASE = Profile(
    name="unit", model="unit", device="unit", calibrated_from="test", context_window=512,
    max_batch=4, kv_blocks=64, block_size=4, max_batched_tokens=64, max_waiting=8,
    step_overhead_ms=1.0, prefill_ms_per_token=0.5, decode_base_ms=2.0, decode_ms_per_seq=1.0,
    output_len_median=1000.0, output_len_sigma=0.0,  # answers run to max_tokens unless noted
)


def req(rid: str, prompt: int | tuple[int, ...] = 8, max_tokens: int = 4, **kw: object) -> EngineRequest:
    ids = prompt if isinstance(prompt, tuple) else tuple(100 + hash((rid, i)) % 5000 for i in range(prompt))
    return EngineRequest(rid, ids, max_tokens, temperature=0.0, **kw)  # type: ignore[arg-type]


def drain(sched: Scheduler, now: float = 0.0, limit: int = 10_000) -> tuple[dict[str, list[int]], list[StepPlan], dict[str, StepOutput]]:
    """Step until idle; tokens and final outputs per request id."""
    tokens: dict[str, list[int]] = {}
    finals: dict[str, StepOutput] = {}
    plans: list[StepPlan] = []
    for _ in range(limit):
        plan = sched.step(now)
        if plan.idle:
            if not sched.has_work():
                return tokens, plans, finals
            assert plan.wake_at is not None
            now = max(now, plan.wake_at)
            continue
        plans.append(plan)
        now = plan.end
        for out in plan.outputs:
            tokens.setdefault(out.request_id, []).extend(out.token_ids)
            if out.finish_reason:
                finals[out.request_id] = out
    raise AssertionError("scheduler did not drain")


def test_admits_up_to_max_batch_and_queues_the_rest() -> None:
    sched = Scheduler(BASE)
    for i in range(6):
        sched.add(req(f"r{i}"), 0.0)
    plan = sched.step(0.0)
    assert plan.batch_size == 4
    assert sched.num_running == 4 and sched.num_waiting == 2
    assert {o.request_id for o in plan.outputs} == {"r0", "r1", "r2", "r3"}
    tokens, _, finals = drain(sched, plan.end)
    assert sorted(finals) == [f"r{i}" for i in range(6)]
    assert [len(tokens[f"r{i}"]) for i in range(6)] == [3, 3, 3, 3, 4, 4]  # + first from step 1


def test_long_prompt_prefills_in_chunks_within_the_step_budget() -> None:
    sched = Scheduler(replace(BASE, max_batched_tokens=32))
    sched.add(req("long", 100, max_tokens=2), 0.0)
    plans = [sched.step(0.0) for _ in range(4)]
    assert [p.prefill_tokens for p in plans] == [32, 32, 32, 4]
    assert [len(p.outputs) for p in plans] == [0, 0, 0, 1]   # first token only once prefill ends


def test_decodes_share_the_budget_with_prefill_chunks() -> None:
    sched = Scheduler(replace(BASE, max_batched_tokens=32))
    sched.add(req("a", 4, max_tokens=50), 0.0)
    sched.step(0.0)                                  # a prefilled, now decoding
    sched.add(req("b", 100), 0.0)
    plan = sched.step(0.0)
    assert (plan.decode_seqs, plan.prefill_tokens) == (1, 31)


def test_step_durations_follow_the_profile_for_a_scripted_arrival_sequence() -> None:
    sched = Scheduler(BASE)
    sched.add(req("a", 8, max_tokens=3), 0.0)
    p1 = sched.step(0.0)                             # a: prefill 8
    sched.add(req("b", 4, max_tokens=2), p1.end)
    p2 = sched.step(p1.end)                          # a decodes, b prefills 4
    p3 = sched.step(p2.end)                          # both decode; both finish
    p4 = sched.step(p3.end)
    assert [round(p.duration_s * 1000, 9) for p in (p1, p2, p3)] == [
        1 + 0.5 * 8,                                 # overhead + prefill
        1 + 0.5 * 4 + (2 + 1 * 1),                   # + decode of one sequence
        1 + (2 + 1 * 2),                             # decode of two
    ]
    assert p4.idle and not sched.has_work()
    timing = {o.request_id: o.timing for o in p3.outputs}
    assert timing["a"] is not None and timing["b"] is not None
    assert timing["a"].prefill_ms == pytest.approx(5.0)
    assert timing["a"].decode_ms == pytest.approx(6.0 + 5.0)
    assert timing["b"].queue_ms == 0.0 and timing["b"].prefill_ms == pytest.approx(6.0)
    assert (timing["a"].completion_tokens, timing["b"].completion_tokens) == (3, 2)


def test_api_overhead_delays_scheduling_without_using_the_gpu() -> None:
    sched = Scheduler(replace(BASE, api_overhead_ms=10.0))
    sched.add(req("a"), 0.0)
    idle = sched.step(0.0)
    assert idle.idle and idle.wake_at == pytest.approx(0.010)
    assert sched.step(0.010).prefill_tokens == 8


def _finish_order(plans: list[StepPlan]) -> list[str]:
    return [o.request_id for p in plans for o in p.outputs if o.finish_reason]


def test_waiting_order_is_priority_then_fifo_under_the_priority_policy() -> None:
    sched = Scheduler(replace(BASE, max_batch=1), policy="priority")
    sched.add(req("late-low", priority=1), 0.0)
    sched.add(req("first"), 0.0)
    sched.add(req("second"), 0.0)
    _, plans, _ = drain(sched)
    assert _finish_order(plans) == ["first", "second", "late-low"]


def test_fcfs_ignores_priority() -> None:
    sched = Scheduler(replace(BASE, max_batch=1))      # fcfs: vLLM's default policy
    sched.add(req("low", priority=1), 0.0)
    sched.add(req("normal"), 0.0)
    sched.add(req("lower", priority=5), 0.0)
    _, plans, _ = drain(sched)
    assert _finish_order(plans) == ["low", "normal", "lower"]
    assert sched.stats().preemptions_total == 0
    with pytest.raises(ValueError, match="policy"):
        Scheduler(BASE, policy="lifo")  # type: ignore[arg-type]


def _busy_with_low(preempt_for_waiting: bool = True) -> tuple[Scheduler, dict[str, int]]:
    """Two batch slots, both decoding low-priority answers of 10 tokens."""
    sched = Scheduler(replace(BASE, max_batch=2), policy="priority", preempt_for_waiting=preempt_for_waiting)
    sids = {rid: sched.add(req(rid, max_tokens=10, priority=1, seed=i), 0.0) for i, rid in enumerate(("old", "new"))}
    plan = sched.step(0.0)
    assert plan.batch_size == 2 and not plan.preempted
    return sched, sids


def test_a_waiting_request_preempts_the_lowest_ranked_running_one_and_runs_in_that_step() -> None:
    sched, sids = _busy_with_low()
    now = sched.step(0.1).end                       # both decoding
    sched.add(req("urgent", max_tokens=3), now)
    plan = sched.step(now)
    assert plan.preempted == (sids["new"],)        # lowest rank: low priority, then latest arrival
    assert "urgent" in {o.request_id for o in plan.outputs if o.token_ids}  # its first token, now
    assert sched.stats().preemptions_total == 1
    assert sched.stats().extra["priority_preemptions_total"] == 1
    _, plans, finals = drain(sched, plan.end)
    assert _finish_order(plans)[0] == "urgent"
    assert finals["new"].timing is not None and finals["new"].timing.preemptions == 1
    solo = Scheduler(BASE)
    solo.add(req("new", max_tokens=10, priority=1, seed=1), 0.0)
    assert len(drain(solo)[0]["new"]) == 10 and sched.pool.used == 0


def test_without_preemption_for_waiting_the_request_waits_for_a_slot_as_in_vllm_v1() -> None:
    sched, _ = _busy_with_low(preempt_for_waiting=False)
    now = sched.step(0.1).end
    sched.add(req("urgent", max_tokens=3), now)
    plan = sched.step(now)
    assert not plan.preempted and "urgent" not in {o.request_id for o in plan.outputs}
    _, plans, _ = drain(sched, plan.end)
    assert sched.stats().preemptions_total == 0
    assert _finish_order(plans)[:2] in (["old", "new"], ["new", "old"])  # the batch ends first


def test_an_equal_or_lower_rank_never_preempts() -> None:
    sched, _ = _busy_with_low()
    now = sched.step(0.1).end
    sched.add(req("also-low", priority=1), now)    # same priority, later arrival
    sched.add(req("lowest", priority=3), now)
    plan = sched.step(now)
    assert not plan.preempted
    drain(sched, plan.end)
    assert sched.stats().preemptions_total == 0


def test_kv_shortage_preempts_the_lowest_ranked_not_the_newest_under_priority() -> None:
    tight = replace(BASE, kv_blocks=6, max_batch=4)   # 3 blocks each for two prompts of 8
    victims = {}
    for policy in ("fcfs", "priority"):
        sched = Scheduler(tight, policy=policy)      # type: ignore[arg-type]
        low = sched.add(req("low", 8, max_tokens=12, priority=1, seed=1), 0.0)
        sched.step(0.0)
        high = sched.add(req("high", 8, max_tokens=12, seed=2), 0.0)
        preempted: list[int] = []
        now = 0.0
        while not preempted:
            plan = sched.step(now)
            preempted.extend(plan.preempted)
            now = plan.end
        victims[policy] = preempted[0]
        assert {low, high} == {0, 1}
    assert victims == {"fcfs": 1, "priority": 0}    # fcfs: the newest admitted; priority: the low one


def test_repeated_prefix_skips_prefill_and_counts_cached_tokens() -> None:
    sched = Scheduler(BASE)
    prompt = tuple(range(1000, 1040))                # 40 tokens = 10 full blocks of 4
    sched.add(req("a", prompt), 0.0)
    drain(sched)
    sched.add(req("b", (*prompt[:32], 7, 7, 7, 7, 7)), 0.0)   # shares 8 blocks
    plan = sched.step(0.0)
    assert plan.prefill_tokens == 5
    _, _, finals = drain(sched, plan.end)
    assert finals["b"].timing is not None and finals["b"].timing.cached_prompt_tokens == 32
    stats = sched.stats()
    assert (stats.prefix_cache_queries, stats.prefix_cache_hits) == (40 + 37, 32)


def test_fully_cached_prompt_still_computes_its_last_token() -> None:
    sched = Scheduler(BASE)
    prompt = tuple(range(2000, 2016))
    sched.add(req("a", prompt), 0.0)
    drain(sched)
    sched.add(req("b", prompt), 0.0)
    assert sched.step(0.0).prefill_tokens == 1


def test_prefix_cache_is_keyed_by_images_and_can_be_turned_off() -> None:
    prompt = tuple(range(3000, 3016))
    sched = Scheduler(BASE)
    sched.add(req("a", prompt, image_digest="cat"), 0.0)
    drain(sched)
    sched.add(req("b", prompt, image_digest="dog"), 0.0)
    assert sched.step(0.0).prefill_tokens == 16
    off = Scheduler(replace(BASE, prefix_caching=False))
    off.add(req("a", prompt), 0.0)
    drain(off)
    off.add(req("b", prompt), 0.0)
    assert off.step(0.0).prefill_tokens == 16


def test_lru_evicts_unreferenced_cached_blocks_when_space_is_needed() -> None:
    pool = BlockPool(3)
    blocks = [pool.allocate() for _ in range(3)]
    for i, b in enumerate(blocks):
        pool.register(b, 10 + i)
    for b in blocks:
        pool.release(b)
    assert (pool.available, pool.cached) == (3, 3)
    assert pool.lookup(10) == blocks[0]              # touched: now most recently used
    pool.release(blocks[0])
    pool.allocate()                                  # evicts the least recently used: hash 11
    assert pool.lookup(11) is None
    assert pool.lookup(10) == blocks[0] and pool.lookup(12) == blocks[2]


def test_preemption_when_kv_runs_out_and_the_victim_finishes_with_the_same_tokens() -> None:
    tight = replace(BASE, kv_blocks=12, max_batch=4)
    requests = [req(f"r{i}", 8, max_tokens=20, seed=i) for i in range(3)]
    sched = Scheduler(tight)
    for r in requests:
        sched.add(r, 0.0)
    tokens, plans, finals = drain(sched)
    assert any(p.preempted for p in plans)
    assert sched.stats().preemptions_total >= 1
    assert sum(f.timing.preemptions for f in finals.values() if f.timing) >= 1
    alone = {}
    for r in requests:                               # each run alone on an ample cache
        solo = Scheduler(BASE)
        solo.add(r, 0.0)
        alone.update(drain(solo)[0])
    assert tokens == alone
    assert all(len(t) == 20 for t in tokens.values())
    assert sched.pool.used == 0


def test_full_waiting_queue_raises_overloaded_with_retry_after() -> None:
    sched = Scheduler(replace(BASE, max_waiting=2, max_batch=1))
    for i in range(3):                               # one runs, two wait
        sched.add(req(f"r{i}"), 0.0)
        if i == 0:
            sched.step(0.0)
    with pytest.raises(EngineOverloaded) as err:
        sched.add(req("x"), 0.0)
    assert 1.0 <= err.value.retry_after_s <= 60.0


def test_retry_after_follows_the_drain_rate() -> None:
    slow = replace(BASE, max_waiting=200, max_batch=1, step_overhead_ms=100.0)
    sched = Scheduler(slow)
    assert sched.retry_after(0.0) == 1.0             # nothing measured yet: the floor
    for i in range(70):                              # one request per 102 ms step
        sched.add(req(f"r{i}", 4, max_tokens=1), 0.0)
    _, plans, _ = drain(sched)
    now = plans[-1].end
    for i in range(50):
        sched.add(req(f"w{i}", 4, max_tokens=1), now)
    assert sched.retry_after(now) == pytest.approx(51 * 0.102, rel=0.02)
    for i in range(150):
        sched.add(req(f"x{i}", 4, max_tokens=1), now)
    assert sched.retry_after(now) == pytest.approx(201 * 0.102, rel=0.02)
    assert sched.retry_after(now + 3600) == 60.0     # a stale rate: capped, not hours


def test_context_window_is_enforced_with_openai_wording() -> None:
    sched = Scheduler(replace(BASE, kv_blocks=1000))
    with pytest.raises(ContextLengthError, match=r"maximum context length is 512 tokens.*510 in the messages, 10"):
        sched.add(req("big", 510, max_tokens=10), 0.0)
    with pytest.raises(ContextLengthError, match="max_tokens"):
        sched.add(req("zero", 8, max_tokens=0), 0.0)
    sched.add(req("fits", 502, max_tokens=10), 0.0)


def test_request_that_can_never_fit_the_kv_cache_is_an_oom() -> None:
    sched = Scheduler(replace(BASE, kv_blocks=4))    # 16 tokens of KV
    with pytest.raises(EngineOOM, match="needs 5 KV blocks"):
        sched.add(req("big", 10, max_tokens=10), 0.0)


def test_cancel_frees_slot_and_blocks_at_the_next_step() -> None:
    sched = Scheduler(replace(BASE, max_batch=1, prefix_caching=False))
    a = sched.add(req("a", 8, max_tokens=50), 0.0)
    sched.add(req("b"), 0.0)
    sched.step(0.0)
    assert sched.pool.used > 0 and sched.num_waiting == 1
    sched.cancel(a)
    plan = sched.step(0.0)
    assert [o.request_id for o in plan.outputs] == ["b"]    # b admitted in a's place
    assert sched.num_running == 1 and sched.num_waiting == 0
    tokens, _, _ = drain(sched, plan.end)
    assert "a" not in tokens and sched.pool.used == 0


def test_cancel_by_request_id_drops_a_waiting_request() -> None:
    sched = Scheduler(replace(BASE, max_batch=1))
    sched.add(req("a"), 0.0)
    sched.add(req("b"), 0.0)
    sched.cancel_request("b")
    tokens, _, _ = drain(sched)
    assert list(tokens) == ["a"]


def test_same_seed_same_text_and_other_seeds_differ() -> None:
    def run(r: EngineRequest, rng_seed: int) -> list[int]:
        sched = Scheduler(replace(BASE, output_len_sigma=0.0), rng=random.Random(rng_seed))
        sched.add(r, 0.0)
        return drain(sched)[0][r.request_id]

    prompt = tuple(range(50, 70))
    seeded = EngineRequest("s", prompt, 30, temperature=0.8, seed=42)
    assert run(seeded, 1) == run(seeded, 2)
    assert run(seeded, 1) != run(replace(seeded, seed=43), 1)
    assert run(seeded, 1) != run(replace(seeded, n_index=1), 1)
    greedy = EngineRequest("g", prompt, 30, temperature=0.0)
    assert run(greedy, 1) == run(replace(greedy, seed=9, n_index=3), 2)   # argmax ignores seed
    fresh = EngineRequest("f", prompt, 30, temperature=1.0)
    assert run(fresh, 1) != run(fresh, 2)                                 # unseeded: new sample


def test_natural_length_stops_and_max_tokens_truncates() -> None:
    short = replace(BASE, output_len_median=5.0, output_len_sigma=0.0)
    sched = Scheduler(short)
    sched.add(req("stop", max_tokens=100), 0.0)
    sched.add(req("cut", max_tokens=3), 0.0)
    tokens, _, finals = drain(sched)
    assert (finals["stop"].finish_reason, len(tokens["stop"])) == ("stop", 5)
    assert (finals["cut"].finish_reason, len(tokens["cut"])) == ("length", 3)


def test_stop_token_ends_the_answer_without_emitting_it() -> None:
    sched = Scheduler(BASE)
    sched.add(req("free", 8, max_tokens=30), 0.0)
    full = drain(sched)[0]["free"]
    stop = full[5]
    sched.add(req("free", 8, max_tokens=30, stop_token_ids=(stop,)), 0.0)
    tokens, _, finals = drain(sched)
    assert tokens.get("free", []) == full[:full.index(stop)]
    assert finals["free"].finish_reason == "stop"


def test_stats_count_tokens_and_kv_usage() -> None:
    sched = Scheduler(BASE)
    sched.add(req("a", 8, max_tokens=4), 0.0)
    sched.step(0.0)
    mid = sched.stats()
    assert (mid.running, mid.kv_blocks_used, mid.kv_blocks_total) == (1, 2, 64)
    drain(sched)
    end = sched.stats()
    assert (end.prompt_tokens_total, end.generation_tokens_total, end.running) == (8, 4, 0)
    assert end.extra["kv_blocks_cached"] == 2       # the two full prompt blocks stay cached


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_workloads_keep_the_invariants(data: st.DataObject) -> None:
    """Arrivals, shared prefixes, priorities, tight KV and cancels in any order, under either
    policy: slots and blocks stay within limits, every request not cancelled completes with its
    solo tokens (preempted or not), and nothing leaks."""
    profile = replace(BASE, kv_blocks=data.draw(st.integers(10, 16)), max_batch=data.draw(st.integers(1, 5)),
                      max_batched_tokens=data.draw(st.integers(4, 40)), max_waiting=100)
    shared = tuple(range(500, 516))
    policy = data.draw(st.sampled_from(["fcfs", "priority"]))
    sched = Scheduler(profile, policy=policy, preempt_for_waiting=data.draw(st.booleans()))
    now, added = 0.0, {}
    cancelled: set[str] = set()
    tokens: dict[str, list[int]] = {}
    for i in range(data.draw(st.integers(1, 10))):
        prefix = shared[: data.draw(st.sampled_from([0, 4, 8, 16]))]
        r = req(f"r{i}", (*prefix, *range(i * 10, i * 10 + data.draw(st.integers(1, 9)))),
                max_tokens=data.draw(st.integers(1, 12)), seed=i, priority=data.draw(st.integers(0, 2)))
        added[r.request_id] = (sched.add(r, now), r)
        for _ in range(data.draw(st.integers(0, 3))):
            plan = sched.step(now)
            now = plan.end
            for out in plan.outputs:
                tokens.setdefault(out.request_id, []).extend(out.token_ids)
            assert sched.num_running <= profile.max_batch
            assert 0 <= sched.pool.used <= profile.kv_blocks
        if data.draw(st.booleans()) and i % 3 == 0:
            sched.cancel(added[r.request_id][0])
            cancelled.add(r.request_id)
    more, _, _ = drain(sched, now)
    for rid, toks in more.items():
        tokens.setdefault(rid, []).extend(toks)
    assert sched.pool.used == 0 and not sched.has_work()
    for rid, (_, r) in added.items():
        if rid in cancelled:
            continue
        solo = Scheduler(replace(BASE, kv_blocks=1000))
        solo.add(r, 0.0)
        assert tokens[rid] == drain(solo)[0][rid]
