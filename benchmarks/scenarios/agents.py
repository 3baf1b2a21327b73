"""Agent tasks on the emulated network: the tool loop of ``benchmarks/agents.py`` (a Responses
tool loop of several turns, 1-4 tools of 50-800 ms per turn run in parallel, a shared system
prompt of a few thousand tokens every turn, tool results as the next input) through the suite's
server and network (``--network wan``/``lan``), for the four arms: the official client over
HTTP (``responses.create(stream=True)``, ``previous_response_id``, ``store=True``) and over its
WebSocket mode (``responses.connect()``, ``store=False``), llmclient the same two ways; and the
same tasks as a chat-completions tool loop, official against llmclient.

Three parts:

* ``time``: each task runs through every arm in turn (the order flipped per task), so the arms'
  lists are paired by task and the harness's bootstrap resamples the pairs. One record per task:
  ``latency_ms`` is the task time (tools included: they are the same sleeps on every arm),
  ``ttft_ms`` the median time to first token of its turns, ``extra`` the client CPU of the task
  and the server's modelled reload (Server-Timing ``reload``: the continuation cost figure of
  ``benchmarks/server/continuation.py``, from OpenAI's guide, not measured work).
* ``cut``: shorter tasks over the WebSocket mode, official against llmclient, ``store=True`` (so
  a response can be fetched by its id after a lost socket), exactly ``CUT_SHARE`` of the tasks'
  sockets cut mid-response: the reference server's ``x-fault: cut_after=N;once=TOKEN`` on the
  handshake closes the socket (1011) before event N of its first response (N drawn from 1 to
  the first text deltas: mid-answer, after ``response.created``); a reconnection carrying the same header runs clean. The official client
  gets ``on_reconnecting`` (without it, it does not reconnect at all; both count their
  reconnections there, the proof a cut fired). The part runs on a server of its own started
  with ``--allow-fault-headers`` (the suite's does not honour ``x-fault``), behind the same network. A task is lost when the
  client raised or a turn's events ended without a terminal event (a turn still waiting after
  ``TURN_DEADLINE_S``, a hang guard, has its connection closed: the official client, reconnected
  after a cut, waits forever for the lost response's events).

* ``chat``: the chat-completions tool loop of ``agents.run_chat``, ``official-chat`` (the app
  reads each whole stream, then runs the turn's tools in parallel) against ``llmclient-chat``
  (``prefetch="prefix"``: the next turn's prefix warmed while the tools run; each tool started
  as ``stream.tool_calls()`` hands its call over), the same drawn tasks paired as in ``time``.
  The tool-call turns ask the reference server for the task's calls (its ``n_tool_calls``: the
  calls written one after the other at its token rate, ``agents.CALL_TOKENS`` argument tokens
  each), so an early start is measured against the server's pacing. ``extra`` per task: the
  tools' head start before their streams ended, the wait from each stream's end to the turn's
  last tool result, warm-ups sent, prompt and cached tokens (the server's usage), the final
  message (the notes count the pairs whose final messages differ: none should). Tool results of
  ``CHAT_RESULT_WORDS`` words, so the whole conversation fits the profile's context window.

* ``runner``: the chat tasks through openai-agents' ``Runner.run`` (``agents.run_runner``): its
  ``OpenAIChatCompletionsModel`` handed the official ``AsyncOpenAI`` (``official-runner``) or
  llmclient's (``llmclient-runner``), nothing else different, each arm a process in
  openai-agents' own venv (it pins its own ``openai``; made on first use from PyPI,
  ``harness/venvs``); the model's calls the reference server's ``tool_call_plan``, the tools
  async sleeps of the drawn latencies; paired by task; the final outputs must agree.

Full pass only: one task takes 6-15 s on wan (a chat task 10-20 s), so four arms cannot give
the five pairs a p50 needs within the quick pass's share, nor can the two chat arms (the quick
pass has 22 s of its 300 left, one chat pair takes 20-40 s). ``BENCH_AGENTS_TASKS``,
``BENCH_AGENTS_TURNS`` ("6,8", the time and chat parts), ``BENCH_AGENTS_CUT_TASKS``,
``BENCH_AGENTS_CHAT_TASKS``, ``BENCH_AGENTS_RUNNER_TASKS`` and ``BENCH_AGENTS_PARTS`` ("time",
"cut", "chat", "runner") size a run.
"""

