"""Many concurrent calls over one warm HTTP/2 connection.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=sk-... python examples/async_fanout.py
"""

import asyncio
import os
import time

from llmclient import AsyncOpenAI


async def main() -> None:
    client = AsyncOpenAI()
    model = os.environ.get("MODEL") or (await client.models.list()).data[0].id
    await client.warmup()  # TCP + TLS + HTTP/2 settings before the first real call

    questions = [f"Give me one word that rhymes with {w}." for w in ("cat", "sea", "light", "stone") * 8]
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(client.chat.completions.create(model=model, messages=[{"role": "user", "content": q}], max_tokens=8)
          for q in questions)
    )
    elapsed = time.perf_counter() - started
    versions = {a.timings.http_version for a in answers}
    reused = sum(bool(a.timings.connection_reused) for a in answers)
    print(f"{len(answers)} answers in {elapsed * 1000:.0f} ms over {versions}; {reused} on a reused connection")
    print(answers[0].choices[0].message.content)


asyncio.run(main())
