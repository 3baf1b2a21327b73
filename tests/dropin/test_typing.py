"""create() is typed with overloads: mypy sees the official types, a stream for stream=True,
and llmclient's extras (trace_id, timings) on the result."""

from __future__ import annotations

from pathlib import Path

import pytest

SNIPPET = '''
from typing_extensions import assert_type
import openai.types.chat
from llmclient import AsyncOpenAI, AsyncStream, OpenAI, Stream
from llmclient.pipeline.timings import CallRecord

client = OpenAI(api_key="k")
r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
c: openai.types.chat.ChatCompletion = r
assert_type(r.trace_id, str)
assert_type(r.timings, CallRecord)
s = client.chat.completions.create(model="m", messages=[], stream=True)
assert_type(s, Stream[openai.types.chat.ChatCompletionChunk])
t = client.completions.create(model="m", prompt="x")
t.choices[0].text.upper()

async def main() -> None:
    a = AsyncOpenAI(api_key="k")
    x = await a.chat.completions.create(model="m", messages=[], stream=True)
    assert_type(x, AsyncStream[openai.types.chat.ChatCompletionChunk])
    y = await a.chat.completions.create(model="m", messages=[])
    y.choices[0].message.content
'''


def test_mypy_sees_the_official_types_and_the_stream_type(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    path = tmp_path / "typed_usage.py"
    path.write_text(SNIPPET)
    bad = path.with_name("typed_wrong.py")
    bad.write_text(SNIPPET.replace("assert_type(r.trace_id, str)", "assert_type(r, int)"))
    root = Path(__file__).resolve().parents[2]
    out, err, status = api.run([str(path), "--no-error-summary", "--cache-dir", str(root / ".mypy_cache"),
                                "--ignore-missing-imports"])
    assert status == 0, out + err
    out, err, status = api.run([str(bad), "--no-error-summary", "--cache-dir", str(root / ".mypy_cache"),
                                "--ignore-missing-imports"])
    assert status == 1 and "[assert-type]" in out, out + err
