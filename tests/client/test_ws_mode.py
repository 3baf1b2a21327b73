"""The Responses WebSocket mode's decisions (``llmclient/layers/ws_mode.py``), without sockets:
the URL, the create message, which response an event belongs to, what a lost socket means for
each response in flight, the backoff, the official connection options, a fetched response's
remaining events."""

from __future__ import annotations

import orjson
import pytest

from llmclient.layers import ws_mode
from llmclient.layers.ws_mode import Demux, Pending


def test_socket_url_follows_the_official_rule() -> None:
    assert ws_mode.socket_url("https://api.openai.com/v1", None, {}) == "wss://api.openai.com/v1/responses"
    assert ws_mode.socket_url("http://h:8/v1/", None, {"a": 1, "b": None}) == "ws://h:8/v1/responses?a=1"
    assert ws_mode.socket_url("http://x/v1", "wss://y/base?k=v", {"q": "1"}) == "wss://y/base/responses?k=v&q=1"
    with pytest.raises(ValueError, match="ws://, wss://"):
        ws_mode.socket_url("ftp://x", None, {})


def test_create_message_drops_stream_and_checks_refuse_background() -> None:
    msg = orjson.loads(ws_mode.create_message({"model": "m", "input": "x", "stream": True}))
    assert msg == {"type": "response.create", "model": "m", "input": "x"}
    assert "background=True" in (ws_mode.check_create({"background": True}) or "")
    assert "stream_id" in (ws_mode.check_create({"stream_id": 7}) or "")
    assert ws_mode.check_create({"model": "m", "stream_id": "a"}) is None


def _ev(kind: str, rid: str | None = None, lane: str | None = None) -> dict:
    e: dict = {"type": kind}
    if rid:
        e["response"] = {"id": rid}
    if lane:
        e["stream_id"] = lane
    return e


def test_demux_routes_by_lane_in_order_and_an_error_to_the_oldest_not_started() -> None:
    d = Demux()
    a1, a2 = Pending("a", b"1"), Pending("a", b"2")
    b1 = Pending("b", b"3")
    for p in (a1, a2, b1):
        d.add(p)
    assert d.route(_ev("response.created", "r1", "a")) is a1 and a1.created
    assert d.route(_ev("response.created", "r3", "b")) is b1
    assert d.route({"type": "response.output_text.delta", "stream_id": "a"}) is a1
    assert d.route(_ev("response.completed", "r1", "a")) is a1 and a1.done
    assert d.route({"type": "error", "stream_id": "a"}) is a2 and a2.done
    assert d.route({"type": "response.steer.accepted"}) is None
    assert len(d) == 1 and d.take_all() == [b1] and len(d) == 0


def test_recovery_never_runs_a_started_response_twice() -> None:
    fresh = Pending(None, b"x", sent=1)
    assert ws_mode.recovery(fresh, True) == "resend"
    assert ws_mode.recovery(fresh, False) == "fail"
    assert ws_mode.recovery(Pending(None, b"x", sent=2), True) == "fail"  # sent twice already
    started = Pending(None, b"x", created=True, response_id="r", sent=1)
    assert ws_mode.recovery(started, True) == "fetch"
    unstored = Pending(None, b"x", store=False, created=True, response_id="r", sent=1)
    assert ws_mode.recovery(unstored, True) == "fail"


def test_reconnect_delay_doubles_up_to_the_maximum_with_jitter() -> None:
    assert ws_mode.reconnect_delay(1, 0.5, 8.0, draw=1.0) == 0.5
    assert ws_mode.reconnect_delay(3, 0.5, 8.0, draw=1.0) == 2.0
    assert ws_mode.reconnect_delay(10, 0.5, 8.0, draw=0.0) == 6.0  # 8 x 0.75


def test_connection_settings_take_the_official_options_or_name_what_they_refuse() -> None:
    assert ws_mode.connection_settings({"compression": None, "max_size": 10, "max_queue": (32, 8)}) == {
        "compression": None, "max_size": 10, "max_queue": 32}
    assert ws_mode.connection_settings({"extensions": None, "subprotocols": []}) == {}
    with pytest.raises(ValueError, match="write_limit"):
        ws_mode.connection_settings({"write_limit": 65536})
    with pytest.raises(ValueError, match="compression"):
        ws_mode.connection_settings({"compression": "zstd"})


def _stored(status: str, text: str) -> dict:
    return {"id": "r", "status": status, "output": [
        {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": text}]}]}


def test_recovered_events_finish_what_the_app_saw_and_make_nothing_up() -> None:
    events = ws_mode.recovered_events(_stored("completed", "Hello world"), "Hello", 7, "a")
    assert events is not None and [e["type"] for e in events] == ["response.output_text.delta",
                                                                  "response.completed"]
    assert events[0]["delta"] == " world" and events[0]["item_id"] == "msg_1"
    assert [e["sequence_number"] for e in events] == [8, 9] and {e["stream_id"] for e in events} == {"a"}
    done = ws_mode.recovered_events(_stored("incomplete", "Hello"), "Hello", 3, None)
    assert done is not None and [e["type"] for e in done] == ["response.incomplete"]
    assert ws_mode.recovered_events(_stored("in_progress", "Hel"), "Hel", 3, None) is None
    assert ws_mode.recovered_events(_stored("completed", "Other"), "Hello", 3, None) is None


def test_close_advice_names_what_to_do() -> None:
    assert "policy" in ws_mode.close_advice(1008)
    assert "opened again" in ws_mode.close_advice(1011)
    assert "larger" in ws_mode.close_advice(1009)
