"""The likely fix named with a first try's errors (llmclient/_hints.py), and a refused
connection to this machine failing at once (pipeline/retry.py): the pure decisions, then each
end to end, through both clients, against the reference server and against servers nobody
here wrote (Python's http.server and socketserver)."""

from __future__ import annotations

import errno
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import llmclient
from llmclient._doctor import diagnose, render
from llmclient._hints import (
    auth_hint,
    describe_transport,
    is_loopback,
    status_hint,
    transport_hint,
    with_hint,
)
from llmclient.pipeline.retry import error_retry_delay, refused
from tests._both import Drive
from tests.conftest import start_ref_server, stop_ref_server

MSG = [{"role": "user", "content": "hi"}]
WRONG_VERSION = "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)"


# ---- pure decisions ----------------------------------------------------------------------------
def test_a_404_on_an_api_path_without_a_version_names_the_missing_v1() -> None:
    hint = status_hint(404, "POST", "http://gpu1:8000/chat/completions")
    assert hint is not None and "base_url='http://gpu1:8000/v1'" in hint
    assert "POST /chat/completions" in hint
    # a prefix of the deployment's own is kept: /api -> /api/v1
    assert "base_url='https://host/api/v1'" in str(status_hint(404, "GET", "https://host/api/models"))
    assert "base_url='http://h/v1'" in str(status_hint(404, "GET", "http://h/models/llama-3"))


def test_no_v1_hint_where_the_url_has_a_version_or_the_status_is_another() -> None:
    assert status_hint(404, "POST", "http://h:8000/v1/chat/completions") is None
    assert status_hint(404, "POST", "https://g/v1beta/openai/chat/completions") is None
    assert status_hint(404, "GET", "http://h:8000/health") is None      # not an API path
    assert status_hint(400, "POST", "http://h:8000/chat/completions") is None
    assert status_hint(500, "POST", "http://h:8000/chat/completions") is None


def test_https_to_a_plain_http_port_says_to_use_http() -> None:
    hint = transport_hint(WRONG_VERSION, "https://127.0.0.1:8000/v1/chat/completions")
    assert hint is not None and "plain HTTP" in hint
    assert "http://127.0.0.1:8000/v1/chat/completions" in hint
    for openssl3 in ("[SSL] record layer failure (_ssl.c:1000)", "packet length too long"):
        assert transport_hint(openssl3, "https://h:1/v1") is not None
    assert transport_hint(WRONG_VERSION, "http://h:1/v1") is None   # http already
    assert transport_hint("[SSL: CERTIFICATE_VERIFY_FAILED]", "https://h:1/v1") is None


def test_a_refused_connection_to_this_machine_names_the_port() -> None:
    text = "[Errno 111] Connection refused"
    hint = transport_hint(text, "http://127.0.0.1:9/v1/models")
    assert hint is not None and "nothing listens on 127.0.0.1 port 9" in hint
    assert transport_hint(text, "http://localhost/v1") is not None
    assert transport_hint(text, "http://10.1.2.3:8000/v1") is None     # remote: a question only
    described = describe_transport("ConnectError", text, "http://10.1.2.3:8000/v1")
    assert described.endswith("is the server running at this base URL?")
    described = describe_transport("ConnectError", text, "http://[::1]:8000/v1")
    assert "nothing listens on ::1 port 8000" in described and "is the server" not in described
    assert describe_transport("ConnectError", WRONG_VERSION, "https://h:1/v1").startswith(
        "TLS handshake failed (")
    assert with_hint("boom", None) == "boom"


def test_loopback_addresses() -> None:
    for host in ("localhost", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1",
                 "app.localhost"):
        assert is_loopback(host), host
    for host in ("10.0.0.1", "example.com", "", None, "::ffff:10.0.0.1", "0.0.0.0"):
        assert not is_loopback(host), host


def test_a_401_without_a_key_is_an_api_that_wants_one() -> None:
    assert "wants a key" in str(auth_hint(401, key_given=False))
    assert "refused the key" in str(auth_hint(403, key_given=True))
    assert auth_hint(404, key_given=False) is None


def _refused_error() -> Exception:
    try:
        raise httpx.ConnectError("[Errno 111] Connection refused") from ConnectionRefusedError(
            errno.ECONNREFUSED, "Connection refused")
    except httpx.ConnectError as exc:
        return exc


