"""llmclient's ``client.responses.connect()`` through software nobody here wrote, sync and async,
the official client as the control where it can go: nginx in front of the reference server
(cleartext and TLS, verified with the client's own ``verify``; an ``nginx -s reload``
mid-response), tinyproxy as a forward proxy (the client's ``proxy=``, ws:// and wss://), and a
proxy that refuses CONNECT."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import llmclient
from tests._ws import final_of, text_of
from tests.client.test_ws_connect import KEY, MODEL, TERMINAL, Conn
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

from .nginx import Nginx, running_nginx
from .system_tools import need
from .tinyproxy import Tinyproxy, start_tinyproxy, stop_tinyproxy

pytest.importorskip("websockets")


@pytest.fixture(scope="module")
def upstream() -> Iterator[RefServer]:
    s = start_ref_server(FAULT_HEADERS, "--api-key", KEY)
    yield s
    stop_ref_server(s)


@pytest.fixture(scope="module")
def nginx(upstream: RefServer) -> Iterator[Nginx]:
    with running_nginx(upstream.port) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def tinyproxy() -> Iterator[Tinyproxy]:
    need("tinyproxy")
    p = start_tinyproxy()
    yield p
    stop_tinyproxy(p)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _turns(ws: Conn, n: int = 2) -> list[str]:
    previous, texts = None, []
    for i in range(n):
        ws.create(model=MODEL, input=f"turn {i}", max_output_tokens=16, temperature=0, store=False,
                  **({"previous_response_id": previous} if previous else {}))
        final = final_of(ws.until_done())
        previous = final.response.id
        texts.append(final.response.output_text)
    return texts


@pytest.mark.parametrize("listener", ["ws", "ws_tls"])
def test_chained_turns_through_nginx_as_the_official_client_s(nginx, listener, kind) -> None:
    verify = {"verify": nginx.ca_path} if listener == "ws_tls" else {}
    with Conn("llmclient", kind, nginx.base_url(listener), client_kw=verify) as ws:
        ours = _turns(ws)
    if listener == "ws":  # the official client needs its own TLS options for the test CA
        with Conn("official", kind, nginx.base_url(listener)) as ws:
            assert _turns(ws) == ours
    assert all(ours)


def test_the_test_ca_is_not_trusted_without_verify(nginx, kind) -> None:
    with pytest.raises(llmclient.APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"), \
            Conn("llmclient", kind, nginx.base_url("ws_tls")):
        pass


def test_an_nginx_reload_mid_response_lets_the_response_finish(nginx, kind) -> None:
    with Conn("llmclient", kind, nginx.base_url("ws"), extra_headers={"x-fault": "slow_ms=30"}) as ws:
        ws.create(model=MODEL, input="Tell me about the sea.", max_output_tokens=40, temperature=0)
        seen = [ws.recv() for _ in range(5)]
        nginx.reload()
        rest = ws.until_done()
        assert rest[-1].type == "response.incomplete" and ws.conn.last_timings.recovered is None
        assert len([e for e in seen + rest if e.type == "response.output_text.delta"]) == 40
        ws.create(model=MODEL, input="More.", max_output_tokens=16,
                  previous_response_id=rest[-1].response.id)
        assert final_of(ws.until_done()).type in TERMINAL


def test_ws_and_wss_through_the_client_s_proxy(upstream, ref_server_tls, tinyproxy, kind) -> None:
    with Conn("llmclient", kind, upstream, client_kw={"proxy": tinyproxy.url}) as ws:
        assert all(_turns(ws, 1))
    with Conn("llmclient", kind, ref_server_tls, api_key="sk-any",
              client_kw={"proxy": tinyproxy.url, "verify": ref_server_tls.ca_path}) as ws:
        ws.create(model=MODEL, input="Hi", max_output_tokens=16)
        assert text_of(ws.until_done())
    tunnels = [r for r in tinyproxy.requests() if r.startswith("CONNECT ")]
    assert f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1" in tunnels
    assert f"CONNECT 127.0.0.1:{ref_server_tls.port} HTTP/1.1" in tunnels


def test_a_proxy_that_refuses_connect_is_an_error_naming_it(upstream, kind) -> None:
    need("tinyproxy")
    proxy = start_tinyproxy(connect_ports=(443,))
    try:
        with pytest.raises(llmclient.APIConnectionError,
                           match=rf"/v1/responses did not open: .*proxy {proxy.url}/? refused CONNECT.*403"), \
                Conn("llmclient", kind, upstream, client_kw={"proxy": proxy.url}):
            pass
    finally:
        stop_tinyproxy(proxy)
