"""Fault injection: the spec parser and the seeded decision (pure), then each fault live."""

from __future__ import annotations

import httpx
import orjson
import pytest

from benchmarks.server.faults import (
    FaultInjector,
    FaultSpec,
    FaultSpecError,
    parse_fault,
    parse_fault_list,
)

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
        "seed": 1}
STREAM = {**BODY, "stream": True}


def test_parse_every_item():
    f = parse_fault("status=429;retry_after=2.5;stall_ms=10;cut_after=3;slow_ms=5;straggler=4;prob=0.5")
    assert f == FaultSpec(status=429, retry_after_s=2.5, stall_ms=10, cut_after=3, slow_ms=5,
                          straggler=4.0, prob=0.5)
    assert parse_fault("oom; reset ;malformed_sse") == FaultSpec(oom=True, reset=True, malformed_sse=True)
    assert parse_fault("stall_after=4") == FaultSpec(stall_after=4)
    assert parse_fault("reset_after=7;once=ab-1") == FaultSpec(reset_after=7, once="ab-1")
    assert parse_fault("stall_after=2;resume_ms=300") == FaultSpec(stall_after=2, resume_ms=300)


@pytest.mark.parametrize("spec,needle", [
    ("status=418", "418"), ("stall_ms=abc", "stall_ms"), ("prob=1.5", "prob"), ("bogus", "bogus"),
    ("straggler=0.5", "straggler"), ("", "empty"), ("slow_ms=-1", "slow_ms"),
    ("once=", "once"), ("reset_after=x", "reset_after"),
])
def test_parse_errors_name_the_item(spec, needle):
    with pytest.raises(FaultSpecError, match=needle):
        parse_fault(spec)


def test_run_wide_faults_are_seeded_and_reproducible():
    faults = parse_fault_list("status=503;prob=0.3,straggler=10;prob=0.2")

    def run(seed: int) -> list[FaultSpec | None]:
        inj = FaultInjector(faults, seed=seed)
        return [inj.decide(None) for _ in range(200)]

    first = run(42)
    assert first == run(42)
    assert first != run(43)
    statuses = [f.status for f in first if f is not None]
    stragglers = [f.straggler for f in first if f is not None and f.status is None]
    assert 30 < statuses.count(503) < 90    # about 30 % of 200
    assert 10 < len(stragglers) < 60        # about 20 % of the remaining 70 %


def test_header_overrides_run_wide_faults():
    inj = FaultInjector(parse_fault_list("status=500"), seed=0)
    assert inj.decide("stall_ms=5") == FaultSpec(stall_ms=5)
    assert inj.decide("status=502;prob=0") is None
    assert inj.decide(None) == FaultSpec(status=500)


def test_times_limits_how_often_a_run_wide_fault_fires():
    inj = FaultInjector(parse_fault_list("stall_ms=50;times=2,status=503;prob=0.5;times=3"), seed=1)
    decided = [inj.decide(None) for _ in range(100)]
    assert decided[:2] == [FaultSpec(stall_ms=50, times=2)] * 2
    assert sum(f is not None and f.status == 503 for f in decided) == 3
    assert all(f is None for f in decided[60:])
    with pytest.raises(FaultSpecError, match="times"):
        inj.decide("stall_ms=5;times=1")


def test_a_windowed_run_wide_fault_fires_only_in_its_window_from_the_first_request():
    now = [100.0]
    inj = FaultInjector(parse_fault_list("status=503;start_ms=2000;for_ms=10000"), seed=0, clock=lambda: now[0])
    seen = []
    for t in (0.0, 1.9, 2.0, 7.0, 11.99, 12.0, 30.0):  # seconds after the first request
        now[0] = 100.0 + t
        seen.append(inj.decide(None) is not None)
    assert seen == [False, False, True, True, True, False, False]
    only_for = FaultInjector(parse_fault_list("status=503;for_ms=500"), seed=0, clock=lambda: now[0])
    now[0] = 0.0
    assert only_for.decide(None) is not None
    now[0] = 0.6
    assert only_for.decide(None) is None
    with pytest.raises(FaultSpecError, match="start_ms"):
        inj.decide("status=503;for_ms=5")


def test_the_new_stream_and_overload_items_parse():
    assert parse_fault("pings_after=4;ping_ms=250;resume_ms=900") == FaultSpec(
        pings_after=4, ping_ms=250, resume_ms=900)
    assert parse_fault("status=529;burst=5") == FaultSpec(status=529, burst=5)
    assert parse_fault("error_after=3").error_after == 3 and parse_fault("status=403").status == 403
    for bad, needle in (("ping_ms=0", "ping_ms"), ("burst=0", "burst")):
        with pytest.raises(FaultSpecError, match=needle):
            parse_fault(bad)


