"""The Responses WebSocket mode and llmclient's WebSocket transport through software nobody here
wrote, sync and async:

* nginx 1.22 in front of the reference server (its documented WebSocket proxying, cleartext and
  TLS): the official client's ``responses.connect()`` and llmclient's transport; ``nginx -s
  reload`` in the middle of a response; an idle socket under a short ``proxy_read_timeout``,
  kept open by pings on silence;
* tinyproxy as a company's forward proxy: ws:// and wss:// through its CONNECT tunnel, and a
  proxy that refuses CONNECT;
* the ``websockets`` package's own server (PyPI): echo, a policy close (1008), a 426 refusal,
  permessage-deflate, TLS.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import openai
import orjson
import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response
from websockets.sync.server import ServerConnection, serve

from benchmarks.server.tls import generate_certs
from llmclient.transport.proxy import ProxyError, proxy_map
from llmclient.transport.websocket import HandshakeError, WebSocketClosed
from tests._ws import KINDS, TERMINAL, WsDriver
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

from .nginx import Nginx, running_nginx
from .system_tools import need
from .tinyproxy import start_tinyproxy, stop_tinyproxy

KEY = "sk-interop"
AUTH = (("Authorization", f"Bearer {KEY}"),)
MODEL = "gpt-4o-mini"
CREATE = {"type": "response.create", "model": MODEL, "input": "Tell me about the sea.",
          "max_output_tokens": 24, "temperature": 0}


@pytest.fixture(scope="module")
def upstream() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield s
    stop_ref_server(s)


@pytest.fixture(scope="module")
def nginx(upstream: RefServer) -> Iterator[Nginx]:
    with running_nginx(upstream.port) as proxy:
        yield proxy


@pytest.fixture(params=KINDS)
def drive(request: pytest.FixtureRequest) -> Iterator[WsDriver]:
    d = WsDriver(request.param)
    yield d
    d.close()


def _official_turns(kind: str, base_url: str, ca: str | None = None, turns: int = 2,
                    headers: dict[str, str] | None = None) -> list[Any]:
    """``turns`` chained responses over the official client's socket; their final events."""
    import httpx

    async def run_async() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0,
                                    http_client=httpx.AsyncClient(verify=_ssl(ca) if ca else True))
        options = {"ssl": _ssl(ca)} if ca else {}
        finals, previous = [], None
        async with client.responses.connect(extra_headers=headers or {},
                                            websocket_connection_options=options) as conn:
            for i in range(turns):
                await conn.response.create(model=MODEL, input=f"turn {i}", max_output_tokens=16,
                                           store=False, **({"previous_response_id": previous} if previous else {}))
                async for ev in conn:
                    if ev.type in TERMINAL or ev.type == "error":
                        finals.append(ev)
                        break
                previous = finals[-1].response.id
        await client.close()
        return finals

    if kind == "async":
        return asyncio.run(run_async())
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    options = {"ssl": _ssl(ca)} if ca else {}
    finals, previous = [], None
    with client.responses.connect(extra_headers=headers or {},
                                  websocket_connection_options=options) as conn:  # type: ignore[typeddict-unknown-key]
        for i in range(turns):
            conn.response.create(model=MODEL, input=f"turn {i}", max_output_tokens=16, store=False,
                                 **({"previous_response_id": previous} if previous else {}))
            for ev in conn:
                if ev.type in TERMINAL or ev.type == "error":
                    finals.append(ev)
                    break
            previous = finals[-1].response.id
    return finals


def _ssl(ca: str) -> Any:
    import ssl

    return ssl.create_default_context(cafile=ca)


# -- nginx -------------------------------------------------------------------------------------
@pytest.mark.parametrize("listener", ["ws", "ws_tls"])
def test_the_official_client_through_nginx(nginx, listener, drive) -> None:
    ca = nginx.ca_path if listener == "ws_tls" else None
    finals = _official_turns(drive.kind, nginx.base_url(listener), ca)
    assert [f.type for f in finals] == ["response.completed"] * 2 or all(
        f.type in TERMINAL for f in finals)
    assert finals[1].response.previous_response_id == finals[0].response.id


@pytest.mark.parametrize("listener", ["ws", "ws_tls"])
def test_llmclient_s_transport_through_nginx(nginx, listener, drive) -> None:
    with drive.connect(nginx.ws_url(listener), headers=AUTH, verify=nginx.ca_path) as ws:
        ws.send_json(CREATE)
        first = ws.until_done()[-1]
        ws.send_json({**CREATE, "input": "More.", "previous_response_id": first["response"]["id"]})
        second = ws.until_done()[-1]
    assert second["response"]["previous_response_id"] == first["response"]["id"]
    assert second["server_timing"]  # the upstream's timings come through nginx untouched


