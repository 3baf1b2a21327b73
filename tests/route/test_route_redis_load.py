"""In-flight counts shared across processes through a real redis-server: calls another process
holds on a replica count against that replica's bound here, so this process spills the same key
to the next replica; when that process closes, its counts leave the fleet's view. Redis down:
no shared counts, calls unaffected. Sync and async; waits are bounded loops, never timing
asserts."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmclient import Replicas
from llmclient.features.route.key import route_key
from llmclient.features.route.shared import LOAD_STALE_S, others_load
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server
from tests.route._common import MODEL, chat, dead_port

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 20.0  # an upper bound for the refreshes (0.25 s), never a timing assert
HELD = 4


def test_others_load_counts_fresh_fields_of_other_processes() -> None:
    fields = {b"me": b"5 100.0", b"p1": b"2 99.0", "p2": "3 100.5", b"old": b"7 90.0", b"bad": b"x"}
    total, stale = others_load(fields, "me", now_wall=101.0)
    assert total == 5 and sorted(stale) == ["bad", "old"]
    assert others_load({}, "me", 0.0) == (0, [])
    assert others_load({"p": f"1 {100.0 - LOAD_STALE_S - 1}"}, "me", 100.0) == (0, ["p"])


@pytest.fixture(scope="module")
def pair() -> Iterator[list[RefServer]]:
    servers = [start_ref_server() for _ in range(2)]
    yield servers
    for server in servers:
        stop_ref_server(server)


_HOLDER = """
import sys
import llmclient
a, b, redis_url, key, n = sys.argv[1:6]
# balance=100: this process keeps every call on the key's first choice, whatever its load
client = llmclient.OpenAI(api_key="k", max_retries=0, base_url=llmclient.Replicas([a, b], redis=redis_url, balance=100))
streams = [client.chat.completions.create(model="gpt-4o-mini", max_tokens=2, prompt_cache_key=key, stream=True,
                                          messages=[{"role": "user", "content": "hi"}]) for _ in range(int(n))]
assert all(s.timings.replica == a for s in streams), [s.timings.replica for s in streams]
print("holding", flush=True)
sys.stdin.readline()
for s in streams:
    s.close()
client._router.shared.close()
client._router.shared._thread.join(5)
print("done", flush=True)
"""


def _key_on(router: object, index: int) -> str:
    return next(k for k in (f"tenant-{n}" for n in range(500))
                if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == index)  # type: ignore[attr-defined]


def _wait(check: object) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)
    return bool(check())  # type: ignore[operator]


def test_another_processes_calls_count_against_a_replicas_bound(drive: Drive, pair: list[RefServer],
                                                                 redis_url: str) -> None:
    a, b = (s.base_url for s in pair)
    client = drive.client(api_key="k", max_retries=0, base_url=Replicas([a, b], redis=redis_url))
    router = client._router
    key = _key_on(router, 0)  # its first choice is replica a

    def ask() -> str:
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("l", ["hi"]), max_tokens=2,
                                                      prompt_cache_key=key))
        return str(answer.timings.replica)

    assert ask() == a  # nobody else holds a: the key's own replica
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, a, b, redis_url, key, str(HELD)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        line = holder.stdout.readline()
        assert line.strip() == "holding", holder.stderr.read() if holder.stderr else line
        assert _wait(lambda: router.shared.others == [HELD, 0]), router.shared.others
        stats = {r["url"]: r for r in client.replica_stats()}
        assert stats[a]["in_flight"] == 0 and stats[a]["fleet_in_flight"] == HELD
        # 4 in flight on a (elsewhere), 0 on b: a is at its bound ceil(1.25 x 5 / 2) = 4
        assert ask() == b
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "done"
        assert holder.wait(60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert _wait(lambda: router.shared.others == [0, 0]), router.shared.others  # it closed: gone at once
    assert ask() == a
    router.shared.close()


def test_redis_down_no_shared_counts_and_calls_unaffected(drive: Drive, pair: list[RefServer]) -> None:
    nowhere = f"redis://127.0.0.1:{dead_port()}/0"
    a, b = (s.base_url for s in pair)
    client = drive.client(api_key="k", max_retries=0, base_url=Replicas([a, b], redis=nowhere))
    key = _key_on(client._router, 0)
    for _ in range(3):
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("d", ["hi"]), max_tokens=2,
                                                      prompt_cache_key=key))
        assert answer.timings.replica == a
    assert _wait(lambda: client._router.shared.errors > 0)
    assert client._router.shared.others == [0, 0]
    assert all(r["fleet_in_flight"] == r["in_flight"] == 0 for r in client.replica_stats())
    client._router.shared.close()
