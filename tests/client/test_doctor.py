"""``python -m llmclient doctor`` against the reference server (HTTP/1.1, h2c, TLS), a port
with nothing listening, and an HTTP server that is not an LLM API."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from llmclient._doctor import diagnose, render
from tests.conftest import ROOT


def _status(report: Any) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}


def test_h2c_server_is_usable_and_every_probe_reports(ref_server: Any) -> None:
    report = diagnose(ref_server.base_url, api_key="k")
    status = _status(report)
    assert report.exit_code == 0, render(report)
    for name in ("dns", "tcp", "http2", "api", "chat", "server-timing", "clock", "protobuf",
                 "compression", "connection-reuse", "stream"):
        assert status[name] == "ok", (name, render(report))
    assert "tls" not in status  # cleartext
    assert status["rate-limits"] == "skip"  # the reference server sends none
    stream = report.get("stream")
    assert stream is not None and stream.data["done"] and stream.data["finish_reason"]
    assert report.get("chat").data["http_version"] == "HTTP/2"  # type: ignore[union-attr]
    assert any("HTTP/2" in f and "h2c" in f for f in report.features)
    assert any("hedge=True can apply" in f for f in report.features)


def test_http1_only_server_says_no_h2_and_no_hedging(ref_server_h1: Any) -> None:
    report = diagnose(ref_server_h1.base_url, api_key="k")
    assert report.exit_code == 0, render(report)
    h2 = report.get("http2")
    assert h2 is not None and h2.status == "warn" and "HTTP/1.1 only" in h2.summary
    assert report.get("chat").data["http_version"] == "HTTP/1.1"  # type: ignore[union-attr]
    assert any("will not send copies" in f for f in report.features)


def test_tls_server_reports_the_handshake_and_alpn(ref_server_tls: Any) -> None:
    report = diagnose(ref_server_tls.base_url, api_key="k", ca=ref_server_tls.ca_path)
    assert report.exit_code == 0, render(report)
    tls = report.get("tls")
    assert tls is not None and tls.status == "ok"
    assert tls.data["version"] in ("TLSv1.2", "TLSv1.3") and tls.data["alpn"] == "h2"
    assert tls.data["verified"] is True
    assert report.get("http2").summary == "HTTP/2 by ALPN"  # type: ignore[union-attr]


def test_tls_server_with_an_untrusted_certificate_is_named(ref_server_tls: Any) -> None:
    report = diagnose(ref_server_tls.base_url, api_key="k")  # the test CA is not trusted
    tls = report.get("tls")
    assert tls is not None and tls.status == "fail" and "not trusted" in tls.summary
    assert report.exit_code == 2
    assert _status(report)["api"] == "skip"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_exits_2_with_the_reason_and_no_traceback() -> None:
    port = _free_port()
    proc = subprocess.run([sys.executable, "-m", "llmclient", "doctor", f"http://127.0.0.1:{port}/v1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert "refused" in proc.stdout and "nothing listening" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-m", "llmclient", "doctor", f"127.0.0.1:{port}", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    data = json.loads(proc.stdout)
    assert proc.returncode == 2 and data["exit_code"] == 2
    assert {c["name"]: c["status"] for c in data["checks"]}["tcp"] == "fail"


def test_an_unresolvable_host_says_dns_failed() -> None:
    report = diagnose("http://no-such-host.invalid/v1")
    assert report.exit_code == 2 and _status(report)["dns"] == "fail"


class _NotAnLLM(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>hello</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def html_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAnLLM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_server_that_is_not_an_llm_api_exits_1_and_says_so(html_server: str) -> None:
    report = diagnose(html_server)
    status = _status(report)
    assert report.exit_code == 1, render(report)
    assert status["tcp"] == "ok" and status["api"] == "fail"
    assert "not an OpenAI-compatible API" in report.get("api").summary  # type: ignore[union-attr]
    assert status["chat"] == status["stream"] == "skip"
    assert report.get("http2").status == "warn"  # type: ignore[union-attr]
