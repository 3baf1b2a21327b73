"""Response caching with llmclient: memory, SQLite and Redis, per-call options, stream replay.

Run: ``python examples/caching.py``. With OPENAI_BASE_URL/OPENAI_API_KEY/LLM_MODEL set it talks
to that API; otherwise it starts the reference server (``llmclient_bench.server``).
For Redis, set ``LLMCLIENT_REDIS_URL=redis://127.0.0.1:6379/0`` (``pip install 'llmclient[redis]'``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from llmclient import OpenAI
from llmclient.cache import CacheOptions, ResponseCache


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str, str, str]]:
    if os.environ.get("OPENAI_BASE_URL"):
        yield (os.environ["OPENAI_BASE_URL"], os.environ.get("OPENAI_API_KEY", ""),
               os.environ.get("LLM_MODEL", "gpt-4o-mini"))
        return
    from llmclient_bench.harness.serverproc import start_server

    with start_server("zero") as server:
        yield server.base_url, "sk-example", "sim-zero"


def main() -> None:
    with endpoint() as (base_url, api_key, model), tempfile.TemporaryDirectory() as tmp:
        # The persistent default: one SQLite file, shared by every process on this machine.
        specs = {"memory": "memory", "sqlite": f"sqlite://{tmp}/llm-cache.db"}
        if os.environ.get("LLMCLIENT_REDIS_URL"):
            specs["redis"] = os.environ["LLMCLIENT_REDIS_URL"]  # shared by every machine
        question = [{"role": "user", "content": "Is 'I loved it' positive or negative?"}]
        for name, spec in specs.items():
            cache = ResponseCache(spec, ttl=3600, namespace="example")
            with OpenAI(base_url=base_url, api_key=api_key, cache=cache) as client:
                # temperature=0 is deterministic, so it is cached by default.
                first = client.chat.completions.create(model=model, messages=question, temperature=0)
                second = client.chat.completions.create(model=model, messages=question, temperature=0)
                print(f"{name:7} first: {first.timings.cache} ({first.timings.total_ms:.2f} ms)  "
                      f"second: {second.timings.cache} ({second.timings.total_ms:.3f} ms)")
                # The stored answer also answers a streamed call, at once.
                stream = client.chat.completions.create(model=model, messages=question,
                                                        temperature=0, stream=True)
                text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                assert text == second.choices[0].message.content
                print(f"{name:7} stream replay: {stream.timings.cache}, {len(text)} chars")
                # Per call: skip the cache, or refresh the stored answer.
                client.chat.completions.create(model=model, messages=question, temperature=0, cache=False)
                client.chat.completions.create(model=model, messages=question, temperature=0,
                                               cache=CacheOptions(refresh=True, ttl=60))
                print(f"{name:7} stats: {cache.stats()}")
            cache.clear()
            cache.close()


if __name__ == "__main__":
    main()