def test_an_nginx_reload_mid_response_leaves_the_socket_to_finish(nginx, drive) -> None:
    """nginx's reload starts new workers and lets the old ones finish: an upgraded connection
    stays with its old worker until it closes (nginx has no worker_shutdown_timeout by
    default), so the response in flight ends normally and the socket takes more turns."""
    headers = (*AUTH, ("x-fault", "slow_ms=30"))
    with drive.connect(nginx.ws_url("ws"), headers=headers) as ws:
        ws.send_json({**CREATE, "max_output_tokens": 40})
        seen = [ws.recv_json() for _ in range(5)]
        nginx.reload()
        rest = ws.until_done()
        # it ended normally: at the 40 tokens' cap, or before it where the model stopped (the
        # simulated model draws its length: 22 tokens once); every token's text came
        assert rest[-1]["type"] in ("response.incomplete", "response.completed")
        assert 1 <= rest[-1]["response"]["usage"]["output_tokens"] <= 40
        deltas = [e["delta"] for e in seen + rest if e["type"] == "response.output_text.delta"]
        [message] = [o for o in rest[-1]["response"]["output"] if o["type"] == "message"]
        assert "".join(deltas) == message["content"][0]["text"] and len(deltas) >= 1
        ws.send_json({**CREATE, "previous_response_id": rest[-1]["response"]["id"]})
        assert ws.until_done()[-1]["type"] in TERMINAL
    with drive.connect(nginx.ws_url("ws"), headers=AUTH) as fresh:  # the new workers serve too
        fresh.send_json(CREATE)
        assert fresh.until_done()[-1]["type"] in TERMINAL


def test_the_official_client_s_socket_survives_an_nginx_reload_mid_response(nginx, drive) -> None:
    """The control for the test above: the same reload under the official client's socket."""
    base_url = nginx.base_url("ws")

    def sync_run() -> list[Any]:
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        with client.responses.connect(extra_headers={"x-fault": "slow_ms=30"}) as conn:
            conn.response.create(model=MODEL, input="x", max_output_tokens=40)
            events = [conn.recv() for _ in range(5)]
            nginx.reload()
            while events[-1].type not in TERMINAL:
                events.append(conn.recv())
            conn.response.create(model=MODEL, input="y", max_output_tokens=16,
                                 previous_response_id=events[-1].response.id)
            events.append(next(e for e in conn if e.type in TERMINAL))
        return events

    async def async_run() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        async with client.responses.connect(extra_headers={"x-fault": "slow_ms=30"}) as conn:
            await conn.response.create(model=MODEL, input="x", max_output_tokens=40)
            events = [await conn.recv() for _ in range(5)]
            nginx.reload()
            while events[-1].type not in TERMINAL:
                events.append(await conn.recv())
            await conn.response.create(model=MODEL, input="y", max_output_tokens=16,
                                       previous_response_id=events[-1].response.id)
            async for e in conn:
                if e.type in TERMINAL:
                    events.append(e)
                    break
        await client.close()
        return events

    events = sync_run() if drive.kind == "sync" else asyncio.run(async_run())
    first = next(e for e in events if e.type in TERMINAL)
    # it ended normally: at the 40 tokens' cap, or before it where the model stopped (the
    # simulated model draws its length: 22 tokens once); every token's text came
    assert first.type in ("response.incomplete", "response.completed")
    assert 1 <= first.response.usage.output_tokens <= 40
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == first.response.output_text
    assert events[-1].type in TERMINAL and events[-1].response.previous_response_id


def test_pings_keep_an_idle_socket_open_through_a_short_proxy_read_timeout(nginx, drive) -> None:
    # proxy_read_timeout 1s on this listener: a socket silent for longer is closed by nginx.
    quiet = drive.connect(nginx.ws_url("ws_short_read"), headers=AUTH, ping_interval=None)
    with pytest.raises(WebSocketClosed) as info:
        quiet.recv(timeout=20)
    assert info.value.code == 1006  # nginx just closes the TCP connection
    quiet.close()
    with drive.connect(nginx.ws_url("ws_short_read"), headers=AUTH, ping_interval=0.3) as ws:
        drive.sleep(2.5)  # idle, nobody reading: pinged all the same
        assert not ws.closed
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] in TERMINAL


# -- tinyproxy ---------------------------------------------------------------------------------
@pytest.fixture
def tinyproxy() -> Iterator[Any]:
    need("tinyproxy")
    p = start_tinyproxy()
    yield p
    stop_tinyproxy(p)


