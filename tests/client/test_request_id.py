"""``X-Request-ID`` is the trace id in a UUID's text form; the traceparent is unchanged.

Request-id middlewares commonly accept only UUIDs (llama-cpp-python's server answers anything
else with 400 and an empty body: tests/interop has that against the real server). Here: the
header's shape, that it names the response's and the error's ``trace_id``, through ``OpenAI``
and ``AsyncOpenAI`` (``drive``: each client test runs on both).
"""

from __future__ import annotations

import re
import uuid

import pytest

import llmclient
from llmclient.pipeline.tracing import new_trace_context, new_trace_id, request_id_of
from tests._both import Drive

from .fakeserver import HypercornServer

UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
MSG = [{"role": "user", "content": "hi"}]


def test_request_id_is_the_trace_id_as_uuid_text() -> None:
    assert request_id_of("4bf92f3577b34da6a3ce929d0e0e4736") == "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"
    ctx = new_trace_context()
    assert UUID_TEXT.match(ctx.request_id) and uuid.UUID(ctx.request_id).hex == ctx.trace_id
    assert ctx.headers()["x-request-id"] == ctx.request_id
    assert ctx.headers()["traceparent"] == f"00-{ctx.trace_id}-{ctx.span_id}-01"


def test_a_fresh_trace_id_is_a_version_4_uuid() -> None:
    # Validators that check the version (pydantic's UUID4, uuid.UUID(...).version == 4) pass.
    for _ in range(64):
        u = uuid.UUID(new_trace_id())
        assert u.version == 4 and u.variant == uuid.RFC_4122


def test_a_callers_trace_keeps_its_bits_and_traceparent_shape() -> None:
    ctx = new_trace_context(CALLER)
    assert ctx.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and ctx.parent_span_id == "00f067aa0ba902b7"
    assert ctx.request_id == "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"
    assert ctx.traceparent == f"00-4bf92f3577b34da6a3ce929d0e0e4736-{ctx.span_id}-01"


def test_server_sees_a_uuid_naming_the_responses_and_errors_trace_id(drive: Drive, fake: HypercornServer) -> None:
    c = drive.client(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    start = len(fake.app.seen)
    r = drive(c.chat.completions.create(model="m", messages=MSG))
    own = drive(c.chat.completions.create(model="m", messages=MSG, extra_headers={"traceparent": CALLER}))
    with pytest.raises(llmclient.BadRequestError) as info:
        drive(c.chat.completions.create(model="m", messages=MSG, extra_headers={"x-test-fault": "status=400"}))
    err = info.value
    seen = fake.app.seen[start:]
    assert len(seen) == 3
    for request, trace_id in zip(seen, [r.trace_id, own.trace_id, err.trace_id], strict=True):
        rid = request.headers["x-request-id"]
        assert UUID_TEXT.match(rid) and uuid.UUID(rid).hex == trace_id
        assert request.headers["traceparent"].startswith(f"00-{trace_id}-")
    assert own.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_a_callers_own_request_id_is_sent_as_given(drive: Drive, fake: HypercornServer) -> None:
    c = drive.client(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    drive(c.chat.completions.create(model="m", messages=MSG, extra_headers={"X-Request-ID": "mine-1"}))
    assert fake.app.last().headers["x-request-id"] == "mine-1"
