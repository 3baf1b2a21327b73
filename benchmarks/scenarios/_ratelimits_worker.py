"""One worker process of the ``ratelimits`` scenario (``python -m
benchmarks.scenarios._ratelimits_worker SPEC_JSON``): closed-loop calls of mixed sizes
until a deadline, through one client variant, then one JSON line per call on stdout. ``api`` in
the spec: ``openai`` (Chat Completions, ``openai.OpenAI`` / ``llmclient.OpenAI``) or ``anthropic``
(the Messages API, ``anthropic.Anthropic`` / ``llmclient.Anthropic``). Each call carries its own
``x-request-id`` (``rid`` in its line), so the server's access log tells what each attempt got.

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


# The model each API's route of the reference server answers as (its Messages route knows the
# Claude names; the chat route takes any).
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def _client(spec: dict[str, Any], seen_429: list[int]) -> Any:
    """The variant's client, made by the harness's builders (the drivers' baseline and face)."""
    from ..harness.drivers import llmclient_client, official_client

    api, variant, url, key = spec.get("api", "openai"), spec["variant"], spec["base_url"], spec["api_key"]
    verify = spec.get("verify") or True  # the reference server's CA, when it speaks TLS
    if variant == "openai":  # the official client of the run's API, a response hook counting 429s
        def hook(response: Any) -> None:
            if response.status_code == 429:
                seen_429[0] += 1

        return official_client(api, url, key, verify, sync=True, event_hooks={"response": [hook]},
                               max_retries=spec["max_retries"])
    pacing: Any = {"llmclient": False, "llmclient/auto": "auto"}.get(variant, True)
    redis = spec.get("redis") if variant == "llmclient/shared" else None
    return llmclient_client(api, url, key, verify, sync=True, pacing=pacing, redis=redis,
                            max_retries=spec["max_retries"])


def main(spec: dict[str, Any]) -> None:
    variant, api = spec["variant"], spec.get("api", "openai")
    seen_429 = [0]
    client = _client(spec, seen_429)
    model = MODELS[api]
    # The official package's types (llmclient's faces answer with them) imported before the
    # start, as the official client's were by making it: an import inside the measured seconds
    # (about 1.5 s for anthropic on this machine) is no part of pacing.
    __import__(api)
    calls = _calls(spec["seed"])
    # Everyone starts together (processes take different times to import their client).
    time.sleep(max(0.0, spec["start_at"] - time.time()))
    deadline = spec["start_at"] + spec["duration_s"]
    out: list[dict[str, Any]] = []
    while time.time() < deadline:
        messages, max_tokens = next(calls)
        before = seen_429[0]
        t0 = time.time()
        status, retries, error = 200, 0, None
        rid = f"{spec['api_key']}-w{spec.get('worker', 0)}-{len(out)}"  # the server's access log names every attempt by it
        try:
            if api == "anthropic":
                r = client.messages.create(model=model, messages=messages, max_tokens=max_tokens,
                                           extra_headers={"x-request-id": rid})
            else:
                r = client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens,
                                                   extra_headers={"x-request-id": rid})
            retries = int(getattr(getattr(r, "timings", None), "retries", 0) or 0)
        except Exception as exc:  # the client gave up (its retries spent): a failed call
            status = int(getattr(exc, "status_code", 0) or 0)
            error = f"{type(exc).__name__}: {exc}"[:300]
            retries = -1
        t1 = time.time()
        refused = seen_429[0] - before if variant == "openai" else (retries if retries >= 0 else 0)
        if variant != "openai" and error is not None and status == 429:
            refused = spec["max_retries"] + 1  # every attempt was refused
        out.append({"t0": t0, "t1": t1, "status": status, "error": error, "refused": refused, "rid": rid,
                    "cost": _cost(messages, max_tokens)})
        time.sleep(spec["think_s"])
    client.close()
    for row in out:
        print(json.dumps(row))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