def test_a_burst_holds_a_fired_fault_for_the_next_requests():
    inj = FaultInjector(parse_fault_list("status=529;prob=0.05;burst=4"), seed=7)
    fired = "".join("X" if inj.decide(None) else "." for _ in range(2000))
    runs = [len(r) for r in fired.replace(".", " ").split()]
    assert runs and all(n % 4 == 0 for n in runs)  # back-to-back bursts join up
    assert 0.1 < fired.count("X") / len(fired) < 0.3  # bursts of 4 after gaps of about 1/0.05: about 4/24
    with pytest.raises(FaultSpecError, match="burst"):
        inj.decide("status=529;burst=2")


def test_a_once_fault_fires_for_the_first_request_carrying_its_token_only():
    inj = FaultInjector(seed=0)
    assert inj.decide("reset_after=3;once=a") == FaultSpec(reset_after=3, once="a")
    assert inj.decide("reset_after=3;once=a") is None       # the retry (or resume) runs clean
    assert inj.decide("reset_after=5;once=b") == FaultSpec(reset_after=5, once="b")
    assert inj.decide("stall_after=2") == FaultSpec(stall_after=2)  # without once: every time


def _post(server, fault: str, body=BODY, **kw) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", json=body, headers={"x-fault": fault}, **kw)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_status_faults(ref_server, status):
    r = _post(ref_server, f"status={status};retry_after=3")
    assert r.status_code == status
    assert r.json()["error"]["code"] == "injected_fault"
    assert (r.headers.get("retry-after") == "3") == (status == 429)


def test_a_refusal_without_retry_after(ref_server):
    assert parse_fault("status=529;retry_after=none") == FaultSpec(status=529, retry_after_s=None)
    r = _post(ref_server, "status=429;retry_after=none")
    assert r.status_code == 429 and "retry-after" not in r.headers
    with pytest.raises(FaultSpecError, match="retry_after"):
        parse_fault("retry_after=never")


def test_oom_fault_is_a_503_server_error(ref_server):
    r = _post(ref_server, "oom")
    assert r.status_code == 503
    assert r.json()["error"]["type"] == "server_error"
    assert "out of memory" in r.json()["error"]["message"]


def _timing(value: str) -> dict[str, float]:
    out = {}
    for item in value.split(","):
        name, _, dur = item.strip().partition(";dur=")
        out[name] = float(dur)
    return out


def test_stall_delays_the_first_byte(ref_server):
    r = _post(ref_server, "stall_ms=150")
    assert r.status_code == 200
    assert _timing(r.headers["server-timing"])["total"] >= 150


def _events(raw: bytes) -> list[bytes]:
    return [block for block in raw.split(b"\n\n") if block.startswith(b"data: ")]


def test_cut_after_ends_stream_without_finish_or_done(ref_server):
    with httpx.Client() as c, c.stream("POST", ref_server.base_url + "/chat/completions", json=STREAM,
                                       headers={"x-fault": "cut_after=2"}) as r:
        raw = r.read()
    events = _events(raw)
    assert len(events) == 2
    assert b"[DONE]" not in raw
    assert all(orjson.loads(e[6:])["choices"][0]["finish_reason"] is None for e in events)


@pytest.mark.parametrize("http2", [False, True])
def test_stall_after_goes_silent_mid_stream_until_the_client_leaves(ref_server, http2):
    """Two chunks, then nothing (no end, no reset): the client's read timeout is what ends it.
    The server then frees the request (the next one on the same client is served)."""
    raw = b""
    with httpx.Client(http1=not http2, http2=http2) as c:
        with pytest.raises(httpx.ReadTimeout), c.stream(
                "POST", ref_server.base_url + "/chat/completions", json={**STREAM, "max_tokens": 30},
                headers={"x-fault": "stall_after=2"}, timeout=httpx.Timeout(30, read=3.0)) as r:
            for chunk in r.iter_bytes():
                raw += chunk
        assert c.post(ref_server.base_url + "/chat/completions", json=BODY).status_code == 200
    events = _events(raw)
    assert len(events) == 2
    assert b"[DONE]" not in raw


def test_stall_after_with_resume_ms_pauses_then_goes_on_to_the_end(ref_server):
    with httpx.Client() as c, c.stream("POST", ref_server.base_url + "/chat/completions", json=STREAM,
                                       headers={"x-fault": "stall_after=2;resume_ms=300"}) as r:
        raw = r.read()
    assert b"[DONE]" in raw
    finishes = [orjson.loads(e[6:])["choices"][0]["finish_reason"] for e in _events(raw)
                if e != b"data: [DONE]" and orjson.loads(e[6:])["choices"]]
    assert finishes[-1] is not None


def test_cut_after_truncates_non_stream_body(ref_server):
    r = _post(ref_server, "cut_after=10")
    assert len(r.content) == 10
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(r.content)


