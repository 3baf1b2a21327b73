"""A new conversation over the Responses WebSocket mode: from ``connect()`` to its answer.

Agents open a ``client.responses.connect()`` per task or per run. The official client opens a new
socket for each (TCP, TLS and the WebSocket upgrade: three round trips of the emulated network
before the first ``response.create`` goes out). llmclient keeps the socket a conversation leaves
with nothing in flight for the client's next conversation with the same handshake (URL, query,
headers: ``layers/ws_mode.py`` ``Park``), so that one starts at once.

Three arms, one conversation each in turn (the order flipped every round, a warm-up round
dropped), each conversation ``connect()``, one short response (``store=False``, 16 tokens), the
end of its ``with`` block:

* ``official``: ``openai.OpenAI(...).responses.connect()``, a socket per conversation;
* ``llmclient/own-socket``: llmclient with ``connect(reuse=False)``, a socket per conversation
  as the official client opens (what the kept socket alone saves: this arm against the next);
* ``llmclient``: llmclient's default.

``latency_ms`` is ``connect()`` to the response's terminal event, ``ttft_ms`` to its first text
delta. The note says how many of llmclient's conversations took the kept socket (each
connection's ``reused``). A conversation that fails (an error event, events that end early, a
handshake that never answers: the official client's hung once for about 70 s in 8 suite runs
here, about 1 in 200 of its handshakes, and did not in 900 conversations run alone) is
counted as that arm's failure; ``DEADLINE_S`` guards a conversation once it is open.
``BENCH_WSSTART_ROUNDS`` sizes a run (8 in the quick pass, 40 in the full one).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from .. import agents
from ..harness._scenario import Arm, Context, NotAvailable, RequestRecord, Row, ScenarioResult

ORDER = 96

ARMS = ("official", "llmclient/own-socket", "llmclient")
TOKENS = 16  # the Responses API's least max_output_tokens: the answer costs little beside the set-up
QUICK_ROUNDS, FULL_ROUNDS = 8, 40
ANSWERS = ("response.completed", "response.incomplete")
DEADLINE_S = 30.0  # a hang guard per conversation: one takes well under a second on wan


def rounds_of(env: Mapping[str, str], quick: bool) -> int:
    """Rounds to run: ``BENCH_WSSTART_ROUNDS``, else the pass's default (pure)."""
    raw = env.get("BENCH_WSSTART_ROUNDS")
    if raw is None:
        return QUICK_ROUNDS if quick else FULL_ROUNDS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"BENCH_WSSTART_ROUNDS={raw!r}: a whole number of rounds, at least 1")
    return int(raw)


def conversation(client: Any, connect: dict[str, Any], model: str,
                 deadline_s: float = DEADLINE_S) -> tuple[float, float | None, bool]:
    """One conversation: (ms to the terminal event, ms to the first text delta, socket reused).
    An ``error`` event or events that end without a terminal one raise RuntimeError; past
    ``deadline_s`` (a hang guard) the connection is closed, so its events end that way."""
    t0 = time.perf_counter()
    with client.responses.connect(**connect) as conn:
        guard = threading.Timer(deadline_s, agents._close_quietly, (conn,))
        guard.daemon = True
        guard.start()
        try:
            return _answer(conn, model, t0)
        finally:
            guard.cancel()


def _answer(conn: Any, model: str, t0: float) -> tuple[float, float | None, bool]:
    first = None
    conn.response.create(model=model, input="Say hello.", max_output_tokens=TOKENS, store=False)
    for ev in conn:
        if first is None and ev.type == "response.output_text.delta":
            first = time.perf_counter()
        if ev.type in ANSWERS:
            done = time.perf_counter()
            break
        if ev.type in ("error", "response.failed"):
            raise RuntimeError(f"the server answered {ev.type}: {ev}")
    else:
        raise RuntimeError("the socket's events ended without a terminal event")
    reused = bool(getattr(conn, "reused", False))  # the official connection has no such thing
    return (done - t0) * 1000.0, None if first is None else (first - t0) * 1000.0, reused


