"""Several replicas behind one client (``base_url=[...]``), against real reference-server
processes: affinity, failover when a connection cannot be made, a replica killed with SIGKILL,
per-replica keys, hedging onto the second choice, an uvicorn (HTTP/1.1-only) replica and one
behind nginx. Every test that takes ``drive`` runs on ``OpenAI`` and ``AsyncOpenAI``.

Assertions are on counts and on which replica served (``response.timings.replica``), never on
time.
"""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

import llmclient
from llmclient import HedgeConfig, Replica, Replicas
from llmclient.features.route.key import route_key
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server
from tests.route._common import MODEL, chat, dead_port

PROFILE = "h200-1b"


@pytest.fixture(scope="module")
def fleet() -> Iterator[list[RefServer]]:
    # a profile with prefix caching (the zero profile has none), and millisecond steps
    servers = [start_ref_server(FAULT_HEADERS, profile=PROFILE) for _ in range(3)]
    yield servers
    for server in servers:
        stop_ref_server(server)


def _prefix_hits(server: RefServer) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    match = re.search(r"^llm_prefix_cache_hits_total(?:\{[^}]*\})? ([0-9.e+]+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def test_a_conversation_stays_on_its_replica_and_hits_its_cache(drive: Drive, fleet: list[RefServer]) -> None:
    client = drive.client(api_key="k", base_url=[s.base_url for s in fleet], max_retries=0)
    served: list[str | None] = []
    turns: list[str] = []
    for n in range(4):
        turns.append(f"question {n} " * 20)
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat(drive.kind, turns), max_tokens=8))
        served.append(answer.timings.replica)
        turns.append(answer.choices[0].message.content or "ok")
    assert len(set(served)) == 1 and served[0] in [s.base_url for s in fleet]
    home = next(s for s in fleet if s.base_url == served[0])
    assert _prefix_hits(home) > 0  # the later turns reused the earlier ones' blocks there
    stats = client.replica_stats()
    assert sum(r["served"] for r in stats) == 4 and all(r["in_flight"] == 0 for r in stats)


def test_streams_are_routed_and_give_their_slot_back(drive: Drive, fleet: list[RefServer]) -> None:
    client = drive.client(api_key="k", base_url=[s.base_url for s in fleet], max_retries=0)
    stream = drive(client.chat.completions.create(model=MODEL, messages=chat("s", ["hi"]), max_tokens=8,
                                                   stream=True))
    assert len(drive.iterate(stream)) > 1
    assert stream.timings.replica in [s.base_url for s in fleet]
    assert all(r["in_flight"] == 0 for r in client.replica_stats())


def test_round_robin_spreads_and_least_loaded_works(drive: Drive, fleet: list[RefServer]) -> None:
    for policy in ("round_robin", "least_loaded"):
        client = drive.client(api_key="k", base_url=Replicas([s.base_url for s in fleet], policy=policy))
        seen = Counter(drive(client.chat.completions.create(model=MODEL, messages=chat("rr", ["hi"]),
                                                            max_tokens=2)).timings.replica for _ in range(6))
        assert set(seen) == {s.base_url for s in fleet}, policy


def test_an_unreachable_replica_fails_over_at_once(drive: Drive, fleet: list[RefServer]) -> None:
    dead = f"http://127.0.0.1:{dead_port()}/v1"  # nothing listens there
    client = drive.client(api_key="k", base_url=[dead, fleet[0].base_url], max_retries=0)
    router = client._router
    # keys whose first choice is the dead replica (stable hashes): they go on, nothing was sent
    keys = [k for k in (f"tenant-{n}" for n in range(200))
            if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == 0][:3]
    for key in keys:
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("f", ["hi"]), max_tokens=2,
                                                      prompt_cache_key=key))
        assert answer.timings.replica == fleet[0].base_url
    states = {r["url"]: r["state"] for r in client.replica_stats()}
    assert states[dead] == "down" and states[fleet[0].base_url] == "up"


def test_all_replicas_down_names_each_one(drive: Drive) -> None:
    urls = [f"http://127.0.0.1:{dead_port()}/v1" for _ in range(2)]
    client = drive.client(api_key="k", base_url=urls, max_retries=0)
    with pytest.raises(llmclient.APIConnectionError) as info:
        drive(client.chat.completions.create(model=MODEL, messages=chat("d", ["hi"]), max_tokens=2))
    assert all(url in str(info.value) for url in urls)


