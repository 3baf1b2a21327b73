"""Trace ids and per-request timings on every response and every error.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=sk-... python examples/tracing_and_timings.py
"""

import logging
import os

import llmclient

# Every SDK log record carries the call's trace id.
logging.basicConfig(format="%(levelname)s trace_id=%(trace_id)s %(message)s")
logging.getLogger("llmclient").setLevel(logging.INFO)

client = llmclient.OpenAI(max_retries=1)
model = os.environ.get("MODEL") or client.models.list().data[0].id

# Continue the caller's W3C trace (an active OpenTelemetry span is picked up the same way).
parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
r = client.chat.completions.create(
    model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=8,
    extra_headers={"traceparent": parent},
)
print("trace id:         ", r.trace_id)
print("server request id:", r._request_id)
t = r.timings
print(f"http {t.http_version}, reused={t.connection_reused}, retries={t.retries}")
print(f"queued {t.queued_ms:.2f} ms, request sent {t.request_sent_ms:.2f} ms, "
      f"first byte {t.first_byte_ms:.2f} ms, total {t.total_ms:.2f} ms")
print(f"bytes sent {t.bytes_sent}, received {t.bytes_received}")
print("server timing:    ", t.server_timing)

# Errors carry the same facts.
try:
    client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
except llmclient.APIStatusError as exc:
    print(f"{type(exc).__name__}: status={exc.status_code} trace_id={exc.trace_id} request_id={exc.request_id}")
    print(f"failed after {exc.timings.total_ms:.2f} ms")
