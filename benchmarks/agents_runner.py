"""The agents benchmark's task run through openai-agents' ``Runner`` (issue 44), in a venv of its
own: openai-agents pins its own ``openai``, so this script runs in the venv
``benchmarks.harness.venvs`` makes for it, with llmclient from the checkout on ``PYTHONPATH``.
It imports nothing of ``benchmarks`` (the venv has none of the suite's packages).

    python agents_runner.py BASE_URL official|llmclient MODEL [CA_BUNDLE]

It reads one task a line on stdin (JSON: ``turns``, ``tools`` (each tool turn's drawn latencies,
ms), ``system``, ``question``, ``results`` (each tool's return text), ``tokens``) and writes one
result a line on stdout (JSON: ``task_s``, ``cpu_s``, ``calls`` (model calls), ``tools_run``,
``final``, or ``error``).
The client lives for the whole process, as an app's does: one connection pool for every task.

A task as an app writes it with openai-agents: an ``Agent`` with the shared system prompt as its
``instructions``, the four tools of ``benchmarks.agents.CHAT_TOOLS`` as ``@function_tool``
functions (each sleeps its drawn latency, asynchronously: the Runner runs a turn's calls
together, so the turn waits the longest, and returns its drawn result), its model
``OpenAIChatCompletionsModel(openai_client=...)`` over the official ``AsyncOpenAI`` or
llmclient's (nothing else differs), ``temperature`` 0, and ``Runner.run(agent, question)``.
Which calls the model makes: the reference server's ``tool_call_plan`` (in
``ModelSettings.extra_body``, the same settings every turn as the Runner sends them): the drawn
number of calls for each tool turn in order, then a text answer. Tracing is off (nothing leaves
for OpenAI).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

# Run as a script, its folder (benchmarks/) comes first on sys.path, where benchmarks/agents.py
# would shadow openai-agents' ``agents`` package: the folder is taken off.
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.dirname(os.path.realpath(__file__))]


def plan(tools: list[list[int]]) -> list[int]:
    """The ``tool_call_plan`` of a task (pure): each tool turn's number of calls."""
    return [len(turn) for turn in tools]


def call_slot(tools: list[list[int]], n: int) -> tuple[int, int]:
    """(turn, call) of the task's ``n``-th tool call, 0-based (pure): the calls of turn 0, then
    of turn 1 ...; IndexError past the task's calls."""
    for turn, latencies in enumerate(tools):
        if n < len(latencies):
            return turn, n
        n -= len(latencies)
    raise IndexError("the model made more tool calls than the task drew")


class _Task:
    """One task's tools: the n-th call made sleeps the n-th drawn latency and returns its result
    (the text ``benchmarks.agents.tool_results`` made, as every arm's tools return it)."""

    def __init__(self, task: dict[str, Any]) -> None:
        self.tools: list[list[int]] = task["tools"]
        self.results: list[list[str]] = task["results"]
        self.made = 0

    async def run(self) -> str:
        turn, k = call_slot(self.tools, self.made)  # taken before the sleep: the order of the calls
        self.made += 1
        await asyncio.sleep(self.tools[turn][k] / 1000.0)
        return self.results[turn][k]


def _client(kind: str, base_url: str, ca: str | None) -> Any:
    """The arm's client, no retries (a lost task is counted); ``ca``: a CA bundle to verify the
    server's TLS with (the reference server's own), else the system's."""
    if kind == "llmclient":
        import llmclient

        return llmclient.AsyncOpenAI(base_url=base_url, api_key="bench-key", max_retries=0, verify=ca or True)
    import openai

    http = openai.DefaultAsyncHttpxClient(verify=ca) if ca else None
    return openai.AsyncOpenAI(base_url=base_url, api_key="bench-key", max_retries=0, http_client=http)


async def _serve(kind: str, base_url: str, model: str, ca: str | None = None) -> None:
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    client = _client(kind, base_url, ca)
    chat_model = OpenAIChatCompletionsModel(model=model, openai_client=client)
    current: list[_Task] = []

    @function_tool
    async def read_file(path: str, query: str) -> str:
        """Read a file of the repository, or the lines of it that match a query."""
        return await current[0].run()

    @function_tool
    async def search_code(query: str, limit: int) -> str:
        """Search the repository's code for a query; at most limit hits."""
        return await current[0].run()

    @function_tool
    async def run_tests(module: str, pattern: str) -> str:
        """Run the tests of a module whose names match a pattern."""
        return await current[0].run()

    @function_tool
    async def edit_file(path: str, patch: str) -> str:
        """Replace the text of a file that matches a query by a patch."""
        return await current[0].run()

    loop = asyncio.get_running_loop()
    try:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            task = json.loads(line)
            current[:] = [_Task(task)]
            agent = Agent(name="coder", instructions=task["system"], model=chat_model,
                          tools=[read_file, search_code, run_tests, edit_file],
                          model_settings=ModelSettings(temperature=0, max_tokens=task["tokens"],
                                                       extra_body={"tool_call_plan": plan(task["tools"])}))
            cpu0, t0 = time.process_time(), time.perf_counter()
            out: dict[str, Any]
            try:
                result = await Runner.run(agent, task["question"], max_turns=task["turns"] + 2)
                out = {"final": result.final_output, "calls": len(result.raw_responses)}
            except Exception as exc:  # a lost task is counted by the caller, not fatal here
                out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            out.update(task_s=time.perf_counter() - t0, cpu_s=time.process_time() - cpu0,
                       tools_run=current[0].made)
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
    finally:
        await client.close()


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or argv[1] not in ("official", "llmclient"):
        print("usage: agents_runner.py BASE_URL official|llmclient MODEL [CA_BUNDLE]", file=sys.stderr)
        return 2
    asyncio.run(_serve(argv[1], argv[0], argv[2], argv[3] if len(argv) == 4 else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
