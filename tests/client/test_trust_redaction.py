"""Secrets never in text: exception messages, log lines, repr, timings.

The probe: a ``base_url`` with ``user:password@`` put the password in ``APIConnectionError``
text and in the retry log line. Checked against a real refused port and the live reference
server through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each client test runs on both);
``_redact`` itself is tested as pure functions.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import pytest

import llmclient
from llmclient._logging import get_logger
from llmclient._redact import MASK, redact_argv, redact_headers, redact_text, redact_url
from llmclient.layers.calls import build_call
from llmclient.layers.options import CallOptions
from tests._addresses import refused_url
from tests._both import Drive

PASSWORD = "hunter2-s3cr3t-pw"
KEY = "sk-live-abcdefghijklmnop0123"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the helper ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    f"Connection error for POST http://alice:{PASSWORD}@127.0.0.1:1/v1/chat/completions",
    f"https://{PASSWORD}@host/v1",
    f"redis://:{PASSWORD}@cache.internal:6379/0 refused",
    f"GET https://x.openai.azure.com/openai?api-version=1&api-key={PASSWORD}",
    f"https://store.blob/x.png?sv=2&sig={PASSWORD}&se=3",
    f"headers: {{'authorization': 'Bearer {PASSWORD}'}}",
    f"Authorization: Bearer {PASSWORD}",
    f"x-api-key={PASSWORD}",
    f"api-key: {PASSWORD}",
    f"Cookie: session={PASSWORD}",
    f"proxy said: Basic {PASSWORD}",
])
def test_redact_text_masks_every_form(text: str) -> None:
    clean = redact_text(text)
    assert PASSWORD not in clean and (MASK in clean or "***@" in clean)
    assert redact_text(clean) == clean  # idempotent


def test_redact_keeps_harmless_text_and_urls() -> None:
    for text in ("Error code: 400 - messages[0].content[1].image_url: not fetched",
                 "https://api.openai.com/v1/chat/completions", "data:image/png;base64,AAAA==",
                 "retrying POST /chat/completions in 0.50s (attempt 1 of 2): HTTP 503"):
        assert redact_text(text) == text
    assert redact_url(f"https://u:{PASSWORD}@h:8443/v1?x=1") == "https://***@h:8443/v1?x=1"
    assert redact_headers({"Authorization": "Bearer x", "api-key": "y", "accept": "a"}) == \
        {"Authorization": MASK, "api-key": MASK, "accept": "a"}
    assert redact_argv(["bench", "--api-key", KEY, f"--api-key={KEY}", f"--base-url=https://u:{PASSWORD}@h/v1"]) \
        == ["bench", "--api-key", MASK, f"--api-key={MASK}", "--base-url=https://***@h/v1"]


# -- the probe: a password in base_url --------------------------------------------------------


def test_connection_error_and_retry_log_hide_base_url_password(drive: Drive,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    # a refused port of this machine on an address that is not loopback: retried (and logged)
    # as a remote refusal is; a loopback one fails at once
    host = refused_url().split("//", 1)[1]
    base = f"http://alice:{PASSWORD}@{host}"
    client = drive.client(base_url=base, api_key=KEY, max_retries=1)
    with caplog.at_level(logging.INFO, logger="llmclient"), \
            pytest.raises(llmclient.APIConnectionError) as info:
        drive(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]))
    err = info.value
    texts = [str(err), repr(err), err.message, caplog.text, repr(err.timings), repr(client)]
    assert "retrying" in caplog.text and host.split(":")[0] in str(err)
    for text in texts:
        assert PASSWORD not in text and KEY not in text


def test_status_error_echoing_a_credential_is_masked(drive: Drive, ref_server: Any) -> None:
    """A server or proxy that echoes what it was sent (here: the reference server naming an
    unknown model we chose) cannot put a key into our exception text."""
    client = drive.client(base_url=ref_server.base_url, api_key=KEY)
    with pytest.raises(llmclient.APIStatusError) as info:
        drive(client.chat.completions.create(model=f"api-key={KEY}",
                                             messages=[{"role": "user", "content": "hi"}]))
    assert KEY not in str(info.value)


def test_calls_against_the_server_keep_secrets_out_of_repr_and_logs(drive: Drive, ref_server: Any,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    base = ref_server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
    with caplog.at_level(logging.DEBUG, logger="llmclient"):
        client = drive.client(base_url=base, api_key=KEY, default_headers={"x-api-key": KEY})
        r = drive(client.chat.completions.create(model="sim-zero", messages=[{"role": "user", "content": "hi"}],
                                                 max_tokens=2))
        call = client._build_call("POST", "/chat/completions", {"model": "m"},
                                  extra_headers={"Cookie": f"s={KEY}"})
        drive(client.close())
    for text in (repr(call), repr(r.timings), str(r.timings.to_dict()), repr(client), caplog.text):
        assert PASSWORD not in text and KEY not in text
    assert "authorization" in repr(call) and MASK in repr(call)


def test_any_llmclient_logger_masks_arguments_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("llmclient.test")
    with caplog.at_level(logging.INFO, logger="llmclient.test"):
        log.info("connecting to %s", f"redis://:{PASSWORD}@cache:6379/0")
        try:
            raise ConnectionError(f"cannot reach https://bob:{PASSWORD}@proxy:3128")
        except ConnectionError:
            log.warning("backend down", exc_info=True)
    handler_text = "\n".join(logging.Formatter("%(message)s").format(r) for r in caplog.records)
    assert PASSWORD not in caplog.text and PASSWORD not in handler_text
    assert "cache:6379" in caplog.text and "ConnectionError" in handler_text


def test_build_call_repr_never_shows_credentials() -> None:
    import httpx

    call = build_call("POST", "/chat/completions", {"model": "m", "messages": []},
                      base_url=f"https://u:{PASSWORD}@h/v1",
                      headers={"authorization": f"Bearer {KEY}", "api-key": KEY}, query={},
                      timeout=httpx.Timeout(5.0), max_retries=0, scope="0" * 64, options=CallOptions())
    assert PASSWORD not in repr(call) and KEY not in repr(call)


def test_benchmark_result_command_line_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``python -m benchmarks --api-key ...`` writes as ``command`` in result.json."""
    from benchmarks.harness.cli import _command_line

    monkeypatch.setattr(sys, "argv", ["benchmarks", "--base-url", f"https://u:{PASSWORD}@h/v1",
                                      "--api-key", KEY])
    line = _command_line()
    assert KEY not in line and PASSWORD not in line and "--api-key" in line
