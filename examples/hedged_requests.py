"""Hedged requests: a second copy of a call slower than usual, so one slow replica does not set
your P99.

Run: ``python examples/hedged_requests.py``. With OPENAI_BASE_URL/OPENAI_API_KEY/LLM_MODEL set it
talks to that API; otherwise it starts the repository's reference server with 10% of requests
running 8x slower (``--faults 'straggler=8;prob=0.1'``), so the copies have something to win.

The first 20 calls teach the client the usual latency (to the answer, or for a stream to its
first token); after that, a call still waiting at the p95 of the recent ones is sent again, the
first answer wins and the other copy is cancelled. A budget keeps copies under 10% of calls.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Iterator

from llmclient import HedgeConfig, OpenAI


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str, str, str]]:
    if os.environ.get("OPENAI_BASE_URL"):
        yield (os.environ["OPENAI_BASE_URL"], os.environ.get("OPENAI_API_KEY", ""),
               os.environ.get("LLM_MODEL", "gpt-4o-mini"))
        return
    from llmclient_bench.harness.serverproc import start_server

    with start_server("h100-8b", faults="straggler=8;prob=0.1") as server:
        yield server.base_url, "sk-example", server.model("sk-example") or "sim-llama-3-8b"


def main() -> None:
    with endpoint() as (base_url, api_key, model):
        question = [{"role": "user", "content": "Name one prime number."}]
        # hedge=True is HedgeConfig() with its defaults; a fixed delay or another budget:
        config = HedgeConfig(quantile=0.95, max_ratio=0.1)
        with OpenAI(base_url=base_url, api_key=api_key, hedge=config) as client:
            latencies, won = [], 0
            for _ in range(60):
                r = client.chat.completions.create(model=model, messages=question, max_tokens=8)
                latencies.append(r.timings.total_ms)
                won += r.timings.hedge_won
            # Streams race on their first token.
            stream = client.chat.completions.create(model=model, messages=question,
                                                    max_tokens=8, stream=True)
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            stats = client.hedge_stats()
        latencies.sort()
        print(f"60 calls: p50 {statistics.median(latencies):.0f} ms, "
              f"max {latencies[-1]:.0f} ms; {won} answered by the second copy")
        print(f"a stream: {len(text)} chars, first token at {stream.timings.first_token_ms:.0f} ms")
        for endpoint_model, numbers in stats.items():
            print(f"{endpoint_model}: {numbers}")
        # Per call: hedge=False sends one copy whatever the client says (e.g. a call that must
        # not run twice on the server); store=True calls are never hedged.


if __name__ == "__main__":
    main()
