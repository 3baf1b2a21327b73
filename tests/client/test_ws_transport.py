"""llmclient's WebSocket transport against real peers, each test on both drivers ([sync] and
[async], tests/_ws.py): the reference server's Responses WebSocket mode (with the official
client's socket on the same server as the control), its TLS listener, hypercorn's
permessage-deflate, and a raw-socket peer for what no well-behaved server sends."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest

from llmclient.transport.websocket import (
    HandshakeError,
    MessageTooBig,
    WebSocketClosed,
    WebSocketProtocolError,
    WebSocketTimeout,
)
from tests._ws import KINDS, WsDriver
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

from .ws_peer import BINARY, CLOSE, CONT, PING, PONG, TEXT, RawPeer, frame, switching

KEY = "sk-transport"
AUTH = (("Authorization", f"Bearer {KEY}"),)
MODEL = "gpt-4o-mini"
CREATE = {"type": "response.create", "model": MODEL, "input": "Tell me about the sea.",
          "max_output_tokens": 24, "temperature": 0}


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY, "--access-log")
    yield s
    stop_ref_server(s)


@pytest.fixture(params=KINDS)
def drive(request: pytest.FixtureRequest) -> Iterator[WsDriver]:
    d = WsDriver(request.param)
    yield d
    d.close()


def _url(server: RefServer) -> str:
    return server.url.replace("http", "ws", 1) + "/v1/responses"


def _peer(handler) -> Iterator[RawPeer]:
    peer = RawPeer(handler)
    try:
        yield peer
    finally:
        peer.close()


# -- the reference server ------------------------------------------------------------------------
def test_a_response_streams_as_the_official_client_receives_it(server, drive) -> None:
    with drive.connect(_url(server), headers=AUTH) as ws:
        ws.send_json(CREATE)
        events = ws.until_done()
    official = openai.OpenAI(base_url=server.base_url, api_key=KEY)
    with official.responses.connect() as conn:
        conn.response.create(**{k: v for k, v in CREATE.items() if k != "type"})
        control = []
        while not control or control[-1].type not in ("response.completed", "response.incomplete"):
            control.append(conn.recv())
    assert [e["type"] for e in events] == [e.type for e in control]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == control[-1].response.output_text
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_the_handshake_carries_the_caller_s_headers(server, drive) -> None:
    rid = uuid.uuid4().hex
    tp = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
    headers = (*AUTH, ("X-Request-ID", rid), ("traceparent", tp))
    with drive.connect(_url(server), headers=headers) as ws:
        ws.send_json(CREATE)
        ws.until_done()
    assert server.log_path is not None
    deadline = time.monotonic() + 10
    while f"request_id={rid}-1 traceparent={tp}" not in server.log_path.read_text():
        assert time.monotonic() < deadline, "the server never logged the handshake's ids"
        time.sleep(0.05)


def test_a_wrong_key_is_a_handshake_error_naming_url_status_and_what_to_do(server, drive) -> None:
    with pytest.raises(HandshakeError) as info:
        drive.connect(_url(server), headers=(("Authorization", "Bearer sk-wrong"),))
    err = info.value
    assert err.status == 401 and not err.retryable and err.url == _url(server)
    assert "HTTP 401" in str(err) and "API key" in str(err) and _url(server) in str(err)
    assert b"invalid_api_key" in err.body


def test_a_server_without_the_mode_is_a_404_handshake_error(server, drive) -> None:
    url = server.url.replace("http", "ws", 1) + "/v1/chat/completions"
    with pytest.raises(HandshakeError, match="does not offer the Responses WebSocket mode") as info:
        drive.connect(url, headers=AUTH)
    assert info.value.status == 404


def test_a_426_names_what_the_server_asked_for(drive) -> None:
    def refuse(conn: socket.socket, key: str) -> None:
        conn.sendall(b"HTTP/1.1 426 Upgrade Required\r\nUpgrade: h2c\r\ncontent-length: 0\r\n"
                     b"connection: close\r\n\r\n")

    for peer in _peer(refuse):
        with pytest.raises(HandshakeError, match="did not accept this upgrade and asked for 'h2c'") as info:
            drive.connect(peer.url)
        assert info.value.status == 426


def test_send_after_close_names_the_send_and_the_close(server, drive) -> None:
    ws = drive.connect(_url(server), headers=AUTH)
    ws.close(4000, "done here")
    assert ws.closed and ws.close_code == 4000
    with pytest.raises(WebSocketClosed, match=r"cannot send: .* the client closed it with code 4000") as info:
        ws.send_json(CREATE)
    assert info.value.code == 4000 and not info.value.by_server
    ws.close()  # again: nothing happens


def test_a_server_close_mid_response_raises_with_its_code_after_what_came(server, drive) -> None:
    with drive.connect(_url(server), headers=(*AUTH, ("x-fault", "cut_after=3"))) as ws:
        ws.send_json(CREATE)
        got = [ws.recv_json()["type"] for _ in range(3)]
        with pytest.raises(WebSocketClosed) as info:
            ws.recv()
    assert got == ["response.created", "response.in_progress", "response.output_item.added"]
    assert info.value.code == 1011 and info.value.by_server and not info.value.clean


def test_recv_timeout_leaves_the_connection_usable(server, drive) -> None:
    with drive.connect(_url(server), headers=AUTH) as ws:
        with pytest.raises(WebSocketTimeout, match="no message"):
            ws.recv(timeout=0.2)
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] == "response.incomplete"


def test_a_stalled_response_is_found_by_recv_timeout_and_aborted(server, drive) -> None:
    with drive.connect(_url(server), headers=(*AUTH, ("x-fault", "stall_after=2"))) as ws:
        ws.send_json(CREATE)
        ws.recv(), ws.recv()
        with pytest.raises(WebSocketTimeout):
            ws.recv(timeout=0.3)
        assert time.monotonic() - ws.last_message_at >= 0.3  # what a watchdog reads
        ws.abort(WebSocketTimeout("stalled: aborted by the watchdog", ws.url))
        with pytest.raises(WebSocketTimeout, match="aborted by the watchdog"):
            ws.recv()


def test_a_short_recv_limit_after_long_ones_still_expires_at_its_own_deadline(server, drive) -> None:
    # The async driver keeps one timer for a stream's waits, armed at the first wait's deadline:
    # a later, shorter limit must re-arm it earlier (the test's own timeout is the hang guard).
    with drive.connect(_url(server), headers=(*AUTH, ("x-fault", "stall_after=3"))) as ws:
        ws.send_json(CREATE)
        for _ in range(3):
            ws.recv(timeout=600)
        started = time.monotonic()
        with pytest.raises(WebSocketTimeout, match=r"for 0\.3 s"):
            ws.recv(timeout=0.3)
        assert time.monotonic() - started < 300  # not the 600 s limit of the waits before


def test_abort_from_another_thread_wakes_a_blocked_sync_recv(server) -> None:
    # [sync] only: another thread is how a sync watchdog reaches a reader (the async driver's
    # abort runs on its loop, covered above).
    drive = WsDriver("sync")
    ws = drive.connect(_url(server), headers=AUTH)
    timer = threading.Timer(0.3, ws.abort)
    timer.start()
    with pytest.raises(WebSocketClosed, match="aborted"):
        ws.recv(timeout=30)
    timer.join()
    ws.close()


def test_a_message_over_max_size_closes_with_1009(server, drive) -> None:
    with drive.connect(_url(server), headers=AUTH, max_size=600) as ws:
        ws.send_json(CREATE)
        with pytest.raises(MessageTooBig, match="1009"):
            while True:
                ws.recv()


def test_over_tls_with_verification(ref_server_tls, drive) -> None:
    url = ref_server_tls.url.replace("https", "wss", 1) + "/v1/responses"
    with drive.connect(url, verify=ref_server_tls.ca_path) as ws:
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] == "response.incomplete"
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        drive.connect(url)  # the system's CAs do not know the test CA: refused, never ignored


def test_permessage_deflate_is_offered_by_default_and_taken_when_the_server_can(drive) -> None:
    s = start_ref_server("--server", "hypercorn")
    try:
        with drive.connect(_url(s)) as ws:  # offered by default, taken by hypercorn
            assert ws.extensions == ("permessage-deflate",)
            ws.send_json(CREATE)
            events = ws.until_done()
            assert events[-1]["type"] == "response.incomplete"
            assert ws.bytes_received < sum(len(orjson.dumps(e)) for e in events) / 4
        with drive.connect(_url(s), compression=None) as ws:  # offers nothing
            assert ws.extensions == ()
    finally:
        stop_ref_server(s)


def test_granian_answers_a_deflate_offer_without_it(server, drive) -> None:
    with drive.connect(_url(server), headers=AUTH, compression="deflate") as ws:
        assert ws.extensions == ()
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] == "response.incomplete"


def test_pings_are_answered_by_the_server(server, drive) -> None:
    with drive.connect(_url(server), headers=AUTH, ping_interval=0.1, ping_timeout=5) as ws:
        ws.ping()
        with pytest.raises(WebSocketTimeout, match="no message"):
            ws.recv(timeout=0.5)  # pings and pongs meanwhile: no message, and alive
        assert not ws.closed


# -- a raw peer --------------------------------------------------------------------------------
def test_a_fragmented_message_comes_whole(drive) -> None:
    def fragments(conn: socket.socket, key: str) -> None:
        conn.sendall(switching(key) + frame(TEXT, b'{"a": ', fin=False) + frame(PING, b"p")
                     + frame(CONT, b'"b"', fin=False) + frame(CONT, b"}") + frame(BINARY, b"\x00\x01"))
        conn.recv(1024)

    for peer in _peer(fragments):
        with drive.connect(peer.url) as ws:
            assert ws.recv_json() == {"a": "b"}
            assert ws.recv() == b"\x00\x01"


def test_a_malformed_frame_fails_the_connection_with_1002(drive) -> None:
    def malformed(conn: socket.socket, key: str) -> None:
        conn.sendall(switching(key) + frame(TEXT, b"ok") + frame(TEXT, b"x", rsv=0b100))
        peer.read(conn)  # the client's close frame

    for peer in _peer(malformed):
        with drive.connect(peer.url) as ws:
            assert ws.recv() == b"ok"
            with pytest.raises(WebSocketProtocolError, match="broke the WebSocket protocol"):
                ws.recv()
        peer.thread.join(10)
        assert peer.seen and peer.seen[0][0] == CLOSE
        assert int.from_bytes(peer.seen[0][1][:2], "big") == 1002


def test_text_that_is_not_utf8_fails_the_connection_with_1007(drive) -> None:
    def bad_text(conn: socket.socket, key: str) -> None:
        conn.sendall(switching(key) + frame(TEXT, b'{"x": "\xff"}'))
        peer.read(conn)

    for peer in _peer(bad_text):
        with drive.connect(peer.url) as ws, pytest.raises(WebSocketProtocolError, match="not UTF-8"):
            ws.recv()
        peer.thread.join(10)
        assert int.from_bytes(peer.seen[0][1][:2], "big") == 1007


def test_a_peer_that_never_answers_pings_is_found_dead(drive) -> None:
    def silent(conn: socket.socket, key: str) -> None:
        conn.sendall(switching(key))
        while True:
            peer.read(conn)  # pings come; no pong goes back

    for peer in _peer(silent):
        ws = drive.connect(peer.url, ping_interval=0.1, ping_timeout=0.4)
        with pytest.raises(WebSocketTimeout, match="did not answer a ping"):
            ws.recv(timeout=30)
        assert ws.closed
        ws.close()
        assert any(op == PING for op, _ in peer.seen)


def test_an_idle_socket_is_pinged_while_nobody_reads(drive) -> None:
    pings = threading.Event()

    def answering(conn: socket.socket, key: str) -> None:
        conn.sendall(switching(key))
        while True:
            op, data = peer.read(conn)
            if op == PING:
                conn.sendall(frame(PONG, data))
                pings.set()
            if op == CLOSE:
                conn.sendall(frame(CLOSE, data))
                return

    for peer in _peer(answering):
        ws = drive.connect(peer.url, ping_interval=0.2, ping_timeout=10)
        deadline = time.monotonic() + 20
        while not pings.is_set():  # no recv(): the pinger thread / the loop timer ping
            assert time.monotonic() < deadline, "no ping while the socket sat idle"
            drive.sleep(0.1)
        assert not ws.closed
        ws.close()


def test_close_while_another_thread_waits_in_recv(server) -> None:
    # [sync] only: a reader thread and a closing thread (the async driver has one loop).
    ws = WsDriver("sync").connect(_url(server), headers=AUTH)
    got: list[BaseException] = []

    def reader() -> None:
        try:
            ws.recv(timeout=30)
        except BaseException as exc:
            got.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.2)  # let it block in recv (a hang guard, not a measurement)
    ws.close()
    t.join(20)
    assert not t.is_alive() and ws.closed
    assert isinstance(got[0], WebSocketClosed) and got[0].clean
