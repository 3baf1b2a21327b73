"""The overload part of the reliability benchmark (``benchmarks/overload.py``): its tally and
ratios on their own, then one short run against real reference-server processes with
llmclient's Anthropic face (sync and async) and the official ``anthropic`` client, whose
counts must agree with what the server logged. No timing asserts: latencies are only checked
to exist."""

from __future__ import annotations

import json

import pytest

from benchmarks import overload

# -- the pure parts --------------------------------------------------------------------------------


def _out(rid: str, ok: bool, ms: float, error: str | None = None, attempts: int | None = 1) -> overload.Outcome:
    return overload.Outcome(rid, ok, ms, error, attempts)


def test_the_tally_counts_attempts_where_the_server_saw_them() -> None:
    calls = [_out("a", True, 10.0), _out("b", True, 1010.0, attempts=2),
             _out("c", False, 2020.0, "529", attempts=3), _out("d", False, 5.0, "503", attempts=2)]
    server = {"a": [200], "b": [529, 200], "c": [529, 529, 529], "d": [503, 503]}
    s = overload.summarize("llmclient", calls, server)
    assert (s["calls"], s["completed"], s["failed"]) == (4, 2, 2)
    assert s["failed_by"] == {"503": 1, "529": 1}
    assert s["attempts"] == 8 and s["attempts_source"] == "server" and s["attempts_per_call"] == 2.0
    assert s["answers"] == {200: 2, 503: 2, 529: 4} and s["overload_share"] == 6 / 8
    assert s["client_attempts"] == 8 and s["counts_agree"] is True and s["never_reached"] == 0
    assert s["calls_by_attempts"] == {1: 1, 2: 2, 3: 1}
    assert s["p50_ms"] == 510.0 and s["n_latency"] == 2  # over the completed calls only
    # a call the client counted twice but the server saw once: the counts disagree, the server's stand
    lost = overload.summarize("x", [_out("a", True, 1.0, attempts=2)], {"a": [200]})
    assert lost["attempts"] == 1 and lost["counts_agree"] is False
    # no server log (--base-url): the clients' counts, and no share
    given = overload.summarize("x", calls, None)
    assert given["attempts"] == 8 and given["attempts_source"] == "client" and given["overload_share"] is None
    unknown = overload.summarize("x", [_out("a", True, 1.0, attempts=None)], None)
    assert unknown["attempts"] is None and unknown["attempts_per_call"] is None


def test_error_labels_are_the_status_or_the_error_kind() -> None:
    class Status(Exception):
        status_code = 529

    assert overload.error_label(Status()) == "529"
    assert overload.error_label(TimeoutError()) == "TimeoutError"


def test_the_expected_share_of_a_burst_fault() -> None:
    assert overload.expected_share(0.025, 8) == pytest.approx(0.2 / 1.175)
    assert overload.expected_share(0.2, 1) == pytest.approx(0.2)
    assert overload.expected_share(0.025, 8) < overload.GOAL_MAX_SHARE  # the default stays under the goal's 20%
    with pytest.raises(ValueError, match="burst"):
        overload.expected_share(0.1, 0)