def test_a_replica_with_its_own_key(drive: Drive, fleet: list[RefServer]) -> None:
    locked = start_ref_server("--api-key", "replica-secret")
    try:
        client = drive.client(api_key="client-key", max_retries=0, base_url=Replicas(
            [Replica(locked.base_url, api_key="replica-secret")], policy="round_robin"))
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("k", ["hi"]), max_tokens=2))
        assert answer.timings.replica == locked.base_url
        wrong = drive.client(api_key="client-key", max_retries=0, base_url=[locked.base_url])
        with pytest.raises(llmclient.AuthenticationError):
            drive(wrong.chat.completions.create(model=MODEL, messages=chat("k", ["hi"]), max_tokens=2))
        # a call that fails over from a replica with a key of its own goes on with the client's
        dead = f"http://127.0.0.1:{dead_port()}/v1"
        mixed = drive.client(api_key="replica-secret", max_retries=0, base_url=Replicas(
            [Replica(dead, api_key="another-key"), locked.base_url], policy="round_robin"))
        for _ in range(2):  # one of the two starts on the dead replica
            answer = drive(mixed.chat.completions.create(model=MODEL, messages=chat("k", ["hi"]), max_tokens=2))
            assert answer.timings.replica == locked.base_url
    finally:
        stop_ref_server(locked)


def test_a_replica_killed_with_sigkill(drive: Drive, fleet: list[RefServer]) -> None:
    victim = start_ref_server(FAULT_HEADERS)
    try:
        urls = [victim.base_url, fleet[1].base_url]
        client = drive.client(api_key="k", base_url=Replicas(urls, policy="round_robin"), max_retries=2)
        # a stream under way on the victim: killed mid-stream, it raises as today
        stream = None
        for n in range(40):
            messages = chat(f"v{n}", ["hi"])
            stream = drive(client.chat.completions.create(model=MODEL, messages=messages, max_tokens=400,
                                                          stream=True, extra_headers={"x-fault": "slow_ms=100"}))
            if stream.timings.replica == victim.base_url:
                break
            drive(stream.close())
        assert stream is not None and stream.timings.replica == victim.base_url
        chunks = stream.__aiter__() if drive.is_async else iter(stream)  # one iterator, kept
        while True:  # until a token arrived: before that, a cut stream is sent again (resend)
            chunk = drive(chunks.__anext__()) if drive.is_async else next(chunks)
            if chunk.choices and chunk.choices[0].delta.content:
                break
        # and one on the victim that has sent only its role chunk (a token comes a second later)
        for n in range(40):
            quiet = drive(client.chat.completions.create(model=MODEL, messages=chat(f"q{n}", ["hi"]), max_tokens=1,
                                                         stream=True, extra_headers={"x-fault": "slow_ms=1000"}))
            if quiet.timings.replica == victim.base_url:
                break
            drive(quiet.close())
        assert quiet.timings.replica == victim.base_url
        quiet_chunks = quiet.__aiter__() if drive.is_async else iter(quiet)
        first = drive(quiet_chunks.__anext__()) if drive.is_async else next(quiet_chunks)
        assert not (first.choices and first.choices[0].delta.content)
        assert victim.process is not None
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.process.wait(10)
        with pytest.raises(llmclient.APIError):
            drive.iterate(chunks)
        # nothing of it had arrived: it is sent again, to the survivor, and completes
        rest = drive.iterate(quiet_chunks)
        assert any(c.choices and c.choices[0].delta.content for c in rest)
        # every later call is served: on the survivor, nothing sent twice
        served = Counter(drive(client.chat.completions.create(
            model=MODEL, messages=chat(f"after{n}", ["hi"]), max_tokens=2)).timings.replica for n in range(10))
        assert served == Counter({fleet[1].base_url: 10})
        states = {r["url"]: r["state"] for r in client.replica_stats()}
        assert states[victim.base_url] == "down"
    finally:
        stop_ref_server(victim)