def test_a_refused_connect_on_loopback_is_not_retried_elsewhere_it_is() -> None:
    exc = _refused_error()
    assert refused(exc) and not refused(httpx.ReadTimeout("slow"))
    assert error_retry_delay(exc, "http://127.0.0.1:9/v1/chat/completions", 0, 2) is None
    assert error_retry_delay(exc, "http://[::1]:9/v1/chat/completions", 0, 2) is None
    assert error_retry_delay(exc, "http://10.0.0.7:8000/v1/chat/completions", 0, 2) is not None
    # a loopback server that reset a connection may be restarting: retried as before
    assert error_retry_delay(httpx.RemoteProtocolError("reset"), "http://127.0.0.1:9/v1", 0, 2) is not None
    assert error_retry_delay(exc, "http://10.0.0.7:8000/v1", 2, 2) is None  # budget spent
    # a proxy that refused: its address decides, not the server's
    proxied = _refused_error()
    proxied.proxy = "http://***@10.0.0.9:3128"  # type: ignore[attr-defined]
    assert error_retry_delay(proxied, "http://127.0.0.1:9/v1", 0, 2) is not None
    proxied.proxy = "http://127.0.0.1:3128"  # type: ignore[attr-defined]
    assert error_retry_delay(proxied, "http://10.0.0.7:8000/v1", 0, 2) is None
    assert transport_hint("cannot connect to proxy http://127.0.0.1:1: Connection refused",
                          "http://127.0.0.1:9/v1") is None


# ---- end to end --------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_wrong_port_on_this_machine_fails_at_once_naming_it(drive: Drive) -> None:
    port = _free_port()  # closed again: nothing listens there
    client = drive.client(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    with pytest.raises(llmclient.APIConnectionError) as info:
        drive(client.chat.completions.create(model="m", messages=MSG))
    assert f"nothing listens on 127.0.0.1 port {port}" in str(info.value)
    assert info.value.timings is not None and info.value.timings.retries == 0


@pytest.fixture(scope="module")
def plain_server() -> Iterator[Any]:
    server = start_ref_server()
    yield server
    stop_ref_server(server)


def test_a_base_url_without_v1_gets_a_404_that_names_the_fix(drive: Drive, plain_server: Any) -> None:
    origin = plain_server.base_url.removesuffix("/v1")
    client = drive.client(base_url=origin, api_key="k", max_retries=0)
    with pytest.raises(llmclient.NotFoundError) as info:
        drive(client.chat.completions.create(model="m", messages=MSG))
    assert info.value.status_code == 404
    assert f"base_url='{origin}/v1'" in str(info.value)


class _NotFound(http.server.BaseHTTPRequestHandler):
    """Python's http.server: 404 for every path, as a web server without the API answers."""

    def do_POST(self) -> None:
        self.send_error(404)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def stdlib_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_v1_hint_with_a_server_nobody_here_wrote(drive: Drive, stdlib_server: str) -> None:
    client = drive.client(base_url=stdlib_server, api_key="k", max_retries=0)
    with pytest.raises(llmclient.NotFoundError) as info:
        drive(client.chat.completions.create(model="m", messages=MSG))
    assert f"base_url='{stdlib_server}/v1'" in str(info.value)


def test_https_to_a_plain_http_server_says_it_speaks_plain_http(drive: Drive, stdlib_server: str) -> None:
    url = stdlib_server.replace("http://", "https://") + "/v1"
    client = drive.client(base_url=url, api_key="k", max_retries=0)
    with pytest.raises(llmclient.APIConnectionError) as info:
        drive(client.chat.completions.create(model="m", messages=MSG))
    text = str(info.value)
    assert "TLS handshake failed" in text and "answered in plain HTTP" in text
    assert stdlib_server + "/v1/chat/completions" in text


def test_doctor_says_https_to_plain_http_is_plain_http(plain_server: Any) -> None:
    report = diagnose(plain_server.base_url.replace("http://", "https://"), timeout=5.0)
    tls = report.get("tls")
    assert tls is not None and tls.status == "fail", render(report)
    assert "answered in plain HTTP" in tls.summary and "use http://" in tls.summary


@pytest.fixture(scope="module")
def keyed_server() -> Iterator[Any]:
    server = start_ref_server("--api-key", "s3cret")
    yield server
    stop_ref_server(server)


def test_doctor_without_a_key_says_the_api_wants_one(keyed_server: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    report = diagnose(keyed_server.base_url)
    text = render(report)
    api = report.get("api")
    assert api is not None and api.status == "fail" and api.data["wants_key"], text
    assert "an API that wants a key" in api.summary
    assert "Verdict: reachable: an API that wants a key (401 to GET /models; none was given)" in text
    assert "not a working OpenAI-compatible API" not in text
    assert report.exit_code == 1 and report.to_dict()["verdict"].startswith("reachable: an API")


def test_doctor_with_a_wrong_key_says_it_was_refused(keyed_server: Any) -> None:
    text = render(diagnose(keyed_server.base_url, api_key="wrong"))
    assert "the key given was refused" in text and "not a working" not in text
    assert "Verdict: usable" in render(diagnose(keyed_server.base_url, api_key="s3cret"))