def _record(ctx: Context, variant: str, started: float, out: tuple[float, float | None, bool] | None,
            exc: BaseException | None) -> RequestRecord:
    if out is None:
        return RequestRecord(variant=variant, trace_id="", start_s=started - ctx.epoch,
                             latency_ms=(time.perf_counter() - started) * 1000.0,
                             error_kind=type(exc).__name__, extra={"error": str(exc)[:300]})
    latency, ttft, reused = out
    return RequestRecord(variant=variant, trace_id="", start_s=started - ctx.epoch, latency_ms=latency,
                         status=200, ttft_ms=ttft, extra={"reused": reused})


class WsStart:
    name = "wsstart"
    apis = ("openai",)
    description = ("a new Responses WebSocket conversation, connect() to its answer: the official client "
                   "(a socket each) vs llmclient (the socket the previous conversation left)")
    requires = ("llmclient", "openai")
    quick_s = 14  # measured: 8 rounds of 3 conversations of ~0.3-0.55 s over wan, a warm-up round

    def run(self, ctx: Context) -> ScenarioResult:
        try:
            import websockets  # noqa: F401
        except ImportError as exc:
            raise NotAvailable("the websockets package is not installed (pip install 'llmclient[ws]')") from exc
        rounds = rounds_of(os.environ, ctx.quick)
        official = agents.make_client("official-ws", ctx.base_url, ctx.verify, ctx.api_key)
        ours = agents.make_client("llmclient-ws", ctx.base_url, ctx.verify, ctx.api_key)
        clients = {"official": official, "llmclient/own-socket": ours, "llmclient": ours}
        connect = {"official": agents.ws_options("official-ws", ctx.verify),
                   "llmclient/own-socket": {"reuse": False}, "llmclient": {}}
        records: dict[str, list[RequestRecord]] = {arm: [] for arm in ARMS}
        try:
            try:  # the warm-up round (imports, the first socket), and the check the server speaks the mode
                for arm in ARMS:
                    conversation(clients[arm], connect[arm], ctx.model)
            except Exception as exc:
                raise NotAvailable(f"the server does not serve the Responses WebSocket mode at "
                                   f"{ctx.base_url}/responses: {type(exc).__name__}: {exc}") from exc
            ctx.progress(f"  wsstart: {rounds} rounds of {len(ARMS)} conversations")
            for i in range(rounds):
                for arm in (ARMS if i % 2 == 0 else ARMS[::-1]):
                    started = time.perf_counter()
                    try:
                        out = conversation(clients[arm], connect[arm], ctx.model)
                    except Exception as exc:  # counted as a failure, not fatal
                        records[arm].append(_record(ctx, arm, started, None, exc))
                    else:
                        records[arm].append(_record(ctx, arm, started, out, None))
        finally:
            official.close()
            ours.close()
        reused = sum(bool(r.extra.get("reused")) for r in records["llmclient"])
        rows = [
            Row("wsstart: a new WebSocket conversation, official -> llmclient", "official", "llmclient",
                technique="the client's kept WebSocket for its next conversation"),
            Row("wsstart: a new WebSocket conversation (TTFT), official -> llmclient", "official", "llmclient",
                metric="ttft_ms", technique="the client's kept WebSocket for its next conversation, TTFT"),
            Row("wsstart: a socket per conversation -> the kept socket (llmclient both)", "llmclient/own-socket",
                "llmclient", technique="the kept WebSocket alone (llmclient reuse=False against the default)"),
        ]
        notes = [f"network {ctx.network}; {rounds} rounds of one conversation per arm (connect(), one "
                 f"{TOKENS}-token response with store=False, the end of the with block), the order flipped "
                 f"each round, a warm-up round dropped; llmclient took the kept socket in {reused} of "
                 f"{len(records['llmclient'])} conversations"]
        if "tls" not in ctx.capabilities:
            notes.append("server without TLS: a new socket's handshake is one round trip shorter than on wss://")
        arms = {"official": Arm("openai"),
                "llmclient/own-socket": Arm("llmclient", {"responses.connect(reuse=False)": "a socket per conversation"}),
                "llmclient": Arm("llmclient")}
        return ScenarioResult.of(self, records, rows=rows, notes=notes, series={"reused": reused}, arms=arms)


SCENARIOS = (WsStart(),)