def test_a_hedge_copy_and_a_late_stream_go_to_the_second_choice(drive: Drive) -> None:
    # the staller stalls its first request, and any that asks (x-fault); the other ignores x-fault
    staller = start_ref_server(FAULT_HEADERS, "--faults", "stall_ms=20000;times=1")
    plain = start_ref_server()
    try:
        urls = [staller.base_url, plain.base_url]
        client = drive.client(api_key="k", base_url=urls, max_retries=0, hedge=HedgeConfig(after_ms=100))
        drive(client.models.list())  # learns that the first replica speaks HTTP/2 (no fault on GET)
        router = client._router
        # a key whose first choice is the staller (stable hashes: the same key every run)
        key = next(k for k in (f"tenant-{n}" for n in range(200))
                   if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == 0)
        answer = drive(client.chat.completions.create(model=MODEL, messages=chat("h", ["hi"]), max_tokens=2,
                                                      prompt_cache_key=key))
        assert answer.timings.hedge_won and answer.timings.replica == plain.base_url
        # a stream whose first token is late on its replica: also started on the second choice
        # (failover before the first token); the staller stalls every request from here on
        stream_key = next(k for k in (f"stream-{n}" for n in range(200))
                          if router.ring.walk(route_key("/chat/completions", {"prompt_cache_key": k}).ring)[0] == 0)
        stream = drive(client.chat.completions.create(
            model=MODEL, messages=chat("h", ["hi"]), max_tokens=4, stream=True, prompt_cache_key=stream_key,
            extra_headers={"x-fault": "stall_ms=20000"}))  # honoured by the staller only
        assert drive.iterate(stream)
        assert stream.timings.hedge_won and stream.timings.replica == plain.base_url
    finally:
        stop_ref_server(plain)
        stop_ref_server(staller)


@pytest.fixture(scope="module")
def mixed_fleet(fleet: list[RefServer]) -> Iterator[list[str]]:
    """An uvicorn (HTTP/1.1-only) replica, one behind nginx (h2c), one plain."""
    from tests.interop.nginx import running_nginx
    from tests.interop.system_tools import need

    need("nginx")
    uvicorn = start_ref_server("--server", "uvicorn")
    behind = start_ref_server()
    with running_nginx(behind.port) as proxy:
        yield [uvicorn.base_url, proxy.base_url("h2c"), fleet[0].base_url]
    stop_ref_server(behind)
    stop_ref_server(uvicorn)


def test_uvicorn_and_nginx_replicas(drive: Drive, mixed_fleet: list[str]) -> None:
    client = drive.client(api_key="k", base_url=Replicas(mixed_fleet, policy="round_robin"), max_retries=0)
    answers = [drive(client.chat.completions.create(model=MODEL, messages=chat("mx", ["hi"]), max_tokens=2))
               for _ in range(6)]
    assert Counter(a.timings.replica for a in answers) == Counter({url: 2 for url in mixed_fleet})
    versions = {a.timings.replica: a.timings.http_version for a in answers}
    assert versions[mixed_fleet[0]] == "HTTP/1.1"
    stream = drive(client.chat.completions.create(model=MODEL, messages=chat("mx", ["hi"]), max_tokens=4,
                                                   stream=True))
    assert drive.iterate(stream)


def test_doctor_checks_that_replicas_serve_the_same_models(fleet: list[RefServer]) -> None:
    from llmclient._doctor import diagnose, fleet_check, main

    same = fleet_check([diagnose(s.base_url, api_key="k") for s in fleet[:2]])
    assert same.status == "ok", same.summary
    other = start_ref_server(profile="zero")  # another model
    try:
        mixed = fleet_check([diagnose(fleet[0].base_url, api_key="k"), diagnose(other.base_url, api_key="k")])
        assert mixed.status == "fail" and fleet[0].base_url in mixed.summary and other.base_url in mixed.summary
        assert main([fleet[0].base_url, other.base_url, "--api-key", "k"]) == 1
    finally:
        stop_ref_server(other)
    dead = f"http://127.0.0.1:{dead_port()}/v1"
    down = fleet_check([diagnose(fleet[0].base_url, api_key="k"), diagnose(dead, api_key="k")])
    assert down.status == "warn" and dead in down.summary


def test_warmup_opens_every_replica_and_skips_a_dead_one(drive: Drive, fleet: list[RefServer]) -> None:
    dead = f"http://127.0.0.1:{dead_port()}/v1"
    client = drive.client(api_key="k", base_url=[fleet[0].base_url, dead, fleet[1].base_url])
    drive(client.warmup())  # one GET /models pinned to each replica; the dead one is ejected
    stats = {r["url"]: r for r in client.replica_stats()}
    assert stats[fleet[0].base_url]["served"] == 1 and stats[fleet[1].base_url]["served"] == 1
    assert stats[dead]["state"] == "down" and stats[dead]["served"] == 0