def test_ws_and_wss_go_through_a_forward_proxy_s_connect_tunnel(upstream, ref_server_tls,
                                                                 tinyproxy, drive) -> None:
    url = upstream.url.replace("http", "ws", 1) + "/v1/responses"
    with drive.connect(url, headers=AUTH, proxies=proxy_map(tinyproxy.url)) as ws:
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] in TERMINAL
    tls_url = ref_server_tls.url.replace("https", "wss", 1) + "/v1/responses"
    with drive.connect(tls_url, verify=ref_server_tls.ca_path, proxies=proxy_map(tinyproxy.url)) as ws:
        ws.send_json(CREATE)
        assert ws.until_done()[-1]["type"] in TERMINAL
    tunnels = [r for r in tinyproxy.requests() if r.startswith("CONNECT ")]
    assert f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1" in tunnels
    assert f"CONNECT 127.0.0.1:{ref_server_tls.port} HTTP/1.1" in tunnels


def test_a_proxy_that_refuses_connect_is_an_error_naming_it(upstream, drive) -> None:
    proxy = start_tinyproxy(connect_ports=(443,))
    try:
        url = upstream.url.replace("http", "ws", 1) + "/v1/responses"
        with pytest.raises(ProxyError, match=rf"proxy {proxy.url}/? refused CONNECT to 127.0.0.1:{upstream.port}: 403") as info:
            drive.connect(url, headers=AUTH, proxies=proxy_map(proxy.url))
        assert info.value.status == 403
    finally:
        stop_tinyproxy(proxy)


# -- the websockets package's own server ---------------------------------------------------------
def _handler(conn: ServerConnection) -> None:
    path = conn.request.path if conn.request is not None else ""
    if path == "/policy":
        conn.close(1008, "not allowed here")
        return
    for message in conn:
        conn.send(message)


def _refuse_426(conn: ServerConnection, request: Any) -> Response | None:
    if request.path == "/old":
        return Response(426, "Upgrade Required", Headers([("Upgrade", "websocket"),
                                                           ("Sec-WebSocket-Version", "8")]), b"")
    return None


@pytest.fixture(scope="module")
def websockets_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(ws origin, wss origin, CA path) of websockets' own server, on two threads."""
    import ssl

    certs = generate_certs(tmp_path_factory.mktemp("ws-certs"))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certs.cert, certs.key)
    plain = serve(_handler, "127.0.0.1", 0, process_request=_refuse_426)
    secure = serve(_handler, "127.0.0.1", 0, ssl=ctx)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (plain, secure)]
    for t in threads:
        t.start()
    try:
        yield (f"ws://127.0.0.1:{plain.socket.getsockname()[1]}",
               f"wss://127.0.0.1:{secure.socket.getsockname()[1]}", str(certs.ca))
    finally:
        for s in (plain, secure):
            s.shutdown()
        for t in threads:
            t.join(10)


def test_websockets_server_echoes_text_and_binary(websockets_server, drive) -> None:
    ws_origin, _, _ = websockets_server
    with drive.connect(ws_origin + "/echo") as ws:
        ws.send("hello")
        assert ws.recv() == b"hello"
        ws.send(b"\x00\x01\x02")
        assert ws.recv() == b"\x00\x01\x02"
        big = orjson.dumps({"delta": "x" * 200_000})  # fragments and lengths past 64 KiB
        ws.driver.run(ws.ws.send_text(big))
        assert ws.recv() == big


def test_websockets_server_negotiates_permessage_deflate(websockets_server, drive) -> None:
    ws_origin, _, _ = websockets_server
    with drive.connect(ws_origin + "/echo", compression="deflate") as ws:
        assert ws.extensions == ("permessage-deflate",)
        payload = orjson.dumps({"type": "response.output_text.delta", "delta": " the sea"} )
        ws.driver.run(ws.ws.send_text(payload))
        assert ws.recv() == payload


def test_websockets_server_over_tls(websockets_server, drive) -> None:
    _, wss_origin, ca = websockets_server
    with drive.connect(wss_origin + "/echo", verify=ca) as ws:
        ws.send("over tls")
        assert ws.recv() == b"over tls"


def test_a_policy_close_names_its_code_and_reason(websockets_server, drive) -> None:
    ws_origin, _, _ = websockets_server
    ws = drive.connect(ws_origin + "/policy")
    with pytest.raises(WebSocketClosed, match="code 1008, policy violation \\(not allowed here\\)") as info:
        ws.recv()
    assert info.value.by_server and info.value.reason == "not allowed here" and not info.value.clean
    ws.close()


def test_a_426_from_websockets_server_is_a_handshake_error(websockets_server, drive) -> None:
    ws_origin, _, _ = websockets_server
    with pytest.raises(HandshakeError, match="HTTP 426 Upgrade Required") as info:
        drive.connect(ws_origin + "/old")
    assert info.value.status == 426 and not info.value.retryable
