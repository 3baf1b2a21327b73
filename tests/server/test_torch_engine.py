"""The torch engine on CPU with the tiny configuration (skipped where torch is not installed)."""

import asyncio

import pytest

torch = pytest.importorskip("torch", reason="the torch engine needs the 'torch' extra")

from benchmarks.server.engine.base import ContextLengthError, EngineError, EngineOOM, EngineRequest  # noqa: E402
from benchmarks.server.engine.torch_engine import BLOCK, TorchEngine, block_hashes  # noqa: E402

PROMPT = tuple(range(5, 5 + 3 * BLOCK + 5))  # three whole blocks and a tail


def req(rid: str, prompt=PROMPT, max_tokens=12, **kw) -> EngineRequest:
    return EngineRequest(request_id=rid, prompt_token_ids=prompt, max_tokens=max_tokens, temperature=0.0, **kw)


async def collect(engine, request):
    out = []
    timing = None
    async for ev in engine.submit(request):
        out.extend(ev.token_ids)
        if ev.finish_reason:
            timing = ev.timing
    return out, timing


def run(coro):
    return asyncio.run(coro)


async def fresh_engine(**kw) -> TorchEngine:
    engine = TorchEngine("tiny", device="cpu", **kw)
    await engine.start()
    return engine


def test_batched_decode_gives_the_same_tokens_as_alone():
    async def main():
        alone = await fresh_engine(prefix_cache_entries=0)
        solo = [await collect(alone, req(f"s{i}", prompt=PROMPT[i:])) for i in range(4)]
        await alone.stop()
        batched = await fresh_engine(prefix_cache_entries=0)
        together = await asyncio.gather(*(collect(batched, req(f"b{i}", prompt=PROMPT[i:])) for i in range(4)))
        await batched.stop()
        return [t for t, _ in solo], [t for t, _ in together]

    solo, together = run(main())
    assert solo == together
    assert all(len(t) == 12 for t in solo)


def test_prefix_reuse_gives_the_same_tokens_and_skips_prefill():
    async def main():
        engine = await fresh_engine()
        first, t1 = await collect(engine, req("a"))
        second, t2 = await collect(engine, req("b"))
        stats = engine.stats()
        await engine.stop()
        cold = await fresh_engine(prefix_cache_entries=0)
        again, t3 = await collect(cold, req("c"))
        await cold.stop()
        return first, second, again, t1, t2, t3, stats

    first, second, again, t1, t2, t3, stats = run(main())
    assert first == second == again
    assert t1.cached_prompt_tokens == 0 and t3.cached_prompt_tokens == 0
    assert t2.cached_prompt_tokens == 3 * BLOCK
    assert stats.prefix_cache_hits == 1 and stats.generation_tokens_total == 24


def test_cancelled_request_frees_its_slot():
    async def main():
        engine = await fresh_engine(max_batch=1)
        stream = engine.submit(req("long", max_tokens=200))
        await stream.__anext__()
        await stream.aclose()
        tokens, _ = await asyncio.wait_for(collect(engine, req("next", max_tokens=3)), 30)
        await engine.stop()
        return tokens

    assert len(run(main())) == 3


def test_sampling_is_seeded():
    async def main():
        engine = await fresh_engine()
        a, _ = await collect(engine, EngineRequest("x", PROMPT, 8, temperature=1.0, seed=7))
        b, _ = await collect(engine, EngineRequest("y", PROMPT, 8, temperature=1.0, seed=7))
        c, _ = await collect(engine, EngineRequest("z", PROMPT, 8, temperature=1.0, seed=8))
        await engine.stop()
        return a, b, c

    a, b, c = run(main())
    assert a == b and a != c


def test_context_window_and_out_of_memory_are_clean_errors():
    async def main():
        engine = await fresh_engine(max_len=64)
        with pytest.raises(ContextLengthError, match="context window of 64"):
            engine.submit(req("big", max_tokens=100))
        await engine.stop()
        huge = TorchEngine("tiny", device="cpu", max_batch=10**7)  # ~10 TB of KV cache
        with pytest.raises(EngineOOM, match="out of memory"):
            await huge.start()

    run(main())


def test_block_hashes_chain_and_mix_images():
    h = block_hashes(PROMPT)
    assert len(h) == 3 and h[:2] == block_hashes(PROMPT[: 2 * BLOCK])
    assert block_hashes(PROMPT, "img")[0] != h[0]


def test_a_sampled_request_without_a_seed_gets_its_tokens():
    # The request-id hash seeds the sampler; times 1000 it once overflowed torch's 64-bit seed,
    # the step raised, the step loop died and every request on the engine waited forever.
    async def go():
        engine = await fresh_engine()
        try:
            req = EngineRequest("a-request-id-whose-hash-is-large", tuple(range(1, 12)), 6, temperature=1.0)
            tokens, timing = await asyncio.wait_for(collect(engine, req), 30)
            assert len(tokens) == 6 and timing is not None
        finally:
            await engine.stop()

    asyncio.run(go())


def test_a_failing_step_fails_its_requests_and_the_engine_goes_on():
    async def go():
        engine = await fresh_engine()
        original = engine._prefill
        calls = []

        def broken(seq):
            calls.append(seq)
            if len(calls) == 1:
                raise ValueError("boom")
            return original(seq)

        engine._prefill = broken
        try:
            with pytest.raises(EngineError, match="boom"):
                await asyncio.wait_for(collect(engine, EngineRequest("a", (1, 2, 3), 4, temperature=0.0)), 30)
            tokens, _ = await asyncio.wait_for(collect(engine, EngineRequest("b", (1, 2, 3), 4, temperature=0.0)), 30)
            assert len(tokens) == 4
        finally:
            await engine.stop()

    asyncio.run(go())


def test_the_server_answers_through_the_torch_engine():
    """End to end: the reference server on the torch engine answers a sampled call and stream
    (a step that raised used to end the engine's loop, and every later request hung)."""
    import llmclient
    from tests.conftest import start_ref_server, stop_ref_server

    server = start_ref_server("--engine", "torch", profile="tiny")
    try:
        client = llmclient.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30)
        model = client.models.list().data[0].id
        messages = [{"role": "user", "content": "Tell me about the sea."}]
        answer = client.chat.completions.create(model=model, messages=messages, max_tokens=8)
        assert answer.usage.completion_tokens == 8 and answer.timings.server_timing["decode"] >= 0
        chunks = [c for c in client.chat.completions.create(model=model, messages=messages, max_tokens=8, stream=True)
                  if c.choices and c.choices[0].delta.content]
        assert chunks
    finally:
        stop_ref_server(server)