def test_warmup_refuses_replicas_of_different_models(drive: Drive, fleet: list[RefServer]) -> None:
    other = start_ref_server(profile="zero")  # another model
    try:
        client = drive.client(api_key="k", base_url=[fleet[0].base_url, other.base_url])
        with pytest.raises(ValueError, match="different models") as info:
            drive(client.warmup())
        assert fleet[0].base_url in str(info.value) and other.base_url in str(info.value)
        same = drive.client(api_key="k", base_url=[fleet[0].base_url, fleet[1].base_url])
        drive(same.warmup())  # the same model: nothing to say
    finally:
        stop_ref_server(other)


def test_one_served_name_over_different_weights_is_refused(drive: Drive) -> None:
    # vLLM's --served-model-name: both replicas list "llama", each with its own root (weights)
    a = start_ref_server("--served-model-name", "llama", profile="zero")
    b = start_ref_server("--served-model-name", "llama", profile="tiny-fast")
    twin = start_ref_server("--served-model-name", "llama", profile="zero")
    try:
        listed = httpx.get(a.base_url + "/models", headers={"authorization": "Bearer k"}).json()["data"]
        assert [(m["id"], m.get("root")) for m in listed if m["id"] == "llama"] == [("llama", "sim-zero")]
        client = drive.client(api_key="k", base_url=[a.base_url, b.base_url])
        with pytest.raises(ValueError, match="different models") as info:
            drive(client.warmup())
        assert f"{a.base_url}: " in str(info.value) and "llama (sim-zero)" in str(info.value)
        assert f"{b.base_url}: " in str(info.value)
        same = drive.client(api_key="k", base_url=[a.base_url, twin.base_url])
        drive(same.warmup())  # one name, the same weights: nothing to say
        from llmclient._doctor import diagnose, fleet_check

        check = fleet_check([diagnose(a.base_url, api_key="k"), diagnose(b.base_url, api_key="k")])
        assert check.status == "fail" and "llama (sim-zero)" in check.summary
        assert fleet_check([diagnose(a.base_url, api_key="k"), diagnose(twin.base_url, api_key="k")]).status == "ok"
    finally:
        for server in (a, b, twin):
            stop_ref_server(server)


@pytest.fixture(scope="module")
def mixed() -> Iterator[list[RefServer]]:
    # two replicas that serve different models: the zero profile's and the h200-1b profile's
    servers = [start_ref_server(profile="zero"), start_ref_server(profile=PROFILE)]
    yield servers
    for server in servers:
        stop_ref_server(server)


def test_a_replica_without_the_model_the_others_serve_is_ejected(drive: Drive, mixed: list[RefServer]) -> None:
    has, lacks = mixed
    client = drive.client(api_key="k", base_url=Replicas([lacks.base_url, has.base_url], policy="round_robin"),
                          max_retries=0)
    served = [drive(client.chat.completions.create(model="sim-zero", messages=chat(drive.kind, [f"q{n}"]),
                                                   max_tokens=2)).timings.replica for n in range(4)]
    assert served == [has.base_url] * 4  # the 404 moved each call on, nothing failed
    stats = {r["url"]: r for r in client.replica_stats()}
    assert stats[lacks.base_url]["state"] == "down"
    assert stats[lacks.base_url]["last_error"] == (f"{lacks.base_url} has no model 'sim-zero' "
                                                   "(404 model_not_found) while other replicas serve it")
    assert stats[has.base_url]["state"] == "up" and stats[has.base_url]["served"] == 4
    assert all(r["in_flight"] == 0 for r in stats.values())


def test_a_model_no_replica_serves_is_the_apps_404(drive: Drive, mixed: list[RefServer]) -> None:
    client = drive.client(api_key="k", base_url=[s.base_url for s in mixed], max_retries=0)
    with pytest.raises(llmclient.NotFoundError):
        drive(client.chat.completions.create(model="no-such-model", messages=chat(drive.kind, ["q"]), max_tokens=2))
    stats = client.replica_stats()
    assert all(r["state"] == "up" and r["in_flight"] == 0 for r in stats)  # no replica blamed
