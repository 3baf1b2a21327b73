"""The WebSocket transport's pure parts, without sockets: the Session against websockets' own
server protocol (sans-I/O, in memory), the heartbeat's decisions on a made-up clock, the
handshake advice, proxy matching, and the import guard naming the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest
from websockets.extensions.permessage_deflate import enable_server_permessage_deflate
from websockets.server import ServerProtocol

from llmclient.transport.websocket import HandshakeError, Heartbeat, Session
from llmclient.transport.websocket.errors import close_meaning, handshake_advice
from llmclient.transport.websocket.session import (
    Closed,
    Message,
    Opened,
    Pong,
    _at_frame_start,
    http_equivalent,
)

URL = "ws://example.test/v1/responses"


def _pair(compression: str | None = None, server_deflate: bool = False,
          **kw) -> tuple[Session, ServerProtocol, list]:
    client = Session(URL, (("Authorization", "Bearer k"), ("X-Request-ID", "r1")),
                     compression=compression, **kw)
    server = ServerProtocol(extensions=enable_server_permessage_deflate(None) if server_deflate else None)
    server.receive_data(client.start())
    (request,) = server.events_received()
    server.send_response(server.accept(request))
    events = client.receive(b"".join(server.data_to_send()))
    return client, server, [request, *events]


def _to_client(server: ServerProtocol, client: Session) -> list:
    return client.receive(b"".join(server.data_to_send()))


def _to_server(data: bytes, server: ServerProtocol) -> list:
    server.receive_data(data)
    return server.events_received()


def test_the_handshake_sends_the_caller_s_headers_and_opens() -> None:
    client, _, (request, *events) = _pair()
    assert request.path == "/v1/responses"
    assert request.headers["Authorization"] == "Bearer k" and request.headers["X-Request-ID"] == "r1"
    assert "Sec-WebSocket-Extensions" not in request.headers  # no compression offered by default
    assert len(events) == 1 and isinstance(events[0], Opened) and events[0].extensions == ()
    assert client.open


def test_messages_both_ways_pings_answered_and_a_clean_close() -> None:
    client, server, _ = _pair()
    (frame,) = _to_server(client.send_text(b'{"type": "response.create"}'), server)
    assert frame.data == b'{"type": "response.create"}'
    server.send_text(b"hello")
    server.send_binary(b"\x00")
    server.send_ping(b"p1")
    events = _to_client(server, client)
    assert events[:2] == [Message(b"hello", True), Message(b"\x00", False)]
    (pong,) = _to_server(client.outgoing(), server)  # the ping answered by the protocol
    assert pong.opcode.name == "PONG" and pong.data == b"p1"
    _to_server(client.ping(b"c1"), server)
    assert _to_client(server, client) == [Pong(b"c1")]
    server.send_close(1001, "bye")
    assert _to_client(server, client) == [Closed(1001, "bye", True)]
    assert not client.open and client.closing
    with pytest.raises(Exception, match=r"cannot send: .* the server closed it with code 1001"):
        client.send("late")


def test_a_close_we_start_is_ours() -> None:
    client, server, _ = _pair()
    _to_server(client.close(4000, "done"), server)
    assert _to_client(server, client) == [Closed(4000, "done", False)]
    assert client.closed_error().code == 4000 and not client.closed_error().by_server


def test_fragments_are_put_back_together() -> None:
    client, server, _ = _pair()
    server.send_text(b'{"a": ', fin=False)
    server.send_continuation(b'"b"', fin=False)
    server.send_ping(b"between")
    server.send_continuation(b"}", fin=True)
    events = _to_client(server, client)
    assert [e for e in events if isinstance(e, Message)] == [Message(b'{"a": "b"}', True)]


def test_permessage_deflate_when_both_sides_want_it() -> None:
    client, server, (request, opened) = _pair("deflate", server_deflate=True)
    assert "permessage-deflate" in request.headers["Sec-WebSocket-Extensions"]
    assert opened.extensions == ("permessage-deflate",)
    payload = b'{"type": "response.output_text.delta", "delta": " the"}' * 4
    server.send_text(payload)
    wire = b"".join(server.data_to_send())
    assert len(wire) < len(payload)
    assert client.receive(wire) == [Message(payload, True)]
    _, _, (_, plain) = _pair("deflate", server_deflate=False)  # offered, not taken
    assert plain.extensions == ()


def test_a_refused_upgrade_is_a_handshake_error_with_status_and_body() -> None:
    client = Session(URL)
    client.start()
    answer = (b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
              b"content-length: 27\r\n\r\n{\"error\": {\"code\": \"bad\"}}\n")
    with pytest.raises(HandshakeError) as info:
        client.receive(answer)
    assert info.value.status == 401 and info.value.body.startswith(b'{"error"')
    assert ("content-type", "application/json") in info.value.headers


def test_a_bad_accept_key_is_a_protocol_error_in_the_handshake() -> None:
    client = Session(URL)
    client.start()
    answer = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Accept: wrong\r\n\r\n")
    with pytest.raises(Exception, match=r"handshake answer: .*Sec-WebSocket-Accept"):
        client.receive(answer)


def test_a_message_over_max_size_sets_the_failure_after_what_came_before() -> None:
    client, server, _ = _pair(max_size=10)
    server.send_text(b"short")
    server.send_text(b"x" * 100)
    events = _to_client(server, client)
    assert events[0] == Message(b"short", True)
    assert type(client.failure).__name__ == "MessageTooBig" and "1009" in str(client.failure)
    closing = _to_server(client.outgoing(), server)
    assert closing[0].opcode.name == "CLOSE"


def test_not_a_websocket_url_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a WebSocket URL"):
        Session("http://example.test/v1/responses")
    with pytest.raises(ValueError, match="compression"):
        Session(URL, compression="zstd")


def test_proxies_match_ws_as_http_and_wss_as_https() -> None:
    assert http_equivalent("ws://h:1/v1/responses") == "http://h:1/v1/responses"
    assert http_equivalent("wss://h/v1/responses") == "https://h/v1/responses"


# -- the heartbeat ---------------------------------------------------------------------------
def test_a_ping_goes_after_interval_of_silence_and_a_missing_pong_is_death() -> None:
    hb = Heartbeat(interval=20, timeout=10)
    hb.start(100.0)
    assert not hb.due(119.9) and hb.next_check(110.0) == pytest.approx(10.0)
    assert hb.due(120.0)
    payload = hb.ping(120.0)
    assert len(payload) == 12 and not hb.due(125.0)  # one ping in flight at a time
    assert not hb.dead(129.9) and hb.dead(130.0) and hb.next_check(125.0) == pytest.approx(5.0)
    hb.pong(payload, 126.0)
    assert not hb.dead(200.0) and hb.next_check(126.0) == pytest.approx(20.0)


def test_any_byte_received_counts_as_life() -> None:
    hb = Heartbeat(interval=5, timeout=5)
    hb.start(0.0)
    hb.ping(5.0)
    hb.received(9.0)  # a message, not the pong: the peer is alive all the same
    assert not hb.dead(11.0) and not hb.due(13.0) and hb.due(14.0)


def test_no_interval_no_pings_and_no_timeout_no_death() -> None:
    hb = Heartbeat(interval=None, timeout=None)
    hb.start(0.0)
    assert not hb.due(1e9) and hb.next_check(0.0) is None
    hb.ping(1.0)
    assert not hb.dead(1e9) and hb.next_check(2.0) is None


# -- advice and close codes --------------------------------------------------------------------
@pytest.mark.parametrize(("status", "headers", "needle"), [
    (401, [], "API key"),
    (403, [], "API key"),
    (404, [], "does not offer the Responses WebSocket mode"),
    (426, [("Upgrade", "h2c")], "asked for 'h2c'"),
    (302, [("Location", "wss://elsewhere/v1/responses")], "wss://elsewhere/v1/responses"),
    (429, [], "try again later"),
    (503, [], "try again later"),
    (200, [], "does not speak WebSockets"),
    (418, [], "does not accept a WebSocket here"),
])
def test_each_refusal_says_what_to_do(status, headers, needle) -> None:
    assert needle in handshake_advice(status, headers)
    err = HandshakeError("wss://user:secret@h/v1/responses", status, "", headers, b"")
    assert f"HTTP {status}" in str(err) and "secret" not in str(err) and err.retryable == (status in (429, 503))


def test_close_codes_are_named() -> None:
    assert "abnormal" in close_meaning(1006) and "restart" in close_meaning(1012)
    assert close_meaning(4001) == "an application's own code" and close_meaning(None) == "no close frame"


def test_without_websockets_the_import_error_names_the_extra() -> None:
    code = ("import sys; sys.modules['websockets'] = None; sys.modules['websockets.version'] = None\n"
            "try:\n    import llmclient.transport.websocket\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'llmclient[ws]'" in out.stdout


def test_import_llmclient_does_not_load_the_websocket_transport() -> None:
    code = "import sys, llmclient; print(any('websocket' in m for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_poller_looks_again_within_an_interval_while_a_ping_is_in_flight() -> None:
    hb = Heartbeat(interval=1, timeout=20)
    hb.start(0.0)
    assert hb.poll_in(0.5) == pytest.approx(0.5)
    hb.ping(1.0)
    assert hb.next_check(1.0) == pytest.approx(20.0) and hb.poll_in(1.0) == pytest.approx(1.0)


# -- plain frames read by the Session itself (Session._whole_frames) against websockets' parser --
def _hello(client: Session, deflate: bool = False) -> bytes:
    """The handshake's answer to ``client``, from websockets' server protocol."""
    server = ServerProtocol(extensions=enable_server_permessage_deflate(None) if deflate else None)
    server.receive_data(client.start())
    (request,) = server.events_received()
    server.send_response(server.accept(request))
    return b"".join(server.data_to_send())


def _server_bytes(script: list[tuple[str, object]], deflate: bool = False) -> list[bytes]:
    """What websockets' server protocol writes for ``script`` once open: each step's frames
    (a server's frames are not masked: the same bytes for any client; compressed ones depend
    only on the server's compressor)."""
    server = ServerProtocol(extensions=enable_server_permessage_deflate(None) if deflate else None)
    server.receive_data(Session(URL, compression="deflate" if deflate else None).start())
    (request,) = server.events_received()
    server.send_response(server.accept(request))
    server.data_to_send()
    steps = []
    for op, arg in script:
        if op == "text":
            server.send_text(arg)  # type: ignore[arg-type]
        elif op == "part":  # a fragment, then its continuation
            server.send_text(arg[:3], fin=False)  # type: ignore[index]
            server.send_continuation(arg[3:], fin=True)  # type: ignore[index]
        elif op == "binary":
            server.send_binary(arg)  # type: ignore[arg-type]
        elif op == "ping":
            server.send_ping(arg)  # type: ignore[arg-type]
        elif op == "raw":  # a frame as given (reserved bits, a mask ...)
            server.writes.append(arg)  # type: ignore[attr-defined]
        elif op == "close":
            server.send_close(1000, "done")
        steps.append(b"".join(server.data_to_send()))
    return steps


def _run(stream: bytes, cuts: list[int], plain: bool, deflate: bool = False, **kw) -> tuple[list, bytes, object, bool]:
    client = Session(URL, compression="deflate" if deflate else None, **kw)
    client._plain = plain and client._plain
    (opened,) = client.receive(_hello(client, deflate))
    assert bool(client._p.extensions) == deflate
    events: list = [type(opened)]
    out = b""
    at = 0
    for cut in [*cuts, len(stream)]:
        if cut > at:
            events += client.receive(stream[at:cut])
            out += client.outgoing()
            at = cut
    failure = client.failure
    return events, out, None if failure is None else (type(failure), str(failure)), client.open


SCRIPTS = {
    "text": [("text", b'{"type":"response.output_text.delta","delta":"a"}')] * 5,
    "utf8": [("text", "caf\u00e9 \u2603".encode()), ("text", b"ascii")],
    "sizes": [("text", b"x" * 125), ("text", b"y" * 126), ("binary", b"\x00" * 70000), ("text", b"z")],
    "mixed": [("text", b"a"), ("ping", b"p1"), ("part", b"fragmented message"), ("binary", b"\x01\x02"),
              ("text", b"b"), ("close", None)],
    "bad utf8": [("text", b"ok"), ("raw", b"\x81\x02\xff\xfe"), ("text", b"after")],
    "reserved bit": [("text", b"ok"), ("raw", b"\xc1\x01a"), ("text", b"after")],
    "masked": [("text", b"ok"), ("raw", b"\x81\x81\x00\x00\x00\x00a"), ("text", b"after")],
    "too big": [("text", b"ok"), ("text", b"x" * 300), ("text", b"after")],
    # with permessage-deflate: compressed frames that do not inflate, one set RSV1 on a ping
    "bad deflate": [("text", b"ok " * 20), ("raw", b"\xc1\x04\xff\xff\xff\xff"), ("text", b"after")],
    "rsv1 ping": [("text", b"ok"), ("raw", b"\xc9\x00"), ("text", b"after")],
}


@pytest.mark.parametrize("deflate", [False, True], ids=["plain", "deflate"])
@pytest.mark.parametrize("name", SCRIPTS)
def test_plain_frames_read_here_give_what_the_protocol_gives(name: str, deflate: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way of cutting the server's bytes into reads (each cut point, and every byte on its
    own) gives the same events, answers (pongs, close frames), failure and state with the
    Session's own reading of plain frames as with websockets' parser alone."""
    import random
    import types

    import websockets.frames

    # the client's frames are masked with random keys: one fixed key, so that the answers compare
    monkeypatch.setattr(websockets.frames, "secrets", types.SimpleNamespace(token_bytes=lambda n: b"\x01" * n))

    stream = b"".join(_server_bytes(SCRIPTS[name], deflate))
    kw = {"max_size": 200} if name == "too big" else {}
    rnd = random.Random(name)
    splits = [[], list(range(1, len(stream))), *[[at] for at in range(0, len(stream), 7)],
              *[sorted(rnd.sample(range(1, len(stream)), 5)) for _ in range(20)]]
    for cuts in splits:
        assert _run(stream, cuts, True, deflate, **kw) == _run(stream, cuts, False, deflate, **kw), cuts
    if name == "text":  # and the frames were read here
        client = Session(URL, compression="deflate" if deflate else None)
        client.receive(_hello(client, deflate))
        assert _at_frame_start(client._p)
        client._p.receive_data = lambda data: pytest.fail("a plain frame went to the protocol")
        assert len(client.receive(stream)) == 5
        assert _at_frame_start(client._p) and not client._p.reader.buffer
