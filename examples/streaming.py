"""Streaming tokens as they arrive; stopping early cancels generation on the server.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=sk-... python examples/streaming.py
"""

import os

from llmclient import IncompleteStreamError, OpenAI

client = OpenAI()
model = os.environ.get("MODEL") or client.models.list().data[0].id
messages = [{"role": "user", "content": "Tell me a long story about a lighthouse."}]

# Read a whole stream. A stream that ends early raises IncompleteStreamError, never a
# silently truncated answer.
try:
    with client.chat.completions.create(model=model, messages=messages, max_tokens=48, stream=True) as stream:
        for chunk in stream:
            if chunk.choices:
                print(chunk.choices[0].delta.content or "", end="", flush=True)
    print()
    print(f"first token after {stream.timings.first_token_ms:.1f} ms")
except IncompleteStreamError as exc:
    print(f"\nthe stream was cut: {exc}")

# Stop after a few chunks: close() sends RST_STREAM (HTTP/2), the server stops generating,
# and the connection stays open for the next call.
stream = client.chat.completions.create(model=model, messages=messages, max_tokens=500, stream=True)
for i, _chunk in enumerate(stream):
    if i == 5:
        break
stream.close()
again = client.chat.completions.create(model=model, messages=messages, max_tokens=8)
print(f"after an early stop, connection reused: {again.timings.connection_reused}")
