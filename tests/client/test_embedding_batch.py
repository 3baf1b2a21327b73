"""Embedding micro-batching (opt-in ``embedding_batch=``): concurrent single-input callers share
requests and each gets exactly the answer it would have got alone; a bad input fails only its
own caller. The split (pure) and both clients against the reference server."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import llmclient
from llmclient.features.batch import BatchConfig, Batcher, batch_config, batch_key, split_answer
from tests._both import Drive
from tests.conftest import RefServer

MODEL = "text-embedding-3-small"
HANG_GUARD_S = 10.0  # bounds a hang only: nothing here is timed


def test_a_combined_answer_is_split_back_by_index_and_renumbered() -> None:
    answer = {"object": "list", "model": MODEL, "usage": {"prompt_tokens": 30, "total_tokens": 30},
              "data": [{"index": i, "embedding": [float(i)]} for i in (2, 0, 1, 3)]}
    first, second = split_answer(answer, [1, 3])
    assert [d["embedding"] for d in first["data"]] == [[0.0]]
    assert [(d["index"], d["embedding"]) for d in second["data"]] == [(0, [1.0]), (1, [2.0]), (2, [3.0])]
    assert first["usage"] == {"prompt_tokens": 8, "total_tokens": 8}  # shared by inputs
    with pytest.raises(ValueError, match="3 items for 4 inputs"):
        split_answer({**answer, "data": answer["data"][:3]}, [1, 3])


def test_only_plain_calls_of_one_model_and_credential_share_a_request() -> None:
    body = {"model": MODEL, "input": "a", "encoding_format": "base64"}
    assert batch_key("u", "s", body, plain=True) == batch_key("u", "s", {**body, "input": ["b", "c"]}, True)
    assert batch_key("u", "s", body, True) != batch_key("u", "other", body, True)
    assert batch_key("u", "s", body, plain=False) is None  # its own headers, query or body
    assert batch_key("u", "s", {**body, "extra": 1}, True) is None
    assert batch_key("u", "s", {**body, "input": []}, True) is None
    assert batch_config(True) == BatchConfig() and batch_config(None) is None
    with pytest.raises(ValueError, match="embedding_batch"):
        batch_config({"max_inputs": 0})


def _embed(drive: Drive, client: Any, text: str) -> Any:
    return drive(client.embeddings.create(model=MODEL, input=text))


def test_concurrent_callers_share_requests_and_get_their_own_answers(drive: Drive, ref_server: RefServer) -> None:
    batched = drive.client(base_url=ref_server.base_url, api_key="k", embedding_batch={"window_ms": 200})
    alone = drive.client(base_url=ref_server.base_url, api_key="k")
    texts = [f"input number {i} " * (1 + i % 3) for i in range(16)]
    answers = drive.gather([(lambda t=t: batched.embeddings.create(model=MODEL, input=t)) for t in texts],
                           workers=16)
    for text, answer in zip(texts, answers, strict=True):
        assert len(answer.data) == 1 and answer.data[0].index == 0
        assert answer.data[0].embedding == _embed(drive, alone, text).data[0].embedding
    stats = batched._ctx.batcher.stats()
    assert stats["calls"] == 16 and stats["requests"] < 16
    # Each answer carries the timings and trace id of the request that carried its input.
    assert all(a.timings.total_ms is not None and a.timings.batched >= 1 for a in answers)
    shared = [a for a in answers if a.timings.batched > 1]
    assert shared, [a.timings.batched for a in answers]
    for a in shared:
        riders = [b for b in answers if b.trace_id == a.trace_id]
        assert len(riders) == a.timings.batched and all(b.timings is a.timings for b in riders)


def test_a_bad_input_fails_only_its_own_caller(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", embedding_batch={"window_ms": 200})
    texts = ["fine", "word " * 9000, "also fine"]  # the second is past the model's 8192 tokens

    def one(text: str) -> Any:
        async def run() -> Any:
            try:
                return await client.embeddings.create(model=MODEL, input=text)
            except llmclient.BadRequestError as exc:
                return exc

        if drive.is_async:
            return run
        return lambda: _or_error(lambda: client.embeddings.create(model=MODEL, input=text))

    results = drive.gather([one(t) for t in texts], workers=3)
    assert isinstance(results[1], llmclient.BadRequestError)
    assert not isinstance(results[0], Exception) and not isinstance(results[2], Exception)


def _or_error(fn: Any) -> Any:
    try:
        return fn()
    except llmclient.BadRequestError as exc:
        return exc


class _Interrupted(BaseException):
    """Not an Exception: what a cancelled task or a Ctrl-C raises out of a send."""


def test_every_caller_of_a_batch_wakes_with_its_error_whatever_ends_the_send() -> None:
    # The batch's send raises a BaseException: each caller gets it, none waits forever (the async
    # copy once caught Exception only and left its callers' futures unresolved).
    config = BatchConfig(window_ms=1000, max_inputs=2)  # the second call fills the batch
    body = {"model": MODEL, "input": "x"}
    key = ("u", "s", MODEL, None, None, None)

    def sync_send(_body: dict[str, Any]) -> Any:
        raise _Interrupted("send ended")

    sync_batcher = Batcher(config)
    errors: list[BaseException] = []

    def caller() -> None:
        try:
            sync_batcher.submit(key, body, sync_send)
        except _Interrupted as exc:
            errors.append(exc)

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_GUARD_S)
    assert len(errors) == 2 and sync_batcher.stats() == {"calls": 2, "requests": 1}

    async def async_send(_body: dict[str, Any]) -> Any:
        raise _Interrupted("send ended")

    async def go() -> list[Any]:
        batcher = Batcher(config)
        calls = [batcher.asubmit(key, body, async_send) for _ in range(2)]
        outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), HANG_GUARD_S)
        return [*outcomes, batcher.stats()]

    first, second, stats = asyncio.run(go())
    assert isinstance(first, _Interrupted) and isinstance(second, _Interrupted)
    assert stats == {"calls": 2, "requests": 1}
