"""llmclient through a real forward proxy (tinyproxy, Debian's package): the way a company
network makes every client go.

* https origins (the reference server with --tls): a CONNECT tunnel, then TLS + ALPN to the
  origin inside it, so the call still speaks HTTP/2 end to end;
* http origins: absolute-form HTTP/1.1 requests to the proxy, never an h2c probe;
* ``proxy=``, and HTTP(S)_PROXY / ALL_PROXY / NO_PROXY read as the official client reads them
  (checked side by side with it: the same environment sends both through the proxy, or
  neither);
* a proxy that wants credentials, refuses the tunnel, or is down: an APIConnectionError that
  names the proxy (userinfo masked) and its answer, with the trace id; the next call works.

Each test starts its own tinyproxy on a free loopback port; sync and async.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from llmclient import AsyncOpenAI, OpenAI

from .nginx import free_port
from .tinyproxy import Tinyproxy, start_tinyproxy, stop_tinyproxy

MSG = [{"role": "user", "content": "hi"}]
MODEL = "sim-zero"
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
             "http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    llmclient.close_all()
    yield
    llmclient.close_all()


@pytest.fixture
def proxy() -> Iterator[Tinyproxy]:
    p = start_tinyproxy()
    yield p
    stop_tinyproxy(p)


def _model(client: OpenAI) -> str:
    return client.models.list().data[0].id


def _sync(base_url: str, ca: str | None, n: int = 2, **kw: Any) -> list[Any]:
    """n calls and a stream through one client; errors returned, not raised."""
    c = OpenAI(base_url=base_url, api_key="k", timeout=20, max_retries=0, verify=ca or True, **kw)
    out: list[Any] = []
    for _ in range(n):
        try:
            r = c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=8)
            out.append((r.timings.http_version, r.choices[0].message.content))
        except llmclient.APIError as exc:
            out.append(exc)
    try:
        chunks = list(c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=8, stream=True))
        out.append(("stream", len(chunks)))
    except llmclient.APIError as exc:
        out.append(exc)
    c.close()
    return out


def _async(base_url: str, ca: str | None, n: int = 2, **kw: Any) -> list[Any]:
    async def go() -> list[Any]:
        c = AsyncOpenAI(base_url=base_url, api_key="k", timeout=20, max_retries=0, verify=ca or True, **kw)
        out: list[Any] = []
        for _ in range(n):
            try:
                r = await c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=8)
                out.append((r.timings.http_version, r.choices[0].message.content))
            except llmclient.APIError as exc:
                out.append(exc)
        try:
            chunks = [ch async for ch in await c.chat.completions.create(
                model=MODEL, messages=MSG, max_tokens=8, stream=True)]
            out.append(("stream", len(chunks)))
        except llmclient.APIError as exc:
            out.append(exc)
        await c.close()
        return out
    return asyncio.run(go())


CALLERS = {"sync": _sync, "async": _async}


def _all_answered(results: list[Any], version: str) -> None:
    *calls, stream = results
    assert all(not isinstance(r, Exception) for r in results), results
    assert all(v == version and text for v, text in calls), calls
    assert stream[0] == "stream" and stream[1] > 1


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_https_origin_goes_through_a_connect_tunnel_and_speaks_http2_inside(
        mode: str, proxy: Tinyproxy, ref_server_tls: Any) -> None:
    results = CALLERS[mode](ref_server_tls.base_url, ref_server_tls.ca_path, proxy=proxy.url)
    _all_answered(results, "HTTP/2")
    tunnels = [r for r in proxy.requests() if r.startswith("CONNECT ")]
    assert tunnels == [f"CONNECT 127.0.0.1:{ref_server_tls.port} HTTP/1.1"]  # one connection, reused


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_https_http1_origin_goes_through_the_tunnel_over_http1(
        mode: str, proxy: Tinyproxy, tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.conftest import FAULT_HEADERS, start_ref_server, stop_ref_server

    server = start_ref_server(FAULT_HEADERS, "--tls", "--http1-only", "--cert-dir",
                              str(tmp_path_factory.mktemp("h1-tls")))
    try:
        results = CALLERS[mode](server.base_url, server.ca_path, proxy=proxy.url)
    finally:
        stop_ref_server(server)
    _all_answered(results, "HTTP/1.1")
    assert all(r == f"CONNECT 127.0.0.1:{server.port} HTTP/1.1" for r in proxy.requests())


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_http_origin_gets_absolute_form_requests_and_no_h2c_probe(
        mode: str, proxy: Tinyproxy, ref_server: Any) -> None:
    results = CALLERS[mode](ref_server.base_url, None, proxy=proxy.url)
    _all_answered(results, "HTTP/1.1")
    seen = proxy.requests()
    target = f"POST {ref_server.url}/v1/chat/completions HTTP/1.1"
    assert seen.count(target) == 3, seen
    assert not any("PRI" in r or r.startswith("CONNECT") for r in seen)


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_proxy_credentials_go_as_proxy_authorization_and_never_into_messages(
        mode: str, ref_server_tls: Any, caplog: pytest.LogCaptureFixture) -> None:
    p = start_tinyproxy(auth=("alice", "s3cret"))
    try:
        caplog.set_level(logging.DEBUG, logger="llmclient")
        good = CALLERS[mode](ref_server_tls.base_url, ref_server_tls.ca_path,
                             proxy=f"http://alice:s3cret@127.0.0.1:{p.port}")
        llmclient.close_all()
        bad = CALLERS[mode](ref_server_tls.base_url, ref_server_tls.ca_path, n=1,
                            proxy=f"http://alice:wrong-pass@127.0.0.1:{p.port}")
    finally:
        stop_tinyproxy(p)
    _all_answered(good, "HTTP/2")
    err = bad[0]
    assert isinstance(err, llmclient.APIConnectionError) and not isinstance(err, llmclient.APITimeoutError)
    text = str(err)
    assert f"proxy http://***@127.0.0.1:{p.port} refused CONNECT to 127.0.0.1:{ref_server_tls.port}: 40" in text, text
    assert err.trace_id and err.trace_id in text
    assert "wrong-pass" not in text and "s3cret" not in caplog.text and "wrong-pass" not in caplog.text


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_a_proxy_that_refuses_connect_is_a_clear_error_and_the_next_call_works(
        mode: str, ref_server_tls: Any, ref_server: Any) -> None:
    p = start_tinyproxy(connect_ports=(443,))  # tunnels to 443 only
    try:
        refused = CALLERS[mode](ref_server_tls.base_url, ref_server_tls.ca_path, n=1, proxy=p.url)
        after = CALLERS[mode](ref_server.base_url, None, proxy=p.url)  # no tunnel needed
    finally:
        stop_tinyproxy(p)
    err = refused[0]
    assert isinstance(err, llmclient.APIConnectionError), err
    assert f"proxy {p.url} refused CONNECT to 127.0.0.1:{ref_server_tls.port}: 403" in str(err)
    assert err.trace_id in str(err)
    _all_answered(after, "HTTP/1.1")


@pytest.mark.parametrize("mode", sorted(CALLERS))
def test_a_proxy_that_is_down_is_named_and_the_next_call_works_once_it_is_up(
        mode: str, ref_server_tls: Any) -> None:
    port = free_port()
    url = f"http://user:pw@127.0.0.1:{port}"

    async def go_async() -> list[Any]:
        c = AsyncOpenAI(base_url=ref_server_tls.base_url, api_key="k", timeout=20, max_retries=0,
                        verify=ref_server_tls.ca_path, proxy=url)
        out: list[Any] = []
        try:
            await c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4)
        except llmclient.APIError as exc:
            out.append(exc)
        p = start_tinyproxy(port=port)
        try:
            r = await c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4)
            out.append(r.choices[0].message.content)
        finally:
            stop_tinyproxy(p)
        await c.close()
        return out

    def go_sync() -> list[Any]:
        c = OpenAI(base_url=ref_server_tls.base_url, api_key="k", timeout=20, max_retries=0,
                   verify=ref_server_tls.ca_path, proxy=url)
        out: list[Any] = []
        try:
            c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4)
        except llmclient.APIError as exc:
            out.append(exc)
        p = start_tinyproxy(port=port)
        try:
            out.append(c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=4).choices[0].message.content)
        finally:
            stop_tinyproxy(p)
        return out

    err, answer = asyncio.run(go_async()) if mode == "async" else go_sync()
    assert isinstance(err, llmclient.APIConnectionError), err
    assert f"cannot connect to proxy http://***@127.0.0.1:{port}: connection refused" in str(err)
    assert err.trace_id in str(err) and "pw@" not in str(err)
    assert answer


# -- the environment, read as the official client reads it ------------------------------------


def _through_proxy(client_kind: str, base_url: str, ca: str | None, proxy: Tinyproxy) -> bool:
    before = len(proxy.requests())
    if client_kind == "official":
        import openai

        http_client = openai.DefaultHttpxClient(verify=ssl.create_default_context(cafile=ca)) if ca else None
        oc = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=20, http_client=http_client)
        oc.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2)  # type: ignore[arg-type]
        oc.close()
    else:
        c = OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=20, verify=ca or True)
        c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2)
        llmclient.close_all()
    return len(proxy.requests()) > before


ENVIRONMENTS = {
    "HTTPS_PROXY": lambda p: {"HTTPS_PROXY": p},
    "https_proxy lowercase": lambda p: {"https_proxy": p},
    "HTTP_PROXY only": lambda p: {"HTTP_PROXY": p},
    "ALL_PROXY": lambda p: {"ALL_PROXY": p},
    "NO_PROXY host": lambda p: {"HTTPS_PROXY": p, "HTTP_PROXY": p, "NO_PROXY": "example.com,127.0.0.1"},
    "NO_PROXY star": lambda p: {"HTTPS_PROXY": p, "HTTP_PROXY": p, "no_proxy": "*"},
    "NO_PROXY other host": lambda p: {"HTTPS_PROXY": p, "HTTP_PROXY": p, "NO_PROXY": "localhost,10.0.0.1"},
}


@pytest.mark.parametrize("origin", ["https", "http"])
@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_proxy_environment_is_honoured_as_the_official_client_honours_it(
        env: str, origin: str, proxy: Tinyproxy, ref_server_tls: Any, ref_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENTS[env](proxy.url).items():
        monkeypatch.setenv(name, value)
    server, ca = (ref_server_tls, ref_server_tls.ca_path) if origin == "https" else (ref_server, None)
    official = _through_proxy("official", server.base_url, ca, proxy)
    ours = _through_proxy("llmclient", server.base_url, ca, proxy)
    assert ours == official, f"official client through the proxy: {official}, llmclient: {ours}"


def test_an_explicit_proxy_wins_over_the_environment(proxy: Tinyproxy, ref_server: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "*")
    results = _sync(ref_server.base_url, None, n=1, proxy=proxy.url)
    _all_answered(results, "HTTP/1.1")
    assert proxy.requests()


def test_an_unsupported_proxy_scheme_is_an_error_not_a_direct_connection(ref_server: Any) -> None:
    c = OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0, timeout=20,
               proxy="socks5://user:pw@127.0.0.1:1080")
    with pytest.raises(llmclient.APIConnectionError, match=r"proxy socks5://\*\*\*@127.0.0.1:1080: only http://"):
        c.chat.completions.create(model=MODEL, messages=MSG, max_tokens=2)
