"""A Messages stream that fails goes on, as a chat stream does (issue 45): sent again when it
failed before any content (within ``max_retries``; the opening events the app has are not
delivered twice), continued from its partial text with ``stream_resume="continue"`` (the
Messages API's prefill: the partial text as the final assistant turn), raised with ``.partial``
otherwise.

The decisions are pure and tested first; then against the real reference server, whose Messages
route reads a final assistant turn as a prefill as the API does (and refuses one that ends in
white space), on ``Anthropic`` and ``AsyncAnthropic``. Each live fault is an ``x-fault`` header
with a ``once`` token of its own: it fires on the first request only. With temperature 0 the
reference server writes the same answer again, so the stitched text must equal a clean call's,
with nothing twice and nothing missing; the official stream helper's accumulation of the events
must give the same text (a second ``message_start`` would start its message over).
"""

from __future__ import annotations

import secrets
from typing import Any

import anthropic
import pytest

from llmclient.pipeline.partial import PartialTracker
from llmclient.pipeline.resume import continuable, continuation_body, messages_seam, resendable
from llmclient.pipeline.stream_session import _trim_seam
from tests._both import Drive
from tests.conftest import RefServer
from tests.server.test_anthropic_api import ASK, KEY, MODEL, WEATHER, server  # noqa: F401  (fixture)

PATH = "/v1/messages"
BODY = {"model": MODEL, "max_tokens": 30, "messages": ASK, "stream": True}
GREEDY = {"extra_body": {"temperature": 0}}


# ---- pure decisions ------------------------------------------------------------------------------

def test_a_messages_stream_is_resent_and_continued_only_where_the_api_allows() -> None:
    assert resendable("POST", PATH, True)
    assert continuable("continue", "POST", PATH, BODY, True)
    assert not continuable("auto", "POST", PATH, BODY, True)  # continuation is opt-in
    thinking = {**BODY, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert not continuable("continue", "POST", PATH, thinking, True)  # extended thinking takes no prefill
    assert continuable("continue", "POST", PATH, {**BODY, "thinking": {"type": "disabled"}}, True)
    prefilled = {**BODY, "messages": [*ASK, {"role": "assistant", "content": "The sea"}]}
    assert not continuable("continue", "POST", PATH, prefilled, True)  # the app's own prefill


def test_the_continuation_is_a_prefill_without_trailing_white_space() -> None:
    body = continuation_body(BODY, "The sea is wide ", 4, PATH)
    assert body is not None
    assert body["messages"] == [*ASK, {"role": "assistant", "content": "The sea is wide"}]
    assert body["max_tokens"] == 26
    assert "continue_final_message" not in body  # vLLM's chat fields are no part of the Messages API
    assert continuation_body(BODY, "   ", 1, PATH) is None  # nothing to go on from
    assert continuation_body(BODY, "a b", 30, PATH) is None  # no token left
    assert messages_seam("The sea is wide \n") == " \n" and messages_seam("wide") == ""


def test_the_seam_drops_only_the_white_space_the_app_has() -> None:
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " and deep"}}
    trimmed, rest = _trim_seam(delta, " ")
    assert trimmed["delta"]["text"] == "and deep" and rest == ""
    kept, rest = _trim_seam(delta, "\n")
    assert kept is delta and rest == ""  # the model wrote other white space: kept
    only = {**delta, "delta": {"type": "text_delta", "text": " "}}
    assert _trim_seam(only, "  ") == (None, " ")  # all of it the app's: the rest from the next delta


def _events(*objs: dict[str, Any]) -> PartialTracker:
    partial = PartialTracker()
    for obj in objs:
        partial.event(obj)
    return partial


