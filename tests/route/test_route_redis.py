"""Ejections shared across processes through a real redis-server: a replica one process found
dead is out for another process without that process failing on it; Redis down changes
nothing for the calls. Sync and async."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmclient import Replicas
from llmclient.features.route.key import route_key
from llmclient.features.route.shared import merge
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server
from tests.route._common import MODEL, chat, dead_port

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 20.0  # an upper bound for the other process's refresh (1 s), never a timing assert


def test_merge_takes_the_later_end_on_this_clock() -> None:
    assert merge(0.0, None, now_mono=100.0, now_wall=5000.0) == 0.0
    assert merge(0.0, 4999.0, now_mono=100.0, now_wall=5000.0) == 0.0  # already over
    assert merge(0.0, 5003.0, now_mono=100.0, now_wall=5000.0) == 103.0
    assert merge(110.0, 5003.0, now_mono=100.0, now_wall=5000.0) == 110.0


@pytest.fixture(scope="module")
def live() -> Iterator[RefServer]:
    server = start_ref_server()
    yield server
    stop_ref_server(server)


_OTHER_PROCESS = """
import sys
import llmclient
from llmclient.features.route.key import route_key
dead, live, redis_url, key = sys.argv[1:5]
client = llmclient.OpenAI(api_key="k", max_retries=0, base_url=llmclient.Replicas([dead, live], redis=redis_url))
answer = client.chat.completions.create(model="gpt-4o-mini", max_tokens=2, prompt_cache_key=key,
                                        messages=[{"role": "user", "content": "hi"}])
stats = {r["url"]: r for r in client.replica_stats()}
assert answer.timings.replica == live and stats[dead]["failed"] == 1, stats
client._router.shared.close()
client._router.shared._thread.join(5)
print("ejected", dead)
"""


def _key_on(router: object, index: int) -> str:
    return next(k for k in (f"tenant-{n}" for n in range(500))
                if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == index)  # type: ignore[attr-defined]


def test_a_replica_ejected_in_one_process_is_out_in_another(drive: Drive, live: RefServer, redis_url: str) -> None:
    dead = f"http://127.0.0.1:{dead_port()}/v1"
    client = drive.client(api_key="k", max_retries=0,
                          base_url=Replicas([dead, live.base_url], redis=redis_url))
    router = client._router
    key = _key_on(router, 0)  # its first choice is the dead replica
    out = subprocess.run([sys.executable, "-c", _OTHER_PROCESS, dead, live.base_url, redis_url, key],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + WAIT_S
    while router.shared.view[0] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert router.shared.view[0] is not None, "the other process's ejection never arrived"
    answer = drive(client.chat.completions.create(model=MODEL, messages=chat("r", ["hi"]), max_tokens=2,
                                                  prompt_cache_key=key))
    assert answer.timings.replica == live.base_url
    stats = {r["url"]: r for r in client.replica_stats()}
    assert stats[dead]["state"] == "down" and stats[dead]["failed"] == 0  # never tried here
    router.shared.close()


def test_redis_down_changes_nothing_for_the_calls(drive: Drive, live: RefServer) -> None:
    nowhere = f"redis://127.0.0.1:{dead_port()}/0"
    client = drive.client(api_key="k", max_retries=0, base_url=Replicas([live.base_url], redis=nowhere))
    for _ in range(3):
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("d", ["hi"]), max_tokens=2))
        assert answer.timings.replica == live.base_url
    deadline = time.monotonic() + WAIT_S
    while client._router.shared.errors == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client._router.shared.errors > 0  # it tried, failed, and the calls never noticed
    client._router.shared.close()