def test_malformed_sse_has_one_unparseable_event(ref_server):
    raw = _post(ref_server, "malformed_sse", STREAM).content
    bad = []
    for e in _events(raw):
        if e != b"data: [DONE]":
            try:
                orjson.loads(e[6:])
            except orjson.JSONDecodeError:
                bad.append(e)
    assert len(bad) == 1


def test_slow_stream_waits_per_chunk(ref_server):
    r = _post(ref_server, "slow_ms=30", STREAM)
    trailer = next(b for b in r.content.split(b"\n\n") if b.startswith(b": server-timing "))
    assert _timing(trailer[len(b": server-timing "):].decode())["total"] >= 6 * 30


def test_straggler_request_still_completes(ref_server):
    r = _post(ref_server, "straggler=5")
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("http2", [False, True])
def test_reset_aborts_the_response(ref_server, http2):
    with httpx.Client(http1=not http2, http2=http2) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            c.post(ref_server.base_url + "/chat/completions", json=STREAM, headers={"x-fault": "reset"})
        assert c.post(ref_server.base_url + "/chat/completions", json=BODY).status_code == 200


@pytest.mark.parametrize("http2", [False, True])
def test_reset_after_aborts_mid_stream_after_n_chunks(ref_server, http2):
    raw = b""
    with httpx.Client(http1=not http2, http2=http2) as c:
        with pytest.raises(httpx.RemoteProtocolError), c.stream(
                "POST", ref_server.base_url + "/chat/completions", json={**STREAM, "max_tokens": 30},
                headers={"x-fault": "reset_after=3"}) as r:
            for chunk in r.iter_bytes():
                raw += chunk
        assert c.post(ref_server.base_url + "/chat/completions", json=BODY).status_code == 200
    assert len(_events(raw)) == 3
    assert b"[DONE]" not in raw


def test_prob_zero_never_fires(ref_server):
    assert all(_post(ref_server, "status=500;prob=0").status_code == 200 for _ in range(5))


def test_bad_fault_header_is_a_400_naming_it(ref_server):
    r = _post(ref_server, "status=999")
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "x-fault"


@pytest.fixture(scope="module")
def timed_server():
    from tests.conftest import FAULT_HEADERS, start_ref_server, stop_ref_server

    # ~12 ms per token
    server = start_ref_server(FAULT_HEADERS, "--cold-start-s", "0", profile="h100-8b")
    yield server
    stop_ref_server(server)


def _metric(server, name: str) -> float:
    for line in httpx.get(server.url + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} missing from /metrics")


@pytest.mark.parametrize("http2", [False, True])
def test_client_disconnect_frees_the_batch_slot(timed_server, http2):
    body = {**BODY, "max_tokens": 3000, "temperature": 0}
    before = _metric(timed_server, "llm_generation_tokens_total")
    with httpx.Client(http1=not http2, http2=http2) as c, pytest.raises(httpx.TimeoutException):
        c.post(timed_server.base_url + "/chat/completions", json=body, timeout=0.3)
    for _ in range(300):  # up to 15 s for a busy machine to notice the hang-up
        if _metric(timed_server, "llm_requests_running") == 0:
            break
        __import__("time").sleep(0.05)
    assert _metric(timed_server, "llm_requests_running") == 0
    # 3,000 tokens would take ~36 s; the cancelled request stopped far short of that.
    assert _metric(timed_server, "llm_generation_tokens_total") - before < 1500


def test_straggler_takes_k_times_its_engine_time(timed_server):
    r = _post(timed_server, "straggler=4", {**BODY, "max_tokens": 10, "temperature": 0})
    t = _timing(r.headers["server-timing"])
    engine_ms = t.get("queue", 0) + t.get("prefill", 0) + t["decode"]
    assert engine_ms > 50              # ~10 tokens at ~12 ms
    assert t["total"] >= 0.9 * 4 * engine_ms


def test_pings_after_sends_only_keepalive_comments_then_goes_on(ref_server):
    with httpx.Client() as c, c.stream("POST", ref_server.base_url + "/chat/completions",
                                       json={**STREAM, "max_tokens": 10},
                                       headers={"x-fault": "pings_after=2;ping_ms=50;resume_ms=400"}) as r:
        lines = [line for line in r.iter_lines() if line]
    pings = [i for i, line in enumerate(lines) if line == ": ping"]
    assert len(pings) >= 3 and pings == list(range(pings[0], pings[0] + len(pings)))  # one run
    assert lines[:pings[0]] and all(line.startswith("data: ") for line in lines[:pings[0]])
    assert lines[-1] == "data: [DONE]"  # then the stream went on to its end


def test_error_after_on_a_route_without_error_events_is_a_cut(ref_server):
    with httpx.Client() as c, c.stream("POST", ref_server.base_url + "/chat/completions", json=STREAM,
                                       headers={"x-fault": "error_after=2"}) as r:
        lines = [line for line in r.iter_lines() if line]
    assert len(lines) == 2 and "[DONE]" not in lines[-1]