from __future__ import annotations

import os
import random
import secrets
import statistics
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .. import agents
from ..harness._scenario import Arm, Context, NotAvailable, Rate, RequestRecord, Row, ScenarioResult

ORDER = 95

TASKS = 12                 # paired tasks per arm (full pass): a p50 from 12 pairs
TURNS = (6, 12)
TOKENS = 64
SYSTEM_WORDS = 2000
RESULT_WORDS = 150
CUT_TASKS = 40             # per side; CUT_SHARE of their sockets cut
CUT_SHARE = 0.05
CUT_TURNS = (2, 4)
# Events of a Responses stream before its first text delta (created, in_progress,
# output_item.added, content_part.added); the reference server writes about 0.85 text deltas per
# output token (53-56 for 64 tokens, counted 2026-12-07), so a cut is drawn over the head and the
# first 3/4 of the tokens' worth of events: always inside the first response, mid-answer.
HEAD_EVENTS = 4
PARTS = ("time", "cut", "chat", "runner")
CHAT_TASKS = 10            # paired chat tasks per arm (full pass): a p50 from 10 pairs
RUNNER_TASKS = 10          # paired openai-agents Runner tasks per arm (full pass)
# A chat tool result's words: the chat loop resends the whole conversation (the calls' JSON too),
# and the suite's profile (h100-8b) has an 8,192-token context window: with 150-word results 14
# of 40 drawn tasks of 6-12 turns overflow it, with 60 the largest last prompt is 7,473 tokens
# (counted 2026-12-07 with the server's tokenizer).
CHAT_RESULT_WORDS = 60
# Hang guard of a cut-part turn (a clean one takes 1-3 s on wan): the official client, reconnected
# after a cut, waits forever for the lost response; past this its task counts as lost.
TURN_DEADLINE_S = 30.0


@dataclass(frozen=True)
class Settings:
    tasks: int
    turns: tuple[int, int]
    cut_tasks: int
    parts: tuple[str, ...]
    chat_tasks: int = CHAT_TASKS
    runner_tasks: int = RUNNER_TASKS


def settings(env: dict[str, str] | None = None) -> Settings:
    """The run's size from the environment (pure); ValueError naming a bad variable."""
    env = dict(os.environ) if env is None else env

    def number(name: str, default: int) -> int:
        raw = env.get(name)
        if raw is None:
            return default
        if not raw.strip().isdigit() or int(raw) < 1:
            raise ValueError(f"{name}={raw!r}: a positive whole number")
        return int(raw)

    turns = TURNS
    if env.get("BENCH_AGENTS_TURNS"):
        lo, _, hi = env["BENCH_AGENTS_TURNS"].partition(",")
        if not (lo.strip().isdigit() and hi.strip().isdigit()) or not 2 <= int(lo) <= int(hi):
            raise ValueError(f"BENCH_AGENTS_TURNS={env['BENCH_AGENTS_TURNS']!r}: 'MIN,MAX' turns, 2 <= MIN <= MAX")
        turns = (int(lo), int(hi))
    parts: tuple[str, ...] = PARTS
    if env.get("BENCH_AGENTS_PARTS"):
        parts = tuple(p.strip() for p in env["BENCH_AGENTS_PARTS"].split(",") if p.strip())
        unknown = sorted(set(parts) - set(PARTS))
        if unknown or not parts:
            raise ValueError(f"BENCH_AGENTS_PARTS: unknown part(s) {unknown}; known: {', '.join(PARTS)}")
    return Settings(number("BENCH_AGENTS_TASKS", TASKS), turns,
                    number("BENCH_AGENTS_CUT_TASKS", CUT_TASKS), parts,
                    number("BENCH_AGENTS_CHAT_TASKS", CHAT_TASKS), number("BENCH_AGENTS_RUNNER_TASKS", RUNNER_TASKS))


