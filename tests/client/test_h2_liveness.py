"""A silent HTTP/2 stream's connection is PINGed, so a dead peer is found in seconds (issue 32).

The decisions (``transport.http2.liveness``) first, then the drivers against a hostile HTTP/2 peer
that answers a stream's headers and then goes silent: one that answers PINGs (a slow but live
server: the stream waits on, ended by the stream watchdog) and one that answers nothing (a dead
server or a path that drops packets: the stream fails once the PING goes unanswered, long before
its read timeout). The silence and answer limits are shortened for the tests.
"""

from __future__ import annotations

import time

import pytest

import llmclient
from llmclient.transport.http2 import liveness
from llmclient.transport.http2.liveness import after_silence, wait_slice
from tests._both import Drive

from .hostile_h2 import ACK, DATA, END_HEADERS, HEADERS, PING, HostileH2Server, Peer, frame

MSG = [{"role": "user", "content": "hi"}]
SILENT, ANSWER = 0.3, 0.5


def test_a_silent_stream_waits_a_stretch_then_pings_then_waits_for_the_answer() -> None:
    assert wait_slice(0.0, 0.0, None, None, 10.0, 5.0) == 10.0
    assert wait_slice(0.0, 0.0, 4.0, None, 10.0, 5.0) == 4.0      # the read deadline comes first
    assert wait_slice(12.0, 0.0, None, 10.0, 10.0, 5.0) == 3.0    # the PING's answer is due at 15
    assert wait_slice(16.0, 0.0, None, 10.0, 10.0, 5.0) == 0.0
    assert wait_slice(15.0, 10.0, None, None, 10.0, 5.0) == 5.0   # answered: PINGs every 10 s


def test_what_a_silent_stretch_means() -> None:
    assert after_silence(10.0, None, None, False, 5.0) == "ping"
    assert after_silence(15.0, None, 10.0, True, 5.0) == "rest"  # answered: alive, wait on
    assert after_silence(15.0, None, 10.0, False, 5.0) == "dead"
    assert after_silence(12.0, None, 10.0, False, 5.0) == "wait"
    assert after_silence(20.0, 20.0, 10.0, False, 5.0) == "timeout"


def test_one_wait_as_a_stepper_pings_once_rests_when_answered_and_dies_when_not() -> None:
    alive = liveness.Silence(0.0, None)
    assert alive.slice(0.0) == liveness.SILENT_PING_S
    t = liveness.SILENT_PING_S
    assert alive.after(t, 0) == "ping"
    assert alive.slice(t) == liveness.PING_ANSWER_S        # now waiting for the answer
    assert alive.after(t + 1.0, 0) == "wait"               # not overdue, no answer yet
    assert alive.after(t + 1.0, 1) == "rest"               # answered: alive
    assert alive.slice(t + 1.0) == liveness.SILENT_PING_S - 1.0  # next PING a stretch after the last
    dead = liveness.Silence(0.0, None)
    assert dead.after(t, 3) == "ping"                      # answers counted before it went out
    assert dead.after(t + liveness.PING_ANSWER_S, 3) == "dead"
    limited = liveness.Silence(0.0, 2.0)
    assert limited.slice(0.0) == 2.0
    assert limited.after(2.0, 0) == "timeout"


def _silent_after_headers(answer_pings: bool):
    def script(peer: Peer) -> None:
        peer.settings()
        while (f := peer.read_frame()) is not None:
            ftype, flags, sid, payload = f
            if ftype in (HEADERS, DATA) and flags & 0x1:  # a request's end: headers, then silence
                block = bytes(peer.encoder.encode([(":status", "200"),
                                                   ("content-type", "text/event-stream")]))
                peer.send(frame(HEADERS, END_HEADERS, sid, block))
            elif ftype == PING and not flags & ACK:
                peer.server.pings = getattr(peer.server, "pings", 0) + 1  # type: ignore[attr-defined]
                if answer_pings:
                    peer.send(frame(PING, ACK, 0, payload))
    return script


@pytest.fixture
def short_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(liveness, "SILENT_PING_S", SILENT)
    monkeypatch.setattr(liveness, "PING_ANSWER_S", ANSWER)


def test_a_peer_that_stops_answering_fails_the_stream_in_seconds(drive: Drive, short_limits: None) -> None:
    dead = _silent_after_headers(answer_pings=False)
    with HostileH2Server(dead, dead) as peer:
        client = drive.client(base_url=peer.base_url, api_key="k", max_retries=0, timeout=20,
                              stream_idle_timeout=None)
        stream = drive(client.chat.completions.create(model="m", messages=MSG, stream=True))
        t0 = time.monotonic()
        with pytest.raises(llmclient.IncompleteStreamError, match="no PING answer") as caught:
            drive.iterate(stream)
    assert time.monotonic() - t0 < 30  # SILENT + ANSWER (under a second), not the 60 s read timeout
    assert getattr(peer, "pings", 0) == 1
    assert caught.value.partial.events == 0


def test_a_peer_that_answers_its_pings_is_alive_and_the_watchdog_ends_the_stall(
        drive: Drive, short_limits: None) -> None:
    alive = _silent_after_headers(answer_pings=True)
    with HostileH2Server(alive, alive) as peer:
        client = drive.client(base_url=peer.base_url, api_key="k", max_retries=0, timeout=20,
                              stream_idle_timeout=2.0)
        stream = drive(client.chat.completions.create(model="m", messages=MSG, stream=True))
        with pytest.raises(llmclient.APITimeoutError, match="Stream stalled"):
            drive.iterate(stream)
    assert getattr(peer, "pings", 0) >= 2  # PINGed after each silent stretch, answered each time
