"""Failover before the first token, per replica: with ``hedge=`` and several replicas, the
deadline after which a call is also started on the next replica is learned from the calls whose
first choice was that replica (its own quantile of time to first token), or set per replica
(``Replica(url, hedge_after_ms=...)``). Real reference-server processes; sync and async;
assertions on counts, on which replica served, and on lower bounds the server guarantees."""

from __future__ import annotations

import pytest

from llmclient import HedgeConfig, Replica, Replicas
from llmclient.features.route.key import route_key
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, start_ref_server, stop_ref_server
from tests.route._common import MODEL, chat, dead_port

STALL_MS = 300


def _key_on(router: object, index: int, prefix: str = "tenant") -> str:
    return next(k for k in (f"{prefix}-{n}" for n in range(500))
                if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == index)  # type: ignore[attr-defined]


def test_first_choice_is_the_plans_first_and_takes_nothing() -> None:
    urls = [f"http://127.0.0.1:{dead_port()}/v1" for _ in range(3)]
    router = Replicas(urls).router()
    for n in range(20):
        body = {"model": MODEL, "messages": chat(f"s{n}", ["hi"])}
        first = router.first_choice("/chat/completions", body)
        assert first.url == urls[router.plan(route_key("/chat/completions", body))[0]]
    assert all(h.in_flight == 0 for h in router.health)
    assert router.first_choice("/chat/completions", None, pin=urls[2]).url == urls[2]


def test_hedge_after_ms_is_checked() -> None:
    with pytest.raises(ValueError, match="hedge_after_ms"):
        Replicas([Replica("http://a:1/v1", hedge_after_ms=-1)])
    assert "hedge_after_ms=50" in repr(Replica("http://a:1/v1", hedge_after_ms=50))


def test_each_replica_learns_its_own_deadline(drive: Drive) -> None:
    slow = start_ref_server("--faults", f"stall_ms={STALL_MS}")
    fast = start_ref_server()
    try:
        client = drive.client(api_key="k", base_url=[slow.base_url, fast.base_url], max_retries=0,
                              hedge=HedgeConfig(min_samples=3))
        drive(client.models.list())  # HTTP/2 known (the hedge needs it); faults spare GETs
        router = client._router
        for index in (0, 1):
            for n in range(3):  # min_samples: learned, never hedged yet
                answer = drive(client.chat.completions.create(
                    model=MODEL, messages=chat(f"l{index}{n}", ["hi"]), max_tokens=2,
                    prompt_cache_key=_key_on(router, index, f"k{n}")))
                assert answer.timings.replica == router.replicas[index].url and not answer.timings.hedged
        stats = client.hedge_stats()
        slow_track = stats[f"/chat/completions {MODEL} {slow.base_url}"]
        fast_track = stats[f"/chat/completions {MODEL} {fast.base_url}"]
        assert slow_track["samples"] == 3 and fast_track["samples"] == 3  # one track per replica
        assert slow_track["delay_ms"] >= STALL_MS  # its own p95: every one of its calls stalled
    finally:
        stop_ref_server(fast)
        stop_ref_server(slow)


def test_a_replicas_own_deadline_starts_the_copy(drive: Drive) -> None:
    staller = start_ref_server(FAULT_HEADERS, "--faults", "stall_ms=20000;times=1")
    plain = start_ref_server()
    try:
        # nothing learned yet (min_samples=20) and no fleet-wide after_ms: only the staller's
        # own deadline can start a copy
        fleet = Replicas([Replica(staller.base_url, hedge_after_ms=100), plain.base_url])
        client = drive.client(api_key="k", base_url=fleet, max_retries=0, hedge=HedgeConfig())
        drive(client.models.list())
        key = _key_on(client._router, 0)
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("h", ["hi"]), max_tokens=2,
                                                      prompt_cache_key=key))
        assert answer.timings.hedge_won and answer.timings.replica == plain.base_url
        assert client.hedge_stats()[f"/chat/completions {MODEL} {staller.base_url}"]["hedges"] == 1
    finally:
        stop_ref_server(plain)
        stop_ref_server(staller)
