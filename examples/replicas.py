"""Several replicas of one model behind one client: each conversation stays on the replica whose
prefix cache holds it, and a replica that goes away is routed around.

Run: ``python examples/replicas.py``. With REPLICA_URLS set (comma-separated base URLs) it talks
to those; otherwise it starts three of the repository's reference servers, each its own process
with its own prefix cache.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from llmclient import OpenAI, Replicas


@contextlib.contextmanager
def fleet() -> Iterator[tuple[list[str], list[object], str]]:
    if os.environ.get("REPLICA_URLS"):
        yield os.environ["REPLICA_URLS"].split(","), [], os.environ.get("LLM_MODEL", "gpt-4o-mini")
        return
    from llmclient_bench.harness.serverproc import start_replicas

    servers = start_replicas(3, "h200-1b", extra_args=("--cold-start-s", "0"))
    try:
        yield [s.base_url for s in servers], list(servers), servers[0].model() or "sim-llama-3.2-1b"
    finally:
        for server in servers:
            server.stop()


SYSTEM = "You are a patient tutor. Explain step by step and check the student's reasoning. " * 8


def main() -> None:
    with fleet() as (urls, servers, model):
        client = OpenAI(base_url=Replicas(urls, policy="prefix"), api_key=os.environ.get("OPENAI_API_KEY", "sk-example"))
        for student in ("ada", "grace", "alan"):
            messages = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"I am {student}. " + "Here is my essay draft. " * 60}]
            for turn in range(3):
                r = client.chat.completions.create(model=model, messages=messages, max_tokens=16)
                cached = getattr(getattr(r.usage, "prompt_tokens_details", None), "cached_tokens", None)
                print(f"{student} turn {turn}: served by {r.timings.replica}, "
                      f"{r.usage.prompt_tokens} prompt tokens, {cached} from the cache")
                messages += [{"role": "assistant", "content": r.choices[0].message.content or ""},
                             {"role": "user", "content": "And the next paragraph?"}]
        if servers:  # one replica goes away: the calls go on on the others
            servers[0].stop()  # type: ignore[attr-defined]
            for n in range(4):
                r = client.chat.completions.create(model=model, max_tokens=4,
                                                   messages=[{"role": "user", "content": f"question {n}"}])
                print(f"after one replica stopped: served by {r.timings.replica}")
        for replica in client.replica_stats():
            print(f"{replica['url']}: {replica['state']}, served {replica['served']}, failed {replica['failed']}")
        client.close()


if __name__ == "__main__":
    main()
