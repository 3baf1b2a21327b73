"""Agent tasks, not calls: task time of a Responses tool loop over HTTP and over the WebSocket
mode, and of a chat-completions tool loop, the official client against llmclient, on one local
reference server.

    python -m benchmarks.agents                       # starts the server (profile h100-8b)
    python -m benchmarks.agents --tasks 6 --turns 6,20 --arms official-http,llmclient-ws
    python -m benchmarks.agents --arms official-chat,llmclient-chat --call-tokens 32
    python -m benchmarks.agents --arms official-runner,llmclient-runner   # openai-agents' Runner

A task (drawn per task index from ``--seed``, the same for every arm): a shared system prompt
(``--system-words`` words, a few thousand tokens, sent as ``instructions`` every turn as agents
do), a first user question, then ``turns`` model turns chained by ``previous_response_id``;
after each turn but the last the "model asked" for 1-4 tool calls (the reference server's
Responses route writes text, not calls, so the calls are drawn, not parsed), run in parallel
for ``tool_ms`` each (drawn from 50-800 ms: the turn waits the longest), whose results (about
``--result-words`` words each) are the next turn's input. The context grows by the answers and
the results. ``store`` is False (the WebSocket turns continue from the socket's memory; the
HTTP turns from the server's store, so HTTP arms use ``store=True``).

Arms (``--arms``): ``official-http`` (``client.responses.create(stream=True)``),
``official-ws`` (``client.responses.connect()``), ``llmclient-http``, ``llmclient-ws``, and the
chat-completions tool loop (:func:`run_chat`): ``official-chat`` and ``llmclient-chat``. There
the calls are the model's: the same task, the whole conversation sent every turn (the system
prompt as a system message, each assistant tool-call turn and one ``tool`` message per call
with its drawn result), :data:`CHAT_TOOLS` offered; a turn but the last asks the reference
server for the task's calls (``tool_choice="required"`` and the server's ``n_tool_calls``,
``benchmarks/server/toolcalls.py``: the calls one after the other, ``--call-tokens`` argument
tokens each, written at the server's token rate), the last answers in text; greedy, so both
arms get the same answers and must end on the same final message (the command exits 1 when
they do not). ``official-chat`` reads each whole stream (as the official client's docs
accumulate it), then runs the turn's tools in parallel; ``llmclient-chat`` passes
``prefetch="prefix"`` (a warm-up of the conversation and the tool-call turn while the tools
run) and starts each tool as ``stream.tool_calls()`` hands its call over, while the model
writes the next. Per chat task also: the tools' head start (each tool's start before its
stream ended, summed), the wait from each stream's end to its turn's last tool result, how many
tools started before the model began the turn's last call (by order), warm-ups sent
(``speculation_stats()``), prompt and cached tokens (the server's usage). The same chat task
through openai-agents' ``Runner`` (:func:`run_runner`): ``official-runner`` and
``llmclient-runner``, ``Runner.run`` over ``OpenAIChatCompletionsModel`` handed the official
``AsyncOpenAI`` or llmclient's, nothing else different (``agents_runner.py``, run in
openai-agents' own venv, which pins its own ``openai``: made on first use, from PyPI); the
model's calls are the reference server's ``tool_call_plan`` (the task's drawn calls per tool
turn, then text), the tools async sleeps of the drawn latencies; both must end on the same final
output. The
arms take turns per task (AB AB), all in this process, so load from elsewhere hits each alike.
Per task: task time, time to first token of each turn, client CPU (``time.process_time()``
over the task: tools sleep, so it is the client's work), and the server's modelled reload
(``reload`` in each turn's Server-Timing: the documented continuation cost of
``benchmarks/server/continuation.py``, a figure from OpenAI's guide, not measured work), so a
gain can be split into that figure and the rest. Reported: p50/p95 task time, median TTFT,
CPU per task, the reload waited per task, and ratios of medians against the official arms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .harness.drivers import llmclient_client, official_client

RESPONSES_ARMS = ("official-http", "official-ws", "llmclient-http", "llmclient-ws")
CHAT_ARMS = ("official-chat", "llmclient-chat")
# The chat task through openai-agents' Runner (agents_runner.py, in openai-agents' own venv).
RUNNER_ARMS = ("official-runner", "llmclient-runner")
ARMS = RESPONSES_ARMS + CHAT_ARMS + RUNNER_ARMS
CALL_TOKENS = 32  # a chat tool call's argument tokens (the server writes them at its token rate)
ROOT = Path(__file__).resolve().parents[1]
MODEL = "gpt-4o-mini"
TERMINAL = ("response.completed", "response.incomplete", "response.failed")
WORDS = ("tool", "result", "file", "line", "value", "error", "search", "report", "table", "query",
         "index", "status", "record", "module", "branch", "commit", "config", "token", "cache")


@dataclass(frozen=True)
class Task:
    turns: int
    tools: tuple[tuple[int, ...], ...]  # per turn but the last: each tool's latency (ms)
    system: str
    question: str
    results: tuple[tuple[str, ...], ...]


def draw_task(seed: int, index: int, turns: tuple[int, int], system_words: int,
              result_words: int) -> Task:
    """One task, the same for every arm (pure: the RNG is seeded by the task's index)."""
    rng = random.Random(seed * 1_000_003 + index)
    n = rng.randint(*turns)
    tools = tuple(tuple(rng.randint(50, 800) for _ in range(rng.randint(1, 4))) for _ in range(n - 1))
    system = " ".join(rng.choice(WORDS) for _ in range(system_words))
    results = tuple(tuple(" ".join(rng.choice(WORDS) for _ in range(result_words)) for _ in calls)
                    for calls in tools)
    return Task(n, tools, system, f"Task {index}: find the failing module and fix it.", results)


@dataclass
class TaskResult:
    arm: str
    task_s: float
    cpu_s: float
    ttft_ms: list[float] = field(default_factory=list)
    reload_ms: float = 0.0
    # chat arms: tools' head start (each tool's start before its stream ended, summed), the
    # wait from each stream's end to its turn's last tool result (summed; with ``stream_ms``
    # it splits the task time: streams + tool waits + the app's own work), warm-ups sent,
    # prompt and cached prompt tokens (the server's usage), the final message's text
    early_ms: float = 0.0
    early_calls: int = 0  # tools started while the model had not begun the turn's last call
    tool_wait_ms: float = 0.0
    stream_ms: float = 0.0  # each turn's request sent -> its stream read to the end, summed
    warmups: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    final: str | None = None


def _reload(server_timing: str | None) -> float:
    for part in (server_timing or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "reload":
            return float(dur)
    return 0.0


def tool_results(task: Task, turn: int) -> list[str]:
    """What the tools of tool turn ``turn`` return, in the calls' order (pure): every arm hands
    the model the same text."""
    return [f"tool result {k}: {text}" for k, text in enumerate(task.results[turn])]


def _inputs(task: Task, turn: int) -> Any:
    if turn == 0:
        return task.question
    return [{"role": "user", "content": text} for text in tool_results(task, turn - 1)]


def _tools(task: Task, turn: int) -> None:
    if turn < task.turns - 1:
        time.sleep(max(task.tools[turn]) / 1000.0)  # the calls run in parallel


def runner(arm: str) -> Any:
    """The function that runs a task on ``arm``."""
    if arm in CHAT_ARMS:
        return run_chat
    if arm in RUNNER_ARMS:
        return run_runner
    return run_ws if arm.endswith("-ws") else run_http


def run_http(client: Any, task: Task, arm: str, tokens: int, **_ws: Any) -> TaskResult:
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = TaskResult(arm, 0.0, 0.0)
    previous = None
    for turn in range(task.turns):
        sent = time.perf_counter()
        stream = client.responses.create(
            model=MODEL, instructions=task.system, input=_inputs(task, turn), max_output_tokens=tokens,
            stream=True, store=True, **({"previous_response_id": previous} if previous else {}))
        first = None
        for ev in stream:
            if first is None and ev.type == "response.output_text.delta":
                first = time.perf_counter()
            if ev.type in TERMINAL:
                previous = ev.response.id
        server_timing = stream.response.headers.get("server-timing")
        out.reload_ms += _reload(server_timing)
        out.ttft_ms.append(((first or time.perf_counter()) - sent) * 1000.0)
        _tools(task, turn)
    out.task_s, out.cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    return out


def run_ws(client: Any, task: Task, arm: str, tokens: int, store: bool = False,
           connect: dict[str, Any] | None = None, turn_deadline_s: float | None = None) -> TaskResult:
    """One task over ``client.responses.connect(**connect)``. Raises when a turn ends without a
    terminal event (the socket went away and the client gave nothing back): the task is lost.
    ``turn_deadline_s``: a hang guard (the official client, reconnected after a cut, waits
    forever for the lost response's events): past it the connection is closed, the turn ends
    without its terminal event and the task is lost."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = TaskResult(arm, 0.0, 0.0)
    previous = None
    with client.responses.connect(**(connect or {})) as conn:
        for turn in range(task.turns):
            guard = None
            if turn_deadline_s is not None:
                guard = threading.Timer(turn_deadline_s, _close_quietly, (conn,))
                guard.daemon = True
                guard.start()
            sent = time.perf_counter()
            conn.response.create(
                model=MODEL, instructions=task.system, input=_inputs(task, turn), max_output_tokens=tokens,
                store=store, **({"previous_response_id": previous} if previous else {}))
            first, done = None, False
            for ev in conn:
                if first is None and ev.type == "response.output_text.delta":
                    first = time.perf_counter()
                if ev.type in TERMINAL or ev.type == "error":
                    if ev.type == "error":
                        raise RuntimeError(f"{arm}: {ev}")
                    previous, done = ev.response.id, True
                    out.reload_ms += _reload(getattr(ev, "server_timing", None))
                    break
            if guard is not None:
                guard.cancel()
            if not done:
                raise RuntimeError(f"{arm}: turn {turn + 1}: the socket's events ended without "
                                   "a terminal event")
            out.ttft_ms.append(((first or time.perf_counter()) - sent) * 1000.0)
            _tools(task, turn)
    out.task_s, out.cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    return out


# -- the chat-completions tool loop ------------------------------------------------------------
# The tools every chat turn offers (part of the prompt, before the messages, so the same prefix
# every turn); the reference server writes the turn's calls over them in order (n_tool_calls).
CHAT_TOOLS: tuple[dict[str, Any], ...] = tuple(
    {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": list(properties)}}}
    for name, description, properties in (
        ("read_file", "Read a file of the repository, or the lines of it that match a query.",
         {"path": {"type": "string"}, "query": {"type": "string"}}),
        ("search_code", "Search the repository's code for a query; at most limit hits.",
         {"query": {"type": "string"}, "limit": {"type": "integer"}}),
        ("run_tests", "Run the tests of a module whose names match a pattern.",
         {"module": {"type": "string"}, "pattern": {"type": "string"}}),
        ("edit_file", "Replace the text of a file that matches a query by a patch.",
         {"path": {"type": "string"}, "patch": {"type": "string"}}),
    ))


def chat_first_messages(task: Task) -> list[dict[str, Any]]:
    """The conversation a chat task starts with: the shared system prompt, the question."""
    return [{"role": "system", "content": task.system}, {"role": "user", "content": task.question}]


def chat_request(task: Task, turn: int, messages: list[dict[str, Any]], tokens: int,
                 call_tokens: int) -> dict[str, Any]:
    """The keywords of a chat turn's ``chat.completions.create`` (pure). A turn but the last asks
    for its task's tool calls (``tool_choice="required"`` and the reference server's
    ``n_tool_calls``: as many calls as the task drew, ``call_tokens`` of arguments each); the
    last answers in text (``tool_choice="none"``, ``tokens``). Greedy (temperature 0), so the same
    conversation gets the same answer (and the same call ids) on every arm."""
    calls = len(task.tools[turn]) if turn < task.turns - 1 else 0
    kw: dict[str, Any] = {
        "model": MODEL, "messages": messages, "tools": list(CHAT_TOOLS), "temperature": 0,
        "stream": True, "stream_options": {"include_usage": True},
        "tool_choice": "required" if calls else "none",
        "max_tokens": calls * call_tokens if calls else tokens}
    if calls:
        kw["extra_body"] = {"n_tool_calls": calls}
    return kw


def tool_messages(task: Task, turn: int, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``tool`` message per call of the turn's assistant message, in the calls' order, with
    that call's drawn result (pure); RuntimeError when the model made another number of calls
    than the task drew."""
    want = len(task.results[turn])
    if len(calls) != want:
        raise RuntimeError(f"turn {turn + 1}: the answer made {len(calls)} tool calls, the task drew {want}")
    return [{"role": "tool", "tool_call_id": call["id"], "content": text}
            for call, text in zip(calls, tool_results(task, turn), strict=True)]


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


class ChatAccumulator:
    """How an app reads a chat stream (pure): chunks in, the assistant message out, as the
    official client's docs accumulate ``delta.content`` and ``delta.tool_calls`` by index."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None

    def feed(self, chunk: Any) -> None:
        if _get(chunk, "usage") is not None:
            self.usage = _get(chunk, "usage")
        for choice in _get(chunk, "choices") or ():
            delta = _get(choice, "delta")
            if delta is None:
                continue
            if _get(delta, "content"):
                self.content.append(_get(delta, "content"))
            for frag in _get(delta, "tool_calls") or ():
                call = self.calls.setdefault(_get(frag, "index") or 0, {
                    "id": None, "type": "function", "function": {"name": None, "arguments": ""}})
                if _get(frag, "id"):
                    call["id"] = _get(frag, "id")
                fn = _get(frag, "function")
                if fn is not None:
                    if _get(fn, "name"):
                        call["function"]["name"] = _get(fn, "name")
                    call["function"]["arguments"] += _get(fn, "arguments") or ""

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) if self.content else None}
        if self.calls:
            msg["tool_calls"] = [self.calls[k] for k in sorted(self.calls)]
        return msg


def has_token(chunk: Any) -> bool:
    """Whether a chat chunk carries output (text or a tool call's fragment): the first one is the
    turn's time to first token."""
    for choice in _get(chunk, "choices") or ():
        delta = _get(choice, "delta")
        if delta is not None and (_get(delta, "content") or _get(delta, "tool_calls")):
            return True
    return False


@dataclass
class ToolRun:
    """One tool of a turn: when the app started it and when its result came
    (``time.perf_counter()``)."""

    index: int
    started: float = 0.0
    ended: float = 0.0


def tool_timing(stream_end: float, runs: list[ToolRun]) -> tuple[float, float]:
    """(head start, wait) of a turn's tools, in ms (pure): each tool's start before the stream
    ended, summed (0 for a tool started after it, as an app that waits for the whole answer
    starts them), and the wait from the stream's end to the last tool's result."""
    early = sum(max(0.0, stream_end - r.started) for r in runs) * 1000.0
    wait = max(0.0, max((r.ended for r in runs), default=stream_end) - stream_end) * 1000.0
    return early, wait


def _tool(run: ToolRun, ms: int) -> None:
    time.sleep(ms / 1000.0)
    run.ended = time.perf_counter()


def _usage_tokens(usage: Any) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    details = _get(usage, "prompt_tokens_details")
    return int(_get(usage, "prompt_tokens") or 0), int((_get(details, "cached_tokens") if details else 0) or 0)


class _Turn:
    """One chat turn's bookkeeping: its tools (started on a pool), its first token, its chunks."""

    def __init__(self, pool: ThreadPoolExecutor, latencies: tuple[int, ...], where: str) -> None:
        self.pool, self.latencies, self.where = pool, latencies, where
        self.runs: list[ToolRun] = []
        self.waits: list[Any] = []
        self.acc = ChatAccumulator()
        self.first: float | None = None
        self.early = 0  # tools started before the stream had begun the turn's last call

    def start(self, index: int) -> None:
        if not 0 <= index < len(self.latencies):
            raise RuntimeError(f"{self.where}: a tool call of index {index}; the task drew {len(self.latencies)}")
        run = ToolRun(index, started=time.perf_counter())  # when the app started it (the pool's thread runs it now)
        self.runs.append(run)
        self.early += len(self.acc.calls) < len(self.latencies)  # by order, not by clock
        self.waits.append(self.pool.submit(_tool, run, self.latencies[index]))

    def seen(self, chunk: Any) -> None:
        if self.first is None and has_token(chunk):
            self.first = time.perf_counter()
        self.acc.feed(chunk)

    def wait(self) -> None:
        for w in self.waits:
            w.result()


def run_chat(client: Any, task: Task, arm: str, tokens: int, call_tokens: int = CALL_TOKENS) -> TaskResult:
    """One task as a chat-completions tool loop. ``official-chat``: the app reads each whole
    stream, then runs the turn's tools in parallel. ``llmclient-chat``: ``prefetch="prefix"`` (a
    warm-up of the conversation and the tool-call turn while the tools run) and each tool
    started as ``stream.tool_calls()`` hands its call over, while the model writes the next.
    Every turn sends the whole conversation (the system prompt first)."""
    ours = arm.startswith("llmclient")
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = TaskResult(arm, 0.0, 0.0)
    warm0 = client.speculation_stats()["warmups"] if ours else 0
    messages = chat_first_messages(task)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool") as pool:
        for turn in range(task.turns):
            kw = chat_request(task, turn, messages, tokens, call_tokens)
            t = _Turn(pool, task.tools[turn] if turn < task.turns - 1 else (), f"{arm}: turn {turn + 1}")
            sent = time.perf_counter()
            if ours:
                stream = client.chat.completions.create(prefetch="prefix", **kw)
                for call in stream.tool_calls(on_chunk=t.seen):
                    t.start(call.index)
                end = time.perf_counter()
                message = stream.tool_collector.message()
            else:
                for chunk in client.chat.completions.create(**kw):
                    t.seen(chunk)
                end = time.perf_counter()
                message = t.acc.message()
                for k in range(len(message.get("tool_calls") or ())):
                    t.start(k)
            t.wait()
            early, wait = tool_timing(end, t.runs)
            out.early_ms += early
            out.early_calls += t.early
            out.tool_wait_ms += wait
            out.stream_ms += (end - sent) * 1000.0
            prompt, cached = _usage_tokens(t.acc.usage)
            out.prompt_tokens += prompt
            out.cached_tokens += cached
            out.ttft_ms.append(((t.first or end) - sent) * 1000.0)
            if turn < task.turns - 1:
                messages = [*messages, message, *tool_messages(task, turn, message.get("tool_calls") or [])]
            else:
                out.final = message.get("content")
    out.task_s, out.cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    if ours:
        out.warmups = client.speculation_stats()["warmups"] - warm0
    return out


def different_finals(results: list[TaskResult], pair: tuple[str, str] = CHAT_ARMS) -> list[int]:
    """Task numbers (by order within each arm) whose two arms of ``pair`` (the chat arms, or the
    Runner arms) ended on different final messages (pure; greedy answers to the same
    conversation must agree)."""
    theirs = [r.final for r in results if r.arm == pair[0]]
    ours = [r.final for r in results if r.arm == pair[1]]
    return [i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b]


# -- the same task through openai-agents' Runner -----------------------------------------------
class RunnerProcess:
    """An arm's openai-agents process (``agents_runner.py`` in openai-agents' venv, llmclient from
    here on its ``PYTHONPATH``): one client for every task, as an app's; a task a line in, a
    result a line out. The venv is made on first use (``harness/venvs``: minutes, from PyPI)."""

    def __init__(self, arm: str, base_url: str, model: str = MODEL, verify: str | bool = True) -> None:
        import os
        import subprocess

        from .harness.venvs import OPENAI_AGENTS, framework_python, llmclient_path

        python = framework_python("openai-agents", OPENAI_AGENTS)
        env = {**os.environ, "PYTHONPATH": llmclient_path()}
        for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
            env.pop(name, None)
        self.arm = arm
        self._proc = subprocess.Popen(
            [str(python), str(Path(__file__).with_name("agents_runner.py")), base_url,
             arm.split("-")[0], model, *([verify] if isinstance(verify, str) else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def run(self, task: Task, tokens: int) -> dict[str, Any]:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(runner_task(task, tokens)) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.arm}: the openai-agents process ended (exit {proc.wait()})")
        out: dict[str, Any] = json.loads(line)
        return out

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except Exception:
            self._proc.kill()
            self._proc.wait()


def runner_task(task: Task, tokens: int) -> dict[str, Any]:
    """A task as ``agents_runner.py`` reads it (pure)."""
    return {"turns": task.turns, "tools": [list(t) for t in task.tools], "system": task.system,
            "question": task.question, "results": [tool_results(task, turn) for turn in range(len(task.tools))],
            "tokens": tokens}


def run_runner(proc: RunnerProcess, task: Task, arm: str, tokens: int, **_: Any) -> TaskResult:
    """One task through ``Runner.run`` in the arm's openai-agents process. Raises when the Runner
    raised, or made other calls than the task drew (a lost task)."""
    got = proc.run(task, tokens)
    if "error" in got:
        raise RuntimeError(f"{arm}: {got['error']}")
    drawn = sum(len(t) for t in task.tools)
    if got["calls"] != task.turns or got["tools_run"] != drawn:
        raise RuntimeError(f"{arm}: {got['calls']} model calls and {got['tools_run']} tool runs; the task drew "
                           f"{task.turns} turns and {drawn} calls")
    out = TaskResult(arm, got["task_s"], got["cpu_s"])
    out.final = got["final"]
    return out


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # already closed, or closing from the guard's thread failed: the turn ends anyway
        pass


def make_client(arm: str, base_url: str, verify: str | bool = True, api_key: str = "bench-key") -> Any:
    """The arm's sync client, no retries (a lost task is counted, not retried); ``verify``: a CA
    bundle for the reference server's TLS. Built by the suite's one builder (``harness/drivers``)."""
    if arm in RUNNER_ARMS:  # its own process, its own client (agents_runner.py)
        return RunnerProcess(arm, base_url, verify=verify)
    build = official_client if arm.split("-")[0] == "official" else llmclient_client
    return build("openai", base_url, api_key, verify, sync=True, max_retries=0)


def ws_options(arm: str, verify: str | bool) -> dict[str, Any]:
    """``connect()`` keywords an arm needs for the reference server's TLS: the official client
    takes an ``ssl`` context in ``websocket_connection_options`` (passed on to ``websockets``);
    llmclient's socket uses the client's own ``verify``."""
    if arm.startswith("official") and isinstance(verify, str):
        import ssl

        return {"websocket_connection_options": {"ssl": ssl.create_default_context(cafile=verify)}}
    return {}


def summarize(results: list[TaskResult], arms: list[str]) -> dict[str, Any]:
    """Per arm: task time p50/p95, median TTFT, CPU and modelled reload per task; ratios of the
    medians (an official arm's over llmclient's: above 1 is llmclient faster)."""
    rows: dict[str, dict[str, Any]] = {}
    for arm in arms:
        mine = [r for r in results if r.arm == arm]
        if not mine:
            continue
        times = sorted(r.task_s for r in mine)
        rows[arm] = {
            "tasks": len(mine),
            "task_p50_s": statistics.median(times),
            "task_p95_s": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
            # None where the arm saw no token (the Runner's whole calls)
            "ttft_median_ms": statistics.median(ttft) if (ttft := [t for r in mine for t in r.ttft_ms]) else None,
            "cpu_per_task_ms": statistics.median(r.cpu_s for r in mine) * 1000.0,
            "reload_per_task_ms": statistics.median(r.reload_ms for r in mine),
        }
        if arm in CHAT_ARMS:
            rows[arm].update({
                "tool_head_start_per_task_ms": statistics.median(r.early_ms for r in mine),
                "tool_wait_per_task_ms": statistics.median(r.tool_wait_ms for r in mine),
                "stream_per_task_ms": statistics.median(r.stream_ms for r in mine),
                "warmups_per_task": statistics.median(r.warmups for r in mine),
                "cached_share": (sum(r.cached_tokens for r in mine) / max(1, sum(r.prompt_tokens for r in mine))),
            })
    ratios: dict[str, float] = {}
    for ours in ("llmclient-ws", "llmclient-http"):
        for theirs in ("official-http", "official-ws"):
            if ours in rows and theirs in rows:
                ratios[f"{theirs}/{ours}"] = rows[theirs]["task_p50_s"] / rows[ours]["task_p50_s"]
    for theirs, ours in (CHAT_ARMS, RUNNER_ARMS):
        if theirs in rows and ours in rows:
            ratios[f"{theirs}/{ours}"] = rows[theirs]["task_p50_s"] / rows[ours]["task_p50_s"]
    return {"arms": rows, "ratios": ratios}


def _ms(value: float | None) -> str:
    return "      -" if value is None else f"{value:7.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="base URL of a running reference server (default: start one)")
    p.add_argument("--profile", default="h100-8b", help="the started server's engine profile")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--turns", default="6,20", help="min,max model turns per task")
    p.add_argument("--tokens", type=int, default=64, help="max_output_tokens per turn (chat: of the last, text turn)")
    p.add_argument("--call-tokens", type=int, default=CALL_TOKENS,
                   help="chat arms: argument tokens per tool call (a turn's max_tokens: calls x this)")
    p.add_argument("--system-words", type=int, default=2000)
    p.add_argument("--result-words", type=int, default=150)
    p.add_argument("--chat-result-words", type=int, default=60,
                   help="chat arms' tool results (the whole conversation is resent: 150 words overflow "
                        "h100-8b's 8,192-token window in long tasks)")
    p.add_argument("--seed", type=int, default=44)
    p.add_argument("--arms", default=",".join(RESPONSES_ARMS + CHAT_ARMS),
                   help="comma-separated, of: " + ", ".join(ARMS) + " (the Runner arms run in openai-agents' own "
                        "venv, made on first use from PyPI: name them to run them)")
    p.add_argument("--out", default=str(ROOT / "results" / "agents.json"))
    args = p.parse_args(argv)
    arms = args.arms.split(",")
    unknown = set(arms) - set(ARMS)
    if unknown:
        p.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
    lo, hi = (int(x) for x in args.turns.split(","))
    server = None
    if args.url:
        base_url = args.url.rstrip("/")
    else:
        from .harness.serverproc import start_server

        server = start_server(profile=args.profile)
        base_url = server.base_url
    results: list[TaskResult] = []
    clients = {arm: make_client(arm, base_url) for arm in arms}
    try:
        for arm in arms:  # a warm-up task each (connections, imports), not counted
            warm = draw_task(args.seed, -1, (2, 2), 50, 10)
            runner(arm)(clients[arm], warm, arm, 16)
        for i in range(args.tasks):
            task = draw_task(args.seed, i, (lo, hi), args.system_words, args.result_words)
            chat = draw_task(args.seed, i, (lo, hi), args.system_words, args.chat_result_words)
            for arm in (arms if i % 2 == 0 else arms[::-1]):  # AB BA: neither always goes first
                run = runner(arm)
                extra = {"call_tokens": args.call_tokens} if arm in CHAT_ARMS else {}
                r = run(clients[arm], chat if arm in CHAT_ARMS + RUNNER_ARMS else task, arm, args.tokens, **extra)
                results.append(r)
                print(f"task {i + 1}/{args.tasks} ({task.turns} turns): {arm:<15} {r.task_s:7.2f} s "
                      f"cpu {r.cpu_s * 1000:7.1f} ms reload {r.reload_ms:7.1f} ms", file=sys.stderr, flush=True)
    finally:
        for client in clients.values():
            client.close()
        if server is not None:
            server.stop()
    summary = summarize(results, arms)
    for arm, row in summary["arms"].items():
        print(f"{arm:<15} task p50 {row['task_p50_s']:6.2f} s  p95 {row['task_p95_s']:6.2f} s  "
              f"ttft {_ms(row['ttft_median_ms'])} ms  cpu/task {row['cpu_per_task_ms']:7.1f} ms  "
              f"modelled reload/task {row['reload_per_task_ms']:7.1f} ms")
        if arm in CHAT_ARMS:
            print(f"{'':<15} tools' head start/task {row['tool_head_start_per_task_ms']:7.0f} ms  "
                  f"streams/task {row['stream_per_task_ms']:7.0f} ms  "
                  f"tool wait after streams/task {row['tool_wait_per_task_ms']:7.0f} ms  "
                  f"warm-ups/task {row['warmups_per_task']:4.1f}  cached prompt share {row['cached_share']:.2f}")
    for name, value in summary["ratios"].items():
        print(f"ratio {name:<30} {value:6.3f}")
    differ = different_finals(results) + different_finals(results, RUNNER_ARMS)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "summary": summary,
                               "tasks": [r.__dict__ for r in results]}, indent=2))
    if differ:
        print(f"the chat (or Runner) arms' final messages differ on tasks {sorted({i + 1 for i in differ})}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
