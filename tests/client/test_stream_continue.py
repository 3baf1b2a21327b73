"""Chat continuation, opt-in (issue 32): with ``stream_resume="continue"`` a chat stream cut (or
stalled) after content is sent again with its partial answer as the assistant's prefix
(``continue_final_message: true, add_generation_prompt: false``, as vLLM reads it), and the rest
of the answer goes on in the same iterator.

The decisions are pure and tested first; then against the real reference server (which reads the
same fields), on ``OpenAI`` and ``AsyncOpenAI``. Each live test's fault is an ``x-fault`` header
with a ``once`` token of its own: it fires on the first request only, so the continuation is
served cleanly. With temperature 0 the reference server writes the rest of the same answer, so
the stitched text must equal a clean call's, with nothing twice and nothing missing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

import llmclient
from benchmarks.server.tokenizer import count_tokens
from llmclient.pipeline.resume import (
    CONTINUE_FIELDS,
    check_stream_resume,
    continuable,
    continuation_body,
    next_step,
)
from tests._both import Drive
from tests.conftest import FAULT_HEADERS, RefServer, start_ref_server, stop_ref_server

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Tell a long story."}],
        "max_tokens": 30, "temperature": 0}


# ---- pure decisions ------------------------------------------------------------------------------
def test_the_continuation_is_the_request_with_the_partial_answer_as_the_assistants_prefix() -> None:
    body = continuation_body(CHAT, "Once upon", 2)
    assert body is not None
    assert body["messages"] == [*CHAT["messages"], {"role": "assistant", "content": "Once upon"}]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["max_tokens"] == 28  # the rest gets what the first part left
    assert CHAT["max_tokens"] == 30 and len(CHAT["messages"]) == 1  # the call's body is untouched


def test_no_continuation_without_text_or_tokens_left() -> None:
    assert continuation_body(CHAT, "", 0) is None
    assert continuation_body(CHAT, "a b c", 30) is None
    assert continuation_body({**CHAT, "max_completion_tokens": 3}, "a b c", 3) is None
    unbounded = {k: v for k, v in CHAT.items() if k != "max_tokens"}
    assert continuation_body(unbounded, "a", 500) is not None


def test_only_opted_in_single_choice_chat_streams_are_continued() -> None:
    assert continuable("continue", "POST", "/chat/completions", CHAT, True)
    assert not continuable("auto", "POST", "/chat/completions", CHAT, True)
    assert not continuable("continue", "POST", "/chat/completions", CHAT, False)
    assert not continuable("continue", "POST", "/completions", CHAT, True)
    assert not continuable("continue", "POST", "/chat/completions", {**CHAT, "n": 2}, True)
    assert not continuable("continue", "POST", "/chat/completions", {**CHAT, **CONTINUE_FIELDS}, True)


def test_a_cut_after_content_is_continued_only_when_allowed() -> None:
    base = {"resumes": 0, "final": False, "resume_from": None, "can_resend": True,
            "content_seen": True}
    assert next_step(**base) is None
    assert next_step(**base, can_continue=True) == "continue"
    assert next_step(**{**base, "content_seen": False}, can_continue=True) == "resend"
    assert next_step(**{**base, "resumes": 3}, can_continue=True) is None


def test_a_bad_stream_resume_is_refused_at_once_naming_it() -> None:
    assert check_stream_resume("continue") == "continue"
    with pytest.raises(ValueError, match="stream_resume"):
        check_stream_resume("yes")
    with pytest.raises(ValueError, match="stream_resume"):
        llmclient.OpenAI(api_key="k", stream_resume="always")


def test_a_copy_of_the_client_keeps_its_stream_resume() -> None:
    client = llmclient.OpenAI(api_key="k", stream_resume="continue")
    assert client.with_options(timeout=3)._options.stream_resume == "continue"
    assert client.copy(stream_resume="auto")._options.stream_resume == "auto"


# ---- live --------------------------------------------------------------------------------------
def _fault(spec: str) -> dict[str, str]:
    return {"x-fault": f"{spec};once={secrets.token_hex(8)}"}


def _text(chunks: list) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _clean(drive: Drive, client) -> str:
    return _text(drive.iterate(drive(client.chat.completions.create(**CHAT, stream=True))))


@pytest.mark.parametrize("fault", ["reset_after=6", "cut_after=6", "stall_after=6"])
def test_a_chat_stream_cut_after_content_goes_on_from_its_partial_answer(
        drive: Drive, ref_server: RefServer, fault: str) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=2,
                          stream_resume="continue", stream_idle_timeout=1.0)
    stream = drive(client.chat.completions.create(**CHAT, stream=True, extra_headers=_fault(fault)))
    chunks = drive.iterate(stream)
    assert stream.timings.resumes == 1 and stream.timings.retries == 1
    openings = [c for c in chunks if c.choices and c.choices[0].delta.role == "assistant"]
    assert len(openings) == 1  # the continuation's role chunk is not delivered again
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert _text(chunks) == _clean(drive, client) != ""  # no gap, nothing twice


def test_continuation_can_be_asked_per_call(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=2)
    stream = drive(client.chat.completions.create(**CHAT, stream=True, stream_resume="continue",
                                                  extra_headers=_fault("reset_after=8")))
    chunks = drive.iterate(stream)
    assert stream.timings.resumes == 1
    assert _text(chunks) == _clean(drive, client)


def test_without_opting_in_a_cut_after_content_still_raises(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=2)
    stream = drive(client.chat.completions.create(**CHAT, stream=True, extra_headers=_fault("reset_after=6")))
    with pytest.raises(llmclient.IncompleteStreamError) as caught:
        drive.iterate(stream)
    assert stream.timings.resumes == 0
    assert caught.value.partial.text and _clean(drive, client).startswith(caught.value.partial.text)


def test_with_max_retries_0_a_stream_is_never_continued(drive: Drive, ref_server: RefServer) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0,
                          stream_resume="continue")
    stream = drive(client.chat.completions.create(**CHAT, stream=True, extra_headers=_fault("reset_after=6")))
    with pytest.raises(llmclient.IncompleteStreamError):
        drive.iterate(stream)
    assert stream.timings.resumes == 0


@pytest.fixture
def refuses_the_continuation() -> Iterator[RefServer]:
    """The first request is cut after content; the next three (the continuation and its two
    retries) are refused with 503, as a server that cannot continue refuses."""
    server = start_ref_server(FAULT_HEADERS, "--faults", "reset_after=6;times=1,status=503;times=3")
    try:
        yield server
    finally:
        stop_ref_server(server)


def test_a_refused_continuation_raises_with_the_partial_answer(
        drive: Drive, refuses_the_continuation: RefServer) -> None:
    client = drive.client(base_url=refuses_the_continuation.base_url, api_key="k", max_retries=2,
                          stream_resume="continue")
    stream = drive(client.chat.completions.create(**CHAT, stream=True))
    with pytest.raises(llmclient.IncompleteStreamError, match="continuing the answer") as caught:
        drive.iterate(stream)
    assert caught.value.partial.text  # what arrived is kept, never shown twice


# ---- the reference server's side -----------------------------------------------------------------
def _post(server: RefServer, body: dict) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", json=body, timeout=30)


def test_the_reference_server_continues_a_greedy_answer_where_its_prefix_ends(ref_server: RefServer) -> None:
    whole = _post(ref_server, CHAT).json()["choices"][0]
    words = whole["message"]["content"].split(" ")
    prefix = " ".join(words[:4])
    # max_tokens counts the new tokens only (as vLLM's): what the prefix did not use
    body = {**CHAT, "messages": [*CHAT["messages"], {"role": "assistant", "content": prefix}],
            **CONTINUE_FIELDS, "max_tokens": CHAT["max_tokens"] - count_tokens(prefix)}
    rest = _post(ref_server, body).json()["choices"][0]
    assert prefix + rest["message"]["content"] == whole["message"]["content"]
    assert rest["finish_reason"] == whole["finish_reason"]


@pytest.mark.parametrize("change,param", [
    ({"add_generation_prompt": True}, "add_generation_prompt"),
    ({"messages": CHAT["messages"]}, "messages[0]"),
    ({"continue_final_message": "yes"}, "continue_final_message"),
    ({"n": 2}, "n"),
])
def test_the_reference_server_refuses_a_malformed_continuation_naming_the_field(
        ref_server: RefServer, change: dict, param: str) -> None:
    body = {**CHAT, "messages": [*CHAT["messages"], {"role": "assistant", "content": "Once"}],
            **CONTINUE_FIELDS, **change}
    r = _post(ref_server, body)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == param


# ---- with the cache --------------------------------------------------------------------------------
def test_a_continued_stream_is_cached_whole_and_a_cut_one_not_at_all(drive: Drive, ref_server: RefServer) -> None:
    ask = {**CHAT, "messages": [{"role": "user", "content": f"A story {secrets.token_hex(4)}."}]}
    cont = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=2, cache="memory",
                        stream_resume="continue")
    first = drive.iterate(drive(cont.chat.completions.create(**ask, stream=True,
                                                             extra_headers=_fault("reset_after=6"))))
    again = drive(cont.chat.completions.create(**ask, stream=True))
    replay = drive.iterate(again)
    assert again.timings.cache == "hit" and _text(replay) == _text(first)  # the whole answer

    other = {**ask, "messages": [{"role": "user", "content": f"Another {secrets.token_hex(4)}."}]}
    plain = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=2, cache="memory")
    with pytest.raises(llmclient.IncompleteStreamError):
        drive.iterate(drive(plain.chat.completions.create(**other, stream=True,
                                                          extra_headers=_fault("reset_after=6"))))
    fresh = drive(plain.chat.completions.create(**other, stream=True))
    drive.iterate(fresh)
    assert fresh.timings.cache == "miss"  # the cut answer was not kept


# ---- with hedging ------------------------------------------------------------------------------------
@pytest.fixture
def copy_is_cut() -> Iterator[RefServer]:
    """The first request (a hedged call's primary) waits 3 s before answering; the second (its
    copy, which wins the race to the first token) is cut after content; later ones run clean."""
    server = start_ref_server(FAULT_HEADERS, "--faults", "stall_ms=3000;times=1,reset_after=6;times=1")
    try:
        yield server
    finally:
        stop_ref_server(server)


def test_a_hedged_stream_whose_winning_copy_is_cut_is_continued_once(
        drive: Drive, copy_is_cut: RefServer) -> None:
    client = drive.client(base_url=copy_is_cut.base_url, api_key="k", max_retries=2,
                          stream_resume="continue", hedge=llmclient.HedgeConfig(after_ms=100))
    stream = drive(client.chat.completions.create(**CHAT, stream=True))
    chunks = drive.iterate(stream)
    assert stream.timings.hedge_won  # the copy answered first, then was cut
    assert stream.timings.resumes == 1  # continued once: the continuation is not hedged again
    assert _text(chunks) == _clean(drive, client)