def test_the_ratios_and_the_goal() -> None:
    # official: 100 calls, 10 of them retried twice (3 attempts, 2 s); llmclient: the same calls
    # retried once (2 attempts, 1 s)
    off = [_out(f"o{i}", True, 2000.0 if i < 10 else 10.0, attempts=3 if i < 10 else 1) for i in range(100)]
    ours = [_out(f"l{i}", True, 1000.0 if i < 10 else 10.0, attempts=2 if i < 10 else 1) for i in range(100)]
    row = overload.compare((off, None), (ours, None), seed="t")
    assert row["attempts_ratio"] == pytest.approx(110 / 120)
    assert row["p99_ratio"] == pytest.approx(2.0)
    lo, hi = row["p99_interval"]
    assert lo <= row["p99_ratio"] <= hi
    lo, hi = row["attempts_interval"]
    assert lo <= row["attempts_ratio"] <= hi
    assert row["goal"] == {"every_call_completes": True, "attempts_at_most_official": True,
                           "p99_at_least_1_5x": True, "met": True}
    # one llmclient call failed: the goal is not met whatever the ratios
    failed = [*ours[:-1], _out("lx", False, 5.0, "529", attempts=1)]
    row = overload.compare((off, None), (failed, None), seed="t")
    assert not row["goal"]["every_call_completes"] and not row["goal"]["met"]
    # the same p99 on both sides: not 1.5x better
    row = overload.compare((off, None), (off, None), seed="t")
    assert row["p99_ratio"] == 1.0 and not row["goal"]["p99_at_least_1_5x"]


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="unknown clients"):
        overload.run("anthropic", ["llmclient", "openai"])
    with pytest.raises(ValueError, match="need the official client and an llmclient one"):
        overload.run("anthropic", ["llmclient", "llmclient-async"])
    with pytest.raises(ValueError, match="--api"):
        overload.run("gemini")
    with pytest.raises(SystemExit):
        overload.main(["--clients", "llmclient,nope"])


# -- against the reference server ------------------------------------------------------------------


def test_a_short_run_against_the_reference_server_counts_every_attempt(tmp_path: object) -> None:
    # The fault's 529s carry Retry-After: 1 (whole seconds: each retry waits 1 s), so a handful
    # of calls: 16 a client, 4 callers, 2 rounds, every client and its server of its own.
    found = overload.run("anthropic", ["llmclient", "llmclient-async", "anthropic", "anthropic-async"], calls=16,
                         callers=4, rounds=2, faults="status=529;prob=0.3;burst=2", pause_s=0.0)
    by = {s["client"]: s for s in found["clients"]}
    assert set(by) == {"llmclient", "llmclient-async", "anthropic", "anthropic-async"}
    for s in by.values():
        assert s["calls"] == 16 and s["completed"] + s["failed"] == 16
        assert s["attempts_source"] == "server" and s["never_reached"] == 0
        # the server's count of attempts is the client's: its successes, failures and retries
        assert s["counts_agree"] is True, s
        assert s["attempts"] == s["client_attempts"] >= 16
        assert set(s["answers"]) <= {200, 529} and s["answers"].get(200, 0) == s["completed"]
        assert s["n_latency"] == s["completed"]
    # the same seeded faults for every client: 529s were met and retried by all of them
    assert all(s["answers"].get(529, 0) > 0 for s in by.values())
    assert all(s["attempts"] > s["calls"] for s in by.values())
    pairs = {(c["llmclient"], c["official"]) for c in found["comparisons"]}
    assert pairs == {("llmclient", "anthropic"), ("llmclient-async", "anthropic-async")}
    for c in found["comparisons"]:
        assert c["attempts_ratio"] is not None and c["p99_ratio"] is not None
    lines = overload.main_rows(found)
    assert any(line.startswith("llmclient vs anthropic:") for line in lines)
    json.dumps(found, default=str)  # what --json writes


def test_against_a_given_server_the_clients_count_their_attempts() -> None:
    # --base-url: a server of the user's (here a reference server started without faults, as a
    # user's would be): nothing injected, no log to read; the clients' own counts, no verdict.
    from benchmarks.harness.serverproc import start_server

    server = start_server("zero")
    try:
        server.wait_healthy()
        found = overload.run("anthropic", ["llmclient", "anthropic"], calls=8, callers=2, rounds=2,
                             base_url=server.origin)
    finally:
        server.stop()
    assert found["faults"] is None and found["base_url"] == server.origin
    for s in found["clients"]:
        assert s["attempts_source"] == "client" and s["calls"] == s["completed"] == 8
        assert s["attempts"] == 8 and s["overload_share"] is None and s["counts_agree"] is None
    assert any("not judged" in line or "judged against the embedded server" in line
               for line in overload.main_rows(found))
