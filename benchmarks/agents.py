"""Agent tasks, not calls: task time of a Responses tool loop over HTTP and over the WebSocket
mode, the official client against llmclient, on one local reference server.

    python -m benchmarks.agents                       # starts the server (profile h100-8b)
    python -m benchmarks.agents --tasks 6 --turns 6,20 --arms official-http,llmclient-ws

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
``official-ws`` (``client.responses.connect()``), ``llmclient-http``, ``llmclient-ws``. The
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ARMS = ("official-http", "official-ws", "llmclient-http", "llmclient-ws")
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


def _reload(server_timing: str | None) -> float:
    for part in (server_timing or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "reload":
            return float(dur)
    return 0.0


def _inputs(task: Task, turn: int) -> Any:
    if turn == 0:
        return task.question
    return [{"role": "user", "content": f"tool result {i}: {text}"}
            for i, text in enumerate(task.results[turn - 1])]


def _tools(task: Task, turn: int) -> None:
    if turn < task.turns - 1:
        time.sleep(max(task.tools[turn]) / 1000.0)  # the calls run in parallel


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


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # already closed, or closing from the guard's thread failed: the turn ends anyway
        pass


def make_client(arm: str, base_url: str, verify: str | bool = True, api_key: str = "bench-key") -> Any:
    """The arm's client; ``verify``: a CA bundle for the reference server's TLS."""
    lib = arm.split("-")[0]
    if lib == "official":
        import openai

        extra: dict[str, Any] = {}
        if verify is not True:
            extra["http_client"] = openai.DefaultHttpxClient(verify=verify)
        return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, **extra)
    import llmclient

    if verify is True:
        return llmclient.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    return llmclient.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, verify=verify)


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
    rows: dict[str, dict[str, float]] = {}
    for arm in arms:
        mine = [r for r in results if r.arm == arm]
        if not mine:
            continue
        times = sorted(r.task_s for r in mine)
        rows[arm] = {
            "tasks": len(mine),
            "task_p50_s": statistics.median(times),
            "task_p95_s": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
            "ttft_median_ms": statistics.median(t for r in mine for t in r.ttft_ms),
            "cpu_per_task_ms": statistics.median(r.cpu_s for r in mine) * 1000.0,
            "reload_per_task_ms": statistics.median(r.reload_ms for r in mine),
        }
    ratios: dict[str, float] = {}
    for ours in ("llmclient-ws", "llmclient-http"):
        for theirs in ("official-http", "official-ws"):
            if ours in rows and theirs in rows:
                ratios[f"{theirs}/{ours}"] = rows[theirs]["task_p50_s"] / rows[ours]["task_p50_s"]
    return {"arms": rows, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="base URL of a running reference server (default: start one)")
    p.add_argument("--profile", default="h100-8b", help="the started server's engine profile")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--turns", default="6,20", help="min,max model turns per task")
    p.add_argument("--tokens", type=int, default=64, help="max_output_tokens per turn")
    p.add_argument("--system-words", type=int, default=2000)
    p.add_argument("--result-words", type=int, default=150)
    p.add_argument("--seed", type=int, default=44)
    p.add_argument("--arms", default=",".join(ARMS))
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
            (run_ws if arm.endswith("-ws") else run_http)(clients[arm], warm, arm, 16)
        for i in range(args.tasks):
            task = draw_task(args.seed, i, (lo, hi), args.system_words, args.result_words)
            for arm in (arms if i % 2 == 0 else arms[::-1]):  # AB BA: neither always goes first
                run = run_ws if arm.endswith("-ws") else run_http
                r = run(clients[arm], task, arm, args.tokens)
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
              f"ttft {row['ttft_median_ms']:7.1f} ms  cpu/task {row['cpu_per_task_ms']:7.1f} ms  "
              f"modelled reload/task {row['reload_per_task_ms']:7.1f} ms")
    for name, value in summary["ratios"].items():
        print(f"ratio {name:<30} {value:6.3f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "summary": summary,
                               "tasks": [r.__dict__ for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
