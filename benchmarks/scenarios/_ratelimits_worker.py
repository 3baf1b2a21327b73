"""One worker process of the ``ratelimits`` scenario (``python -m
benchmarks.scenarios._ratelimits_worker SPEC_JSON``): closed-loop chat calls of mixed sizes
until a deadline, through one client variant, then one JSON line per call on stdout.

Variants: ``openai`` (the official client, defaults), ``llmclient`` (pacing off),
``llmclient/auto`` (the default: pacing once refused, alone on the key), ``llmclient/local`` (pacing=True, this process's own view), ``llmclient/shared`` (pacing=True,
budgets shared through Redis). A 429 is counted where the client saw it: an httpx response
hook for the official client, the call's retries for llmclient (only 429s are retried here).
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

# The calls' sizes: prompt words and generation caps, mixed (small interactive turns and a
# few long ones), the same draw for every variant (seeded by worker index).
PROMPT_WORDS = (20, 60, 150, 400)
MAX_TOKENS = (16, 32, 64, 256)
WORDS = ("alpha", "delta", "river", "stone", "cloud", "ember", "north", "quiet", "spark", "tide")


def _calls(seed: int) -> Any:
    rng = random.Random(seed)
    while True:
        words = rng.choice(PROMPT_WORDS)
        text = " ".join(rng.choice(WORDS) for _ in range(words))
        yield [{"role": "user", "content": text}], rng.choice(MAX_TOKENS)


def _cost(messages: list[dict[str, str]], max_tokens: int) -> int:
    chars = sum(len(m["content"]) for m in messages)
    return -(-chars // 4) + max_tokens  # what the reference server counts


def main(spec: dict[str, Any]) -> None:
    variant, url, key = spec["variant"], spec["base_url"], spec["api_key"]
    verify = spec.get("verify") or True  # the reference server's CA, when it speaks TLS
    seen_429 = [0]
    if variant == "openai":
        import httpx
        import openai

        def hook(response: httpx.Response) -> None:
            if response.status_code == 429:
                seen_429[0] += 1

        http_client: Any = httpx.Client(verify=verify, event_hooks={"response": [hook]})
        client: Any = openai.OpenAI(base_url=url, api_key=key, http_client=http_client,
                                    max_retries=spec["max_retries"])
    else:
        import llmclient

        pacing: Any = {"llmclient": False, "llmclient/auto": "auto"}.get(variant, True)
        redis = spec.get("redis") if variant == "llmclient/shared" else None
        client = llmclient.OpenAI(base_url=url, api_key=key, pacing=pacing, redis=redis, verify=verify,
                                  max_retries=spec["max_retries"])
    calls = _calls(spec["seed"])
    # Everyone starts together (processes take different times to import their client).
    time.sleep(max(0.0, spec["start_at"] - time.time()))
    deadline = spec["start_at"] + spec["duration_s"]
    out = []
    while time.time() < deadline:
        messages, max_tokens = next(calls)
        before = seen_429[0]
        t0 = time.time()
        status, retries, error = 200, 0, None
        try:
            r = client.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=max_tokens)
            retries = int(getattr(getattr(r, "timings", None), "retries", 0) or 0)
        except Exception as exc:  # the client gave up (its retries spent): a failed call
            status = int(getattr(exc, "status_code", 0) or 0)
            error = f"{type(exc).__name__}: {exc}"[:300]
            retries = -1
        t1 = time.time()
        refused = seen_429[0] - before if variant == "openai" else (retries if retries >= 0 else 0)
        if variant != "openai" and error is not None and status == 429:
            refused = spec["max_retries"] + 1  # every attempt was refused
        out.append({"t0": t0, "t1": t1, "status": status, "error": error, "refused": refused,
                    "cost": _cost(messages, max_tokens)})
        time.sleep(spec["think_s"])
    client.close()
    for row in out:
        print(json.dumps(row))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
