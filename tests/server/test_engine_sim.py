"""SimEngine (the simulated GPU's asyncio step loop) and the engine factory, on tiny-fast."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

import pytest

from benchmarks.server import engine as engine_pkg
from benchmarks.server.engine import (
    Engine,
    EngineError,
    EngineNotReady,
    EngineOverloaded,
    EngineRequest,
    SimEngine,
    TokenEvent,
    create_engine,
    load_profile,
)
from benchmarks.server.tokenizer import WORD_IDS, decode

T = TypeVar("T")
TINY = load_profile("tiny-fast")


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), timeout=20))


def request(rid: str, n: int = 12, **kw: object) -> EngineRequest:
    kw.setdefault("temperature", 0.0)
    kw.setdefault("max_tokens", 10)
    return EngineRequest(rid, tuple(range(200, 200 + n)), **kw)  # type: ignore[arg-type]


async def collect(engine: SimEngine, req: EngineRequest) -> list[TokenEvent]:
    return [event async for event in engine.submit(req)]


def test_all_names_exist_once() -> None:
    assert len(set(engine_pkg.__all__)) == len(engine_pkg.__all__)
    assert all(hasattr(engine_pkg, name) for name in engine_pkg.__all__)


def test_sim_engine_satisfies_the_engine_protocol() -> None:
    engine = create_engine("sim", "tiny-fast")
    assert isinstance(engine, Engine)
    assert (engine.name, engine.context_window) == ("sim", TINY.context_window)
    assert "tiny" in engine.device


def test_unknown_engine_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="unknown engine 'gpu9000'"):
        create_engine("gpu9000", TINY)


def test_not_ready_until_the_cold_start_ends() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        engine = SimEngine(TINY, cold_start_s=0.05)
        starting = asyncio.create_task(engine.start())
        await asyncio.sleep(0)
        before = engine.ready
        with pytest.raises(EngineNotReady):
            engine.submit(request("early"))
        await starting
        after = engine.ready
        await engine.stop()
        return before, after, engine.ready

    assert run(scenario) == (False, True, False)


def test_a_request_streams_tokens_and_ends_with_a_timing() -> None:
    async def scenario() -> list[TokenEvent]:
        engine = SimEngine(TINY)
        await engine.start()
        events = await collect(engine, request("a", max_tokens=6))
        await engine.stop()
        return events

    events = run(scenario)
    assert [e.finish_reason for e in events][-1] in ("stop", "length")
    assert all(e.finish_reason is None for e in events[:-1])
    tokens = [t for e in events for t in e.token_ids]
    timing = events[-1].timing
    assert timing is not None and timing.completion_tokens == len(tokens) <= 6
    assert timing.prompt_tokens == 12
    assert all(t in WORD_IDS or decode([t]) in ".,?!" for t in tokens)


def test_concurrent_requests_batch_and_match_their_solo_answers() -> None:
    reqs = [request(f"r{i}", n=8 + i, max_tokens=8) for i in range(7)]  # > max_batch of 4

    async def together() -> list[list[int]]:
        engine = SimEngine(TINY)
        await engine.start()
        results = await asyncio.gather(*(collect(engine, r) for r in reqs))
        await engine.stop()
        return [[t for e in events for t in e.token_ids] for events in results]

    async def solo() -> list[list[int]]:
        out = []
        for r in reqs:
            engine = SimEngine(TINY)
            await engine.start()
            out.append([t for e in await collect(engine, r) for t in e.token_ids])
            await engine.stop()
        return out

    assert run(together) == run(solo)


def test_closing_the_stream_early_frees_the_slot_and_blocks() -> None:
    async def scenario() -> tuple[int, int]:
        engine = SimEngine(replace(TINY, output_len_median=1000.0, output_len_sigma=0.0))
        await engine.start()
        stream = engine.submit(request("long", max_tokens=100))
        await anext(stream)
        await stream.aclose()                            # type: ignore[attr-defined]
        for _ in range(100):                             # until the loop has applied the cancel
            if not engine.scheduler.has_work():
                break
            await asyncio.sleep(0.005)
        stats = engine.stats()
        await engine.stop()
        return stats.running, stats.kv_blocks_used

    assert run(scenario) == (0, 0)


def test_full_queue_is_refused_at_submit() -> None:
    async def scenario() -> float:
        engine = SimEngine(replace(TINY, max_batch=1, max_waiting=2))
        await engine.start()
        streams = [engine.submit(request(f"q{i}")) for i in range(2)]
        try:
            engine.submit(request("over"))
        except EngineOverloaded as exc:
            return exc.retry_after_s
        finally:
            for s in streams:
                await s.aclose()                         # type: ignore[attr-defined]
            await engine.stop()
        raise AssertionError("no EngineOverloaded")

    assert run(scenario) >= 1.0


def test_stop_fails_requests_still_in_flight() -> None:
    async def scenario() -> None:
        engine = SimEngine(replace(TINY, output_len_median=1000.0, output_len_sigma=0.0))
        await engine.start()
        stream = engine.submit(request("doomed", max_tokens=100))
        await anext(stream)
        await engine.stop()
        with pytest.raises(EngineError, match="stopped"):
            await anext(stream)

    run(scenario)


def test_unseeded_sampling_differs_between_runs_but_seeded_does_not() -> None:
    async def answer(req: EngineRequest, rng_seed: int) -> list[int]:
        engine = SimEngine(replace(TINY, output_len_median=1000.0, output_len_sigma=0.0),
                           rng=random.Random(rng_seed))
        await engine.start()
        tokens = [t for e in await collect(engine, req) for t in e.token_ids]
        await engine.stop()
        return tokens

    async def scenario() -> tuple[bool, bool]:
        seeded = request("s", temperature=0.7, seed=5, max_tokens=20)
        fresh = request("f", temperature=0.7, max_tokens=20)
        return (await answer(seeded, 1) == await answer(seeded, 2),
                await answer(fresh, 1) == await answer(fresh, 2))

    assert run(scenario) == (True, False)


def test_a_failing_step_fails_requests_in_flight_instead_of_hanging() -> None:
    async def scenario() -> int:
        engine = SimEngine(TINY)
        await engine.start()
        real_step = engine.scheduler.step

        def broken(now: float) -> object:
            engine.scheduler.step = real_step        # type: ignore[method-assign]
            raise RuntimeError("injected scheduler bug")

        engine.scheduler.step = broken               # type: ignore[method-assign,assignment]
        with pytest.raises(EngineError, match="internal engine error"):
            await collect(engine, request("victim"))
        after = await collect(engine, request("next"))  # the loop survived
        await engine.stop()
        return len(after)

    assert run(scenario) >= 1


def test_a_repeated_prompt_is_served_from_the_prefix_cache() -> None:
    async def scenario() -> tuple[int, int, int]:
        engine = SimEngine(TINY)
        await engine.start()
        first = (await collect(engine, request("one", n=40)))[-1].timing
        second = (await collect(engine, request("two", n=40)))[-1].timing
        stats = engine.stats()
        await engine.stop()
        assert first is not None and second is not None
        return first.cached_prompt_tokens, second.cached_prompt_tokens, stats.prefix_cache_hits

    assert run(scenario) == (0, 39, 39)   # all 10 blocks, less the last token it must compute