def test_content_is_any_delta_or_a_block_that_is_not_empty_text() -> None:
    start = {"type": "message_start", "message": {"id": "msg_1"}}
    text = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The"}}
    opened = _events(start, text)
    assert not opened.has_content() and opened.blocks == {0: "text"}
    said = _events(start, text, delta)
    assert said.has_content() and said.continuable() and said.text_so_far() == ("The", 1)
    closed = _events(start, text, delta, {"type": "content_block_stop", "index": 0})
    assert not closed.continuable()  # a new block would come next: not a prefill's continuation
    tool = _events(start, {"type": "content_block_start", "index": 0,
                           "content_block": {"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}})
    assert tool.has_content() and not tool.continuable()  # the app may have shown the tool's name
    args = _events(start, text, delta, {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": "{"}})
    assert args.has_content() and not args.continuable()


# ---- live ----------------------------------------------------------------------------------------

def _fault(spec: str) -> dict[str, str]:
    return {"x-fault": f"{spec};once={secrets.token_hex(8)}"}


def _face(drive: Drive, srv: RefServer, **kw: object) -> Any:
    options: dict[str, object] = {"base_url": srv.url, "api_key": KEY, "max_retries": 2, **kw}
    return drive.client(face="Anthropic", **options)


def _text(events: list[Any]) -> str:
    return "".join(e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta")


def _stream(drive: Drive, client: Any, fault: str | None = None, **kw: Any) -> Any:
    headers = _fault(fault) if fault else {}
    return drive(client.messages.create(**BODY, extra_headers=headers, **GREEDY, **kw))


def _clean(drive: Drive, client: Any) -> str:
    return _text(drive.iterate(_stream(drive, client)))


def _one_opening(events: list[Any]) -> None:
    kinds = [e.type for e in events]
    assert kinds.count("message_start") == 1 and kinds[0] == "message_start"
    assert kinds.count("content_block_start") == 1 and kinds[-1] == "message_stop"


@pytest.mark.parametrize("fault", ["reset_after=1", "reset_after=2", "error_after=2", "cut_after=2"])
def test_a_stream_that_failed_before_content_is_sent_again(drive: Drive, server: RefServer,  # noqa: F811
                                                           fault: str) -> None:
    client = _face(drive, server)
    stream = _stream(drive, client, fault)
    events = drive.iterate(stream)
    assert stream.timings.retries == 1 and stream.timings.resumes == 1
    _one_opening(events)  # the re-sent stream's message_start (and open block) not delivered again
    assert _text(events) == _clean(drive, client) != ""


@pytest.mark.parametrize("fault", ["reset_after=6", "error_after=7", "cut_after=8", "stall_after=6"])
def test_a_stream_cut_in_its_text_is_continued_from_its_partial(drive: Drive, server: RefServer,  # noqa: F811
                                                                fault: str) -> None:
    # the watchdog's limit ends the stalled case; 2 s, so that a busy machine's slow events are
    # not taken for a stall (a second resume) in the others
    client = _face(drive, server, stream_resume="continue", stream_idle_timeout=2.0)
    stream = _stream(drive, client, fault)
    events = drive.iterate(stream)
    assert stream.timings.resumes == 1 and stream.timings.retries == 1
    _one_opening(events)
    assert _text(events) == _clean(drive, client) != ""  # no gap, nothing twice


def test_the_stream_helper_accumulates_a_continued_answer(drive: Drive, server: RefServer) -> None:  # noqa: F811
    client = _face(drive, server, stream_resume="continue")
    clean = _clean(drive, client)
    manager = client.messages.stream(**{k: v for k, v in BODY.items() if k != "stream"},
                                     extra_headers=_fault("reset_after=7"), **GREEDY)
    with drive.enter(manager) as stream:
        pieces = drive.iterate(stream.text_stream)
        final = drive(stream.get_final_message())
    assert "".join(pieces) == clean
    assert [b.type for b in final.content] == ["text"] and final.content[0].text == clean
    assert final.stop_reason in ("end_turn", "max_tokens")


def test_without_opting_in_a_cut_after_content_still_raises(drive: Drive, server: RefServer) -> None:  # noqa: F811
    client = _face(drive, server)
    stream = _stream(drive, client, "reset_after=6")
    with pytest.raises(anthropic.APIConnectionError) as caught:
        drive.iterate(stream)
    assert stream.timings.resumes == 0
    assert caught.value.partial.text and _clean(drive, client).startswith(caught.value.partial.text)
    stream = _stream(drive, client, "error_after=6")  # the overload event, as the official client raises it
    with pytest.raises(anthropic.APIStatusError) as status:
        drive.iterate(stream)
    assert status.value.body["error"]["type"] == "overloaded_error" and stream.timings.resumes == 0


def test_with_max_retries_0_a_stream_is_never_sent_twice(drive: Drive, server: RefServer) -> None:  # noqa: F811
    client = _face(drive, server, max_retries=0, stream_resume="continue")
    for fault in ("reset_after=1", "reset_after=6"):
        stream = _stream(drive, client, fault)
        with pytest.raises(anthropic.APIConnectionError):
            drive.iterate(stream)
        assert stream.timings.resumes == 0


def test_a_tool_use_shown_before_the_cut_is_not_sent_again(drive: Drive, server: RefServer) -> None:  # noqa: F811
    """The tool's name came in its block's start: the app may have acted on it."""
    client = _face(drive, server, stream_resume="continue")
    stream = drive(client.messages.create(
        **BODY, tools=[WEATHER], tool_choice={"type": "tool", "name": "get_weather"},
        extra_headers=_fault("reset_after=3"), **GREEDY))
    with pytest.raises(anthropic.APIConnectionError) as caught:
        drive.iterate(stream)
    assert stream.timings.resumes == 0 and caught.value.partial is not None