def plan_cuts(n: int, share: float, tokens: int, rng: random.Random) -> dict[int, int]:
    """Pure: which of ``n`` tasks get their socket cut, and before which event of the first
    response: exactly ``round(share * n)`` tasks (at least one when ``share`` > 0), in a seeded
    order, each before an event drawn uniformly from the head and the first text deltas (event 1
    on: ``response.created`` has arrived, so the response provably started)."""
    k = max(1, round(share * n)) if share > 0 else 0
    chosen = rng.sample(range(n), k)
    return {i: rng.randint(1, HEAD_EVENTS + tokens * 3 // 4) for i in sorted(chosen)}


def _record(ctx: Context, variant: str, started: float, result: agents.TaskResult | None,
            exc: BaseException | None, extra: dict[str, Any]) -> RequestRecord:
    if result is None:
        return RequestRecord(variant=variant, trace_id="", start_s=started - ctx.epoch,
                             latency_ms=(time.perf_counter() - started) * 1000.0,
                             error_kind=type(exc).__name__ if exc else "lost",
                             extra={"error": str(exc)[:300], **extra})
    return RequestRecord(variant=variant, trace_id="", start_s=started - ctx.epoch,
                         latency_ms=result.task_s * 1000.0, status=200,
                         ttft_ms=statistics.median(result.ttft_ms) if result.ttft_ms else None,
                         extra={"cpu_ms": result.cpu_s * 1000.0, "reload_ms": result.reload_ms,
                                "turns": len(result.ttft_ms), **_chat_extra(result), **extra})


def _chat_extra(result: agents.TaskResult) -> dict[str, Any]:
    if result.arm in agents.RUNNER_ARMS:
        return {"final": result.final}
    if result.arm not in agents.CHAT_ARMS:
        return {}
    return {"tool_head_start_ms": result.early_ms, "tool_wait_ms": result.tool_wait_ms,
            "stream_ms": result.stream_ms, "early_calls": result.early_calls,
            "warmups": result.warmups, "prompt_tokens": result.prompt_tokens,
            "cached_tokens": result.cached_tokens, "final": result.final}


def _one(ctx: Context, client: Any, arm: str, task: agents.Task, variant: str, **kw: Any) -> RequestRecord:
    run = agents.runner(arm)
    started = time.perf_counter()
    try:
        result = run(client, task, arm, TOKENS, **kw)
    except Exception as exc:  # a lost task is counted, not fatal
        return _record(ctx, variant, started, None, exc, {"task_turns": task.turns})
    return _record(ctx, variant, started, result, None, {"task_turns": task.turns})


def _time(ctx: Context, s: Settings, clients: dict[str, Any]) -> dict[str, list[RequestRecord]]:
    arms = list(agents.RESPONSES_ARMS)
    records: dict[str, list[RequestRecord]] = {arm: [] for arm in arms}
    for arm in arms:  # a warm-up task each (connections, imports), not counted
        warm = agents.draw_task(ctx.seed, -1, (2, 2), 50, 10)
        _one(ctx, clients[arm], arm, warm, arm, connect=agents.ws_options(arm, ctx.verify))
    for i in range(s.tasks):
        task = agents.draw_task(ctx.seed + 44, i, s.turns, SYSTEM_WORDS, RESULT_WORDS)
        for arm in (arms if i % 2 == 0 else arms[::-1]):  # neither always goes first
            ctx.progress(f"  agents/time: task {i + 1}/{s.tasks} ({task.turns} turns): {arm}")
            records[arm].append(_one(ctx, clients[arm], arm, task, arm,
                                     connect=agents.ws_options(arm, ctx.verify)))
    return records


def _paired(ctx: Context, part: str, arms: tuple[str, ...], tasks: int, turns: tuple[int, int],
            clients: dict[str, Any]) -> dict[str, list[RequestRecord]]:
    """The chat tasks through two arms, paired by task (the order flipped per task), after a
    warm-up task each (imports, connections) that is not counted."""
    records: dict[str, list[RequestRecord]] = {arm: [] for arm in arms}
    for arm in arms:
        _one(ctx, clients[arm], arm, agents.draw_task(ctx.seed, -1, (2, 2), 50, 10), arm)
    for i in range(tasks):
        task = agents.draw_task(ctx.seed + 44, i, turns, SYSTEM_WORDS, CHAT_RESULT_WORDS)
        for arm in (arms if i % 2 == 0 else arms[::-1]):
            ctx.progress(f"  agents/{part}: task {i + 1}/{tasks} ({task.turns} turns): {arm}")
            records[arm].append(_one(ctx, clients[arm], arm, task, arm))
    return records


def _chat(ctx: Context, s: Settings, clients: dict[str, Any]) -> dict[str, list[RequestRecord]]:
    """The chat-completions tool loop, official against llmclient (warm-up and early tools),
    paired by task as the time part."""
    return _paired(ctx, "chat", agents.CHAT_ARMS, s.chat_tasks, s.turns, clients)


def _runner(ctx: Context, s: Settings) -> dict[str, list[RequestRecord]]:
    """The chat task through openai-agents' ``Runner.run``, the official ``AsyncOpenAI`` against
    llmclient's handed to its ``OpenAIChatCompletionsModel`` (``agents.RunnerProcess``: each arm
    a process of its own in openai-agents' venv), paired by task as the chat part."""
    procs = {arm: agents.RunnerProcess(arm, ctx.base_url, verify=ctx.verify) for arm in agents.RUNNER_ARMS}
    try:
        return _paired(ctx, "runner", agents.RUNNER_ARMS, s.runner_tasks, s.turns, procs)
    finally:
        for proc in procs.values():
            proc.close()


def chat_split(records: dict[str, list[RequestRecord]]) -> dict[str, dict[str, float]]:
    """Per chat arm, medians over its finished tasks (pure): the streams' time (each turn's
    request to its stream's end, summed per task), the median TTFT, the tools' head start (each
    tool's start before its stream ended, summed per task), the wait from each stream's end to
    its turn's last tool result (summed per task), warm-ups sent per task, and the share of
    prompt tokens the server found cached (its usage). Streams plus tool waits are the task
    time but the app's own work, so a gain splits into the two."""
    out: dict[str, dict[str, float]] = {}
    for arm in agents.CHAT_ARMS:
        ok = [r for r in records.get(arm, []) if r.ok]
        if not ok:
            continue
        out[arm] = {
            "tool_head_start_ms": statistics.median(r.extra["tool_head_start_ms"] for r in ok),
            "tool_wait_ms": statistics.median(r.extra["tool_wait_ms"] for r in ok),
            "stream_ms": statistics.median(r.extra.get("stream_ms", 0.0) for r in ok),
            "ttft_ms": statistics.median(r.ttft_ms for r in ok if r.ttft_ms is not None),
            "warmups": statistics.median(r.extra["warmups"] for r in ok),
            "cached_share": sum(r.extra["cached_tokens"] for r in ok) / max(1, sum(r.extra["prompt_tokens"] for r in ok)),
        }
    return out


def different_finals(records: dict[str, list[RequestRecord]], pair: tuple[str, str] = agents.CHAT_ARMS) -> int:
    """Paired tasks whose final messages differ between the two arms of ``pair`` (the chat
    arms, or the Runner arms; pure; both finished)."""
    pairs = zip(records.get(pair[0], []), records.get(pair[1], []), strict=False)
    return sum(a.ok and b.ok and a.extra.get("final") != b.extra.get("final") for a, b in pairs)


def _cut(ctx: Context, s: Settings) -> dict[str, list[RequestRecord]]:
    server = ctx.spawn_fault_server("the cut part")
    try:
        with ctx.routed(server) as url:
            verify = server.ca_path or ctx.verify
            clients = {arm: agents.make_client(arm, url, verify, ctx.api_key)
                       for arm in ("official-ws", "llmclient-ws")}
            try:
                return _cut_tasks(ctx, s, clients, verify)
            finally:
                for client in clients.values():
                    client.close()
    finally:
        server.stop()


def _cut_tasks(ctx: Context, s: Settings, clients: dict[str, Any], verify: str | bool) -> dict[str, list[RequestRecord]]:
    cuts = plan_cuts(s.cut_tasks, CUT_SHARE, TOKENS, random.Random(ctx.seed + 95))
    records: dict[str, list[RequestRecord]] = {"official-ws/cut": [], "llmclient-ws/cut": []}
    for i in range(s.cut_tasks):
        task = agents.draw_task(ctx.seed + 95, i, CUT_TURNS, SYSTEM_WORDS // 4, RESULT_WORDS // 3)
        for arm in (("official-ws", "llmclient-ws") if i % 2 == 0 else ("llmclient-ws", "official-ws")):
            ctx.progress(f"  agents/cut: task {i + 1}/{s.cut_tasks}: {arm}")
            connect = dict(agents.ws_options(arm, verify))
            if i in cuts:  # a token of its own per copy: each side's socket is cut once
                connect["extra_headers"] = {"x-fault": f"cut_after={cuts[i]};once={secrets.token_hex(8)}"}
            reconnects: list[int] = []
            # both clients call it before each new socket: the proof that a cut fired (and the
            # official client reconnects only when it is set)
            connect["on_reconnecting"] = lambda event, seen=reconnects: seen.append(event.close_code)
            if arm.startswith("llmclient"):
                connect["initial_delay"] = 0.05
            rec = _one(ctx, clients[arm], arm, task, f"{arm}/cut", store=True, connect=connect,
                       turn_deadline_s=TURN_DEADLINE_S)
            rec.extra.update(cut_after=cuts.get(i), reconnects=len(reconnects))
            records[f"{arm}/cut"].append(rec)
    fired = sum(r.extra["reconnects"] > 0 or not r.ok for r in records["official-ws/cut"] if r.extra["cut_after"])
    if cuts and not fired:
        raise NotAvailable("no planned socket cut fired (the server did not honour x-fault)")
    return records


def lost_tasks(records: list[RequestRecord]) -> tuple[int, int, int]:
    """(tasks lost, tasks, sockets cut) of one side of the cut part (pure)."""
    return (sum(not r.ok for r in records), len(records),
            sum(r.extra.get("cut_after") is not None for r in records))


def reconnected(records: list[RequestRecord]) -> int:
    """Tasks whose client opened a new socket (a cut that fired, seen by the client; pure)."""
    return sum(bool(r.extra.get("reconnects")) for r in records)


class Agents:
    name = "agents"
    description = ("Responses tool loops (6-12 turns, 1-4 tools of 50-800 ms a turn): task time, official "
                   "client vs llmclient over HTTP and the WebSocket mode; tasks lost with 5% of sockets cut; "
                   "a chat-completions tool loop with warm-ups and early tools")
    requires = ("llmclient", "openai", "reference_server", "faults")
    quick = False
    full_adds = ("agent tasks: task time p50 of 4 arms (12 paired tasks each), tasks lost with "
                 "5% of WebSocket sockets cut mid-response, and a chat tool loop's task time (10 pairs)")

    def run(self, ctx: Context) -> ScenarioResult:
        s = settings()
        if {"time", "cut"} & set(s.parts):
            try:
                import websockets  # noqa: F401
            except ImportError as exc:
                raise NotAvailable("the websockets package is not installed (pip install 'llmclient[ws]')") from exc
        api_key = ctx.api_key
        wanted = (agents.RESPONSES_ARMS if "time" in s.parts else ()) + (agents.CHAT_ARMS if "chat" in s.parts else ())
        clients = {arm: agents.make_client(arm, ctx.base_url, ctx.verify, api_key) for arm in wanted}
        variants: dict[str, list[RequestRecord]] = {}
        skipped: list[str] = []
        try:
            if "time" in s.parts:
                variants.update(_time(ctx, s, clients))
            if "cut" in s.parts:
                variants.update(_cut(ctx, s))
            if "chat" in s.parts:
                variants.update(_chat(ctx, s, clients))
            if "runner" in s.parts:
                try:
                    variants.update(_runner(ctx, s))
                except (OSError, subprocess.SubprocessError) as exc:  # its venv could not be made
                    if s.parts == ("runner",):
                        raise NotAvailable(f"openai-agents' venv could not be made: {exc}") from exc
                    skipped.append(f"runner part skipped: openai-agents' venv could not be made ({exc})")
        finally:
            for client in clients.values():
                client.close()
        rows: list[Row | Rate] = []
        notes = [f"network {ctx.network}; max_output_tokens {TOKENS}; system prompt {SYSTEM_WORDS} words "
                 f"every turn; tool results {RESULT_WORDS} words each"]
        series: dict[str, Any] = {}
        if "time" in s.parts:
            reload = {arm: statistics.median(r.extra["reload_ms"] for r in recs if r.ok)
                      for arm, recs in variants.items() if arm in agents.ARMS and any(r.ok for r in recs)}
            cpu = {arm: statistics.median(r.extra["cpu_ms"] for r in recs if r.ok)
                   for arm, recs in variants.items() if arm in agents.ARMS and any(r.ok for r in recs)}
            series.update({"reload_per_task_ms": reload, "cpu_per_task_ms": cpu})
            context = ("the server's modelled reload per task (a documented figure, not measured work): "
                       + ", ".join(f"{a} {v:.0f} ms" for a, v in reload.items()))
            for stat in ("p50", "p95"):
                rows += [
                    Row(f"agents: task time {stat}, official HTTP -> llmclient WebSocket mode",
                        "official-http", "llmclient-ws/app", statistic=stat, context=context,
                        technique=f"agents: WebSocket mode vs official HTTP, task {stat}"),
                    Row(f"agents: task time {stat}, official WebSocket mode -> llmclient's",
                        "official-ws", "llmclient-ws", statistic=stat, context=context,
                        technique=f"agents: WebSocket mode vs official WebSocket mode, task {stat}"),
                    Row(f"agents: task time {stat}, official HTTP -> llmclient HTTP",
                        "official-http", "llmclient-http", statistic=stat,
                        technique=f"agents: llmclient HTTP vs official HTTP, task {stat}"),
                ]
            notes.append(f"{s.tasks} tasks of {s.turns[0]}-{s.turns[1]} turns, each through every arm in turn; "
                         "client CPU per task (median): " + ", ".join(f"{a} {v:.0f} ms" for a, v in cpu.items()))
        if "cut" in s.parts:
            theirs, ours = variants["official-ws/cut"], variants["llmclient-ws/cut"]
            lb, nb, cb = lost_tasks(theirs)
            lc, nc, cc = lost_tasks(ours)
            series["cut"] = {"official-ws": {"lost": lb, "tasks": nb, "cut": cb, "reconnected": reconnected(theirs)},
                             "llmclient-ws": {"lost": lc, "tasks": nc, "cut": cc, "reconnected": reconnected(ours)}}
            rows.append(Rate(f"agents: tasks finished with {CUT_SHARE:.0%} of sockets cut mid-response, "
                             "official WebSocket mode -> llmclient's",
                             "official-ws/cut", "llmclient-ws/cut", event="task finished",
                             count=lambda r: r.ok, technique="agents: tasks finished with sockets cut",
                             context=f"lost: official {lb} of {nb} ({cb} cut, {reconnected(theirs)} reconnected), "
                                     f"llmclient {lc} of {nc} ({cc} cut, {reconnected(ours)} reconnected)"))
            notes.append(f"cut part: {s.cut_tasks} tasks of {CUT_TURNS[0]}-{CUT_TURNS[1]} turns a side, store=True, "
                         f"{cb} sockets cut before a drawn event of their first response (x-fault cut_after, "
                         "close 1011) on a server of its own that honours x-fault; both clients with "
                         "on_reconnecting set (the official client reconnects only then)")
        if "chat" in s.parts:
            split = chat_split(variants)
            series["chat"] = split
            differ = different_finals(variants)
            context = "; ".join(
                f"{a}: streams {v['stream_ms']:.0f} ms/task (TTFT {v['ttft_ms']:.0f} ms), tools' head start "
                f"{v['tool_head_start_ms']:.0f} ms/task, tool wait after the streams "
                f"{v['tool_wait_ms']:.0f} ms/task, warm-ups {v['warmups']:.1f}/task, cached prompt share "
                f"{v['cached_share']:.2f}" for a, v in split.items())
            for stat in ("p50", "p95"):
                rows.append(Row(f"agents: chat tool loop task time {stat}, official -> llmclient "
                                "(next turn warmed, tools started early)", "official-chat", "llmclient-chat",
                                statistic=stat, context=context,
                                technique=f"agents: chat tool loop with warm-ups and early tools, task {stat}"))
            rows.append(Row("agents: chat tool loop TTFT (a task's median turn), official -> llmclient "
                            "(next turn warmed)", "official-chat", "llmclient-chat", metric="ttft_ms",
                            context=context, technique="agents: chat tool loop TTFT with warm-ups"))
            cpu = {a: statistics.median(r.extra["cpu_ms"] for r in variants[a] if r.ok)
                   for a in agents.CHAT_ARMS if any(r.ok for r in variants[a])}
            notes.append(f"chat part: {s.chat_tasks} tasks of {s.turns[0]}-{s.turns[1]} turns, each through both "
                         f"arms in turn, tool results of {CHAT_RESULT_WORDS} words; tool-call turns ask the reference server for the drawn calls "
                         f"(n_tool_calls, {agents.CALL_TOKENS} argument tokens each, written at its token rate); "
                         f"final messages that differ between the arms: {differ}; client CPU per task (median): "
                         + ", ".join(f"{a} {v:.0f} ms" for a, v in cpu.items()))
        if "official-runner" in variants:
            differ = different_finals(variants, agents.RUNNER_ARMS)
            cpu = {a: statistics.median(r.extra["cpu_ms"] for r in variants[a] if r.ok)
                   for a in agents.RUNNER_ARMS if any(r.ok for r in variants[a])}
            for stat in ("p50", "p95"):
                rows.append(Row(f"agents: openai-agents Runner task time {stat}, official client -> llmclient's",
                                "official-runner", "llmclient-runner", statistic=stat,
                                technique=f"agents: openai-agents Runner with llmclient's client, task {stat}"))
            notes.append(f"runner part: {s.runner_tasks} chat tasks of {s.turns[0]}-{s.turns[1]} turns through "
                         "openai-agents' Runner.run (OpenAIChatCompletionsModel handed each client; its own venv "
                         "and openai), the calls the server's tool_call_plan; final outputs that differ between "
                         f"the arms: {differ}; client CPU per task (median, the Runner's included): "
                         + ", ".join(f"{a} {v:.0f} ms" for a, v in cpu.items()))
        notes += skipped
        if "llmclient-ws" in variants:
            # the same tasks, as an app change: moving the loop from HTTP calls to the WebSocket
            # mode (against the official HTTP arm); against the official WebSocket arm a drop-in
            variants["llmclient-ws/app"] = variants["llmclient-ws"]
        arms = {"official-http": Arm("openai"), "official-ws": Arm("openai"),
                "llmclient-http": Arm("llmclient"), "llmclient-ws": Arm("llmclient"),
                "llmclient-ws/app": Arm("llmclient", {"responses.connect()": "the tool loop on the WebSocket mode"}),
                "official-ws/cut": Arm("openai"), "llmclient-ws/cut": Arm("llmclient"),
                "official-chat": Arm("openai"),
                "official-runner": Arm("openai", {"openai-agents": "Runner.run"}),
                "llmclient-runner": Arm("llmclient", {"openai-agents": "Runner.run"}),
                "llmclient-chat": Arm("llmclient", {"prefetch": "prefix",
                                                    "stream.tool_calls()": "each tool started when its call is complete"})}
        return ScenarioResult.of(self, variants, rows=rows, notes=notes, series=series, arms=arms)


SCENARIOS = (Agents(),)
