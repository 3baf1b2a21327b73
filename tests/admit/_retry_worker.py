"""One process of the shared retry budget test: ``python -m tests.admit._retry_worker BASE_URL
REDIS CALLS`` makes CALLS chat calls that the server answers 503 (``x-fault``), with
``redis=REDIS``, and prints one JSON line: the retries each call took, how many were refused by
the budget, and the budget's state."""

from __future__ import annotations

import json
import sys

import llmclient

if __name__ == "__main__":
    base_url, redis_url, n = sys.argv[1:4]
    client = llmclient.OpenAI(base_url=base_url, api_key="k", redis=redis_url, pacing=False, max_retries=2,
                              timeout=30)
    retries, refused = [], 0
    for _ in range(int(n)):
        try:
            client.chat.completions.create(model="sim-zero", messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=2, extra_headers={"x-fault": "status=503"})
        except llmclient.InternalServerError as exc:
            retries.append(exc.timings.retries if exc.timings is not None else -1)
            refused += bool(getattr(exc, "retry_budget", None))
    print(json.dumps({"retries": retries, "refused": refused, "budgets": client.retry_budgets}))
