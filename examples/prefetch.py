"""Speculative prefetch and prefix warming with llmclient.

Run: ``python examples/prefetch.py``. With OPENAI_BASE_URL/OPENAI_API_KEY/LLM_MODEL set it talks
to that API; otherwise it starts the reference server (``llmclient_bench.server``) on
its ``h100-8b`` profile, whose timings look like a real 8B model's (and which caches prefixes).

The follow-up the app sends must be *exactly* the predicted request: the same parameters, and
the answer appended as ``{"role": "assistant", "content": <text>}``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from llmclient import OpenAI
from llmclient.speculative import BudgetConfig


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str, str, str]]:
    if os.environ.get("OPENAI_BASE_URL"):
        yield (os.environ["OPENAI_BASE_URL"], os.environ.get("OPENAI_API_KEY", ""),
               os.environ.get("LLM_MODEL", "gpt-4o-mini"))
        return
    from llmclient_bench.harness.serverproc import start_server

    server = start_server("h100-8b")
    try:
        yield server.base_url, "sk-example", server.model("sk-example") or "sim-llama-3-8b"
    finally:
        server.stop(timeout=1.0)  # pooled connections would hold a graceful stop for seconds


def main() -> None:
    # At most 2 prefetches in flight, at most 2 extra requests per app call on average.
    budget = BudgetConfig(max_in_flight=2, max_load_share=2.0, max_candidates=2)
    with endpoint() as (base_url, api_key, model), \
            OpenAI(base_url=base_url, api_key=api_key, speculation=budget) as client:
        messages = [{"role": "user", "content": "Give me three facts about owls."}]
        params: dict[str, Any] = {"model": model, "temperature": 0, "max_tokens": 32}
        # After this answer arrives, both likely follow-ups are sent in the background.
        first = client.chat.completions.create(messages=messages, prefetch=["continue", "explain in more detail"],
                                               **params)
        print(f"first turn:  {first.timings.total_ms:7.1f} ms (from the server)")
        time.sleep(1.0)  # the user reads the answer; the prefetches land in the cache meanwhile
        messages += [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "continue"}]
        second = client.chat.completions.create(messages=messages, **params)
        print(f"follow-up:   {second.timings.total_ms:7.1f} ms (cache: {second.timings.cache}, "
              f"served by a prefetch: {second.timings.prefetch_joined})")

        # Prefix warming: the server prefills a long system prompt before the first real call,
        # and keep_warm refreshes it before the provider's prompt cache would forget it.
        system = {"role": "system", "content": "You are a careful assistant. " * 300}
        client.warm(messages=[system], model=model, keep_warm=True)
        answer = client.chat.completions.create(
            messages=[system, {"role": "user", "content": "Hello!"}], **params)
        details = answer.usage.prompt_tokens_details if answer.usage else None
        print(f"after warm:  {answer.usage.prompt_tokens if answer.usage else '?'} prompt tokens, "
              f"{getattr(details, 'cached_tokens', None)} of them from the server's prefix cache")

        stats = client.speculation_stats()
        print("speculation:", {k: stats[k] for k in ("predictions", "sent", "warmups", "hits", "joins",
                                                     "cancelled", "wasted_tokens", "errors")})
    # Leaving the `with` closed the client: the keep-warm timer stopped.


if __name__ == "__main__":
    main()
