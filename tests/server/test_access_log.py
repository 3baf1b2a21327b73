"""``--access-log``: one line per request that a trace id from a benchmark finds."""

from __future__ import annotations

import time

import llmclient
from tests.conftest import start_ref_server, stop_ref_server


def test_every_request_has_one_line_with_its_trace_status_timings_and_priority() -> None:
    server = start_ref_server("--access-log")
    try:
        with llmclient.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
            msgs = [{"role": "user", "content": "hello"}]
            r = client.chat.completions.create(model="gpt-4o-mini", messages=msgs, max_tokens=4)
            low = client.chat.completions.create(model="gpt-4o-mini", messages=msgs, max_tokens=4,
                                                 extra_headers={"x-llm-priority": "low"})
            try:
                client.chat.completions.create(model="no-such-model", messages=msgs)
            except llmclient.NotFoundError as exc:
                missing = exc.trace_id
        assert server.log_path is not None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            lines = server.log_path.read_text().splitlines()
            if sum("POST /v1/chat/completions" in line for line in lines) >= 3:
                break
            time.sleep(0.05)
        def line_of(trace_id: str) -> str:
            (found,) = [ln for ln in lines if trace_id in ln and "/v1/chat/completions" in ln]
            return found

        first = line_of(r.trace_id)
        assert " 200 " in first and "priority=normal" in first
        assert "prefill;dur=" in first and "total;dur=" in first
        assert "priority=low" in line_of(low.trace_id)
        assert " 404 " in line_of(missing)
    finally:
        stop_ref_server(server)


def test_no_access_log_by_default(ref_server: object) -> None:
    with llmclient.OpenAI(base_url=ref_server.base_url, api_key="k") as client:  # type: ignore[attr-defined]
        r = client.chat.completions.create(model="gpt-4o-mini", max_tokens=2,
                                           messages=[{"role": "user", "content": "hi"}])
    log = ref_server.log_path.read_text()  # type: ignore[attr-defined]
    assert r.trace_id not in log
