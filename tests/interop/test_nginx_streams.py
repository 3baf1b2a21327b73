"""Cut and silent streams through nginx (issue 32), sync and async: an upstream reset in the
middle of a background Responses stream is resumed through nginx with no gap and no event twice;
a ``proxy_read_timeout`` shorter than a silent upstream cuts the stream, which a background
stream resumes and a chat stream reports at once as a clear error with its partial answer (not
after a read timeout).

Each fault is an ``x-fault`` header with a ``once`` token: it fires on the first request only,
so a resume (which carries the call's headers) is served cleanly.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

import llmclient
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

from .nginx import Nginx, running_nginx

ASK = {"model": "sim-zero", "input": "Tell a long story.", "max_output_tokens": 40, "temperature": 0}
CHAT = {"model": "sim-zero", "messages": [{"role": "user", "content": "Tell a long story."}],
        "max_tokens": 40, "temperature": 0}


@pytest.fixture(scope="module")
def upstream() -> Iterator[RefServer]:
    server = start_ref_server(FAULT_HEADERS)
    yield server
    stop_ref_server(server)


@pytest.fixture(scope="module")
def nginx(upstream: RefServer) -> Iterator[Nginx]:
    with running_nginx(upstream.port) as proxy:
        yield proxy


def _once(spec: str) -> dict[str, str]:
    return {"x-fault": f"{spec};once={secrets.token_hex(8)}"}


def _client(drive: Drive, nginx: Nginx, listener: str, **extra: object):
    options: dict[str, object] = {"timeout": 20, "max_retries": 0, **extra}
    return drive.client(base_url=nginx.base_url(listener), api_key="k", verify=nginx.ca_path,
                        **options)


def _whole_background_stream(drive: Drive, client, fault: str) -> list:
    stream = drive(client.responses.create(**ASK, background=True, stream=True,
                                           extra_headers=_once(fault)))
    events = drive.iterate(stream)
    assert stream.timings.resumes == 1
    assert [e.sequence_number for e in events] == list(range(len(events)))  # no gap, none twice
    assert events[-1].type in ("response.completed", "response.incomplete")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == drive(client.responses.retrieve(events[0].response.id)).output_text != ""
    return events


@pytest.mark.parametrize("listener", ["h2c", "h1"])
def test_an_upstream_reset_mid_background_stream_is_resumed_through_nginx(
        drive: Drive, nginx: Nginx, listener: str) -> None:
    _whole_background_stream(drive, _client(drive, nginx, listener), "reset_after=8")


def test_a_proxy_read_timeout_shorter_than_a_silent_upstream_is_resumed(
        drive: Drive, nginx: Nginx) -> None:
    # nginx gives up on the silent upstream after 1 s and ends the client's stream; the
    # background run goes on upstream, and the resume picks it up where the stream stopped.
    _whole_background_stream(drive, _client(drive, nginx, "short_read"), "stall_after=8")


def test_a_proxy_read_timeout_cuts_a_chat_stream_into_a_clear_error_at_once(
        drive: Drive, nginx: Nginx) -> None:
    client = _client(drive, nginx, "short_read")  # the watchdog's 60 s default is not what ends it
    stream = drive(client.chat.completions.create(**CHAT, stream=True,
                                                  extra_headers=_once("stall_after=5")))
    t0 = time.monotonic()
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        drive.iterate(stream)
    assert time.monotonic() - t0 < 30  # nginx's 1 s cut, not the client's read timeout (20 s)
    assert caught.value.partial.text  # the four pieces of text that arrived
    assert caught.value.trace_id


def test_with_continuation_the_cut_chat_stream_completes(drive: Drive, nginx: Nginx) -> None:
    client = _client(drive, nginx, "short_read", max_retries=2, stream_resume="continue")
    stream = drive(client.chat.completions.create(**CHAT, stream=True,
                                                  extra_headers=_once("stall_after=5")))
    chunks = drive.iterate(stream)
    clean = drive.iterate(drive(client.chat.completions.create(**CHAT, stream=True)))

    def text(cs: list) -> str:
        return "".join(c.choices[0].delta.content or "" for c in cs if c.choices)

    assert stream.timings.resumes == 1
    assert text(chunks) == text(clean) != ""
