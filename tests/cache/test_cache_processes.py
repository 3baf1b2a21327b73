"""Two processes share entries through SQLite and Redis (real subprocesses)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from llmclient.cache import RedisBackend, ResponseCache, replay_response, scope_hash

from ._samples import CHAT_RESPONSE

CHILD = """
import sys
from llmclient.cache import ResponseCache, RedisBackend, scope_hash
spec, prefix, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
backend = RedisBackend(spec, prefix=prefix) if spec.startswith("redis") else spec
cache = ResponseCache(backend)
response = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "c"},
                         "finish_reason": "stop"}]}
for i in range(count):
    plan = cache.plan_for(base_url="http://127.0.0.1:1/v1", path="/chat/completions",
                          body={"model": "m", "messages": [{"role": "user", "content": f"{worker}-{i}"}],
                                "temperature": 0}, scope=scope_hash("sk-shared"))
    assert cache.store_response(plan, {**response, "id": f"{worker}-{i}"}) is not None
print("stored", count)
"""


def _plan(cache: ResponseCache, content: str):  # type: ignore[no-untyped-def]
    return cache.plan_for(base_url="http://127.0.0.1:1/v1", path="/chat/completions",
                          body={"model": "m", "messages": [{"role": "user", "content": content}],
                                "temperature": 0}, scope=scope_hash("sk-shared"))


def _run_children(spec: str, prefix: str, workers: int, count: int) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, spec, prefix, str(w), str(count)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(workers)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
        assert out.strip() == f"stored {count}".encode()


def _check_all(cache: ResponseCache, workers: int, count: int) -> None:
    for w in range(workers):
        for i in range(count):
            hit = cache.lookup(_plan(cache, f"{w}-{i}"))
            assert hit is not None and replay_response(hit)["id"] == f"{w}-{i}"


def test_processes_share_sqlite(tmp_path: Path) -> None:
    spec = f"sqlite://{tmp_path}/shared.db"
    parent = ResponseCache(spec)
    parent.store_response(_plan(parent, "from-parent"), CHAT_RESPONSE)  # type: ignore[arg-type]
    _run_children(spec, "", workers=3, count=40)  # concurrent writers on one file
    _check_all(parent, workers=3, count=40)
    parent.close()


def test_processes_share_redis(redis_url: str) -> None:
    prefix = f"shared-{uuid.uuid4().hex[:8]}:"
    parent = ResponseCache(RedisBackend(redis_url, prefix=prefix))
    _run_children(redis_url, prefix, workers=2, count=20)
    _check_all(parent, workers=2, count=20)
    parent.clear()
    parent.close()
