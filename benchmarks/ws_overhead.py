"""Client CPU per received event on the Responses WebSocket mode: llmclient's WebSocket
transport against the official client's ``client.responses.connect()``, and permessage-deflate
on and off.

    python -m benchmarks.ws_overhead                       # starts the reference server (hypercorn)
    python -m benchmarks.ws_overhead --responses 20 --tokens 400 --rounds 5

Every client kind runs in its own worker process against the same local reference server
(profile zero: no model time, so the stream runs as fast as the client reads), the kinds taking
turns over ``--rounds`` rounds (medians reported); CPU is the worker's ``time.process_time()``
(every thread of the client, nothing of the server) over the events received. Kinds:

* ``official-raw`` / ``official-async-raw``: the official client's ``conn.recv_bytes()``, the
  socket alone (``websockets``' sync client with its reading thread, or its asyncio client);
* ``official`` / ``official-async``: ``conn.recv()``, what an app iterates (each event parsed
  into the official pydantic types);
* ``llmclient-raw`` / ``llmclient-async-raw``: llmclient's transport, ``recv()`` bytes;
* ``llmclient-json`` / ``llmclient-async-json``: the same plus ``orjson.loads`` per event;
* ``llmclient-deflate`` / ``llmclient-async-deflate``: ``-raw`` with permessage-deflate
  negotiated (hypercorn offers it; granian does not), with the bytes received per event;
* ``llmclient-connect`` / ``llmclient-async-connect``: llmclient's ``client.responses.connect()``,
  ``conn.recv()`` (each event parsed into the official types, with llmclient's demux, timings
  and recovery bookkeeping), what an app iterates: the drop-in's figure against ``official``;
* ``llmclient-connect-raw`` / ``llmclient-async-connect-raw``: the same face's ``recv_bytes()``.

Ratios: llmclient's transport over the official socket (``-raw`` over ``official-raw``), and
the transport with a JSON parse over the official client's parsed events. Deflate's verdict
is the link speed below which the bytes it saves take longer to send than the CPU it costs
to inflate (``break_even_mbit_s``). The server's own deflate CPU is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

KINDS = ("official-raw", "official", "official-async-raw", "official-async",
         "llmclient-raw", "llmclient-json", "llmclient-async-raw", "llmclient-async-json",
         "llmclient-deflate", "llmclient-async-deflate",
         "llmclient-connect", "llmclient-async-connect", "llmclient-connect-raw", "llmclient-async-connect-raw")
ROOT = Path(__file__).resolve().parents[1]
TERMINAL = (b'"response.completed"', b'"response.incomplete"', b'"response.failed"')


def _create(tokens: int) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "input": "Tell me a long story about the sea.",
            "max_output_tokens": tokens, "store": False}


def _done(data: bytes) -> bool:
    head = data[:40]
    return any(t in head for t in TERMINAL) or b'"error"' in head


def _official_sync(base_url: str, raw: bool, responses: int, tokens: int, lib: str = "official") -> dict[str, Any]:
    import openai

    import llmclient

    client: Any = (openai.OpenAI if lib == "official" else llmclient.OpenAI)(base_url=base_url, api_key="k")
    with client.responses.connect() as conn:
        def one() -> int:
            conn.response.create(**_create(tokens))
            n = 0
            while True:
                n += 1
                if raw:
                    if _done(conn.recv_bytes()):
                        return n
                elif conn.recv().type in ("response.completed", "response.incomplete", "error"):
                    return n
        one()  # warm-up
        cpu0 = time.process_time()
        events = sum(one() for _ in range(responses))
        cpu = time.process_time() - cpu0
    client.close()
    return {"events": events, "cpu_s": cpu}


async def _official_async(base_url: str, raw: bool, responses: int, tokens: int,
                          lib: str = "official") -> dict[str, Any]:
    import openai

    import llmclient

    client: Any = (openai.AsyncOpenAI if lib == "official" else llmclient.AsyncOpenAI)(base_url=base_url, api_key="k")
    async with client.responses.connect() as conn:
        async def one() -> int:
            await conn.response.create(**_create(tokens))
            n = 0
            while True:
                n += 1
                if raw:
                    if _done(await conn.recv_bytes()):
                        return n
                elif (await conn.recv()).type in ("response.completed", "response.incomplete", "error"):
                    return n
        await one()
        cpu0 = time.process_time()
        events = 0
        for _ in range(responses):
            events += await one()
        cpu = time.process_time() - cpu0
    await client.close()
    return {"events": events, "cpu_s": cpu}


def _ours_sync(ws_url: str, parse: bool, deflate: bool, responses: int, tokens: int) -> dict[str, Any]:
    import orjson

    from llmclient.transport.websocket import WebSocketOptions, connect_sync

    opts = WebSocketOptions(headers=(("Authorization", "Bearer k"),),
                            compression="deflate" if deflate else None)
    ws = connect_sync(ws_url, opts)
    body = orjson.dumps({"type": "response.create", **_create(tokens)})

    def one() -> int:
        ws.send_text(body)
        n = 0
        while True:
            data = ws.recv()
            n += 1
            if parse:
                orjson.loads(data)
            if _done(data):
                return n

    one()
    received0 = ws.bytes_received
    cpu0 = time.process_time()
    events = sum(one() for _ in range(responses))
    cpu = time.process_time() - cpu0
    out = {"events": events, "cpu_s": cpu, "bytes": ws.bytes_received - received0,
           "extensions": list(ws.extensions)}
    ws.close()
    return out


async def _ours_async(ws_url: str, parse: bool, deflate: bool, responses: int, tokens: int) -> dict[str, Any]:
    import orjson

    from llmclient.transport.websocket import WebSocketOptions, connect_async

    opts = WebSocketOptions(headers=(("Authorization", "Bearer k"),),
                            compression="deflate" if deflate else None)
    ws = await connect_async(ws_url, opts)
    body = orjson.dumps({"type": "response.create", **_create(tokens)})

    async def one() -> int:
        await ws.send_text(body)
        n = 0
        while True:
            data = await ws.recv()
            n += 1
            if parse:
                orjson.loads(data)
            if _done(data):
                return n

    await one()
    received0 = ws.bytes_received
    cpu0 = time.process_time()
    events = 0
    for _ in range(responses):
        events += await one()
    cpu = time.process_time() - cpu0
    out = {"events": events, "cpu_s": cpu, "bytes": ws.bytes_received - received0,
           "extensions": list(ws.extensions)}
    await ws.close()
    return out


def worker(kind: str, base_url: str, responses: int, tokens: int) -> dict[str, Any]:
    ws_url = base_url.replace("http", "ws", 1) + "/responses"
    if kind.startswith("official") or "-connect" in kind:
        # the same app code through either client's connect(): only the client differs
        raw, lib = kind.endswith("-raw"), kind.split("-")[0]
        if "async" in kind:
            out = asyncio.run(_official_async(base_url, raw, responses, tokens, lib))
        else:
            out = _official_sync(base_url, raw, responses, tokens, lib)
    else:
        parse, deflate = kind.endswith("-json"), kind.endswith("-deflate")
        if "async" in kind:
            out = asyncio.run(_ours_async(ws_url, parse, deflate, responses, tokens))
        else:
            out = _ours_sync(ws_url, parse, deflate, responses, tokens)
    out["us_per_event"] = out["cpu_s"] / out["events"] * 1e6
    if "bytes" in out:
        out["bytes_per_event"] = out["bytes"] / out["events"]
    return out


def run_worker(kind: str, base_url: str, responses: int, tokens: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.ws_overhead", "--worker", kind, "--url", base_url,
           "--responses", str(responses), "--tokens", str(tokens)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {kind} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def summarize(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Medians per kind over rounds, the ratios and deflate's break-even link speed (pure)."""
    kinds = rounds[0].keys()
    med = {k: {"us_per_event": statistics.median(r[k]["us_per_event"] for r in rounds)} for k in kinds}
    for k in kinds:
        if "bytes_per_event" in rounds[0][k]:
            med[k]["bytes_per_event"] = statistics.median(r[k]["bytes_per_event"] for r in rounds)
    ratios: dict[str, float] = {}
    pairs = {"transport_sync": ("llmclient-raw", "official-raw"),
             "transport_async": ("llmclient-async-raw", "official-async-raw"),
             "parsed_sync": ("llmclient-json", "official"),
             "parsed_async": ("llmclient-async-json", "official-async"),
             # the drop-in face, event for event: llmclient's connect() over the official one's
             "connect_sync": ("llmclient-connect", "official"),
             "connect_async": ("llmclient-async-connect", "official-async"),
             "connect_raw_sync": ("llmclient-connect-raw", "official-raw"),
             "connect_raw_async": ("llmclient-async-connect-raw", "official-async-raw")}
    for name, (ours, theirs) in pairs.items():
        if ours in med and theirs in med:
            ratios[name] = med[ours]["us_per_event"] / med[theirs]["us_per_event"]
    deflate: dict[str, Any] = {}
    for plain, packed in (("llmclient-raw", "llmclient-deflate"),
                          ("llmclient-async-raw", "llmclient-async-deflate")):
        if plain in med and packed in med and "bytes_per_event" in med[packed]:
            extra_us = med[packed]["us_per_event"] - med[plain]["us_per_event"]
            saved = med[plain]["bytes_per_event"] - med[packed]["bytes_per_event"]
            deflate[packed] = {
                "extra_cpu_us_per_event": extra_us, "bytes_saved_per_event": saved,
                "wire_ratio": med[packed]["bytes_per_event"] / med[plain]["bytes_per_event"],
                # below this link speed the bytes saved take longer to send than the inflating
                "break_even_mbit_s": (saved * 8 / extra_us) if extra_us > 0 else None}
    return {"kinds": med, "ratios": ratios, "deflate": deflate}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="base URL of a running reference server (default: start one)")
    p.add_argument("--server", default="hypercorn", choices=("granian", "hypercorn", "uvicorn"),
                   help="the started server's HTTP server (hypercorn and uvicorn offer deflate)")
    p.add_argument("--responses", type=int, default=20, help="responses per worker (after one warm-up)")
    p.add_argument("--tokens", type=int, default=300, help="output tokens (delta events) per response")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", default=str(ROOT / "results" / "ws_overhead.json"))
    p.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.url, args.responses, args.tokens)))
        return 0
    kinds = args.kinds.split(",")
    server = None
    if args.url:
        base_url = args.url.rstrip("/")
    else:
        from .harness.serverproc import start_server

        server = start_server(profile="zero", extra_args=("--server", args.server))
        base_url = server.base_url
    rounds: list[dict[str, dict[str, Any]]] = []
    try:
        for r in range(args.rounds):
            # kinds take turns (AB AB AB): load from other processes hits each alike
            this = {}
            for kind in kinds:
                print(f"round {r + 1}/{args.rounds}: {kind} ...", file=sys.stderr, flush=True)
                this[kind] = run_worker(kind, base_url, args.responses, args.tokens)
            rounds.append(this)
    finally:
        if server is not None:
            server.stop()
    summary = summarize(rounds)
    for kind, row in summary["kinds"].items():
        extra = f"  {row['bytes_per_event']:7.1f} B/event" if "bytes_per_event" in row else ""
        print(f"{kind:<26} {row['us_per_event']:8.2f} us CPU/event{extra}")
    for name, value in summary["ratios"].items():
        print(f"ratio {name:<20} {value:6.3f}")
    for kind, d in summary["deflate"].items():
        be = d["break_even_mbit_s"]
        print(f"{kind}: {d['extra_cpu_us_per_event']:+.2f} us/event, {d['bytes_saved_per_event']:.1f} B "
              f"saved/event (wire x{d['wire_ratio']:.2f}); pays below "
              f"{'(never costs more)' if be is None else f'{be:.1f} Mbit/s'}")
    result = {"server": args.server if server is not None else None, "cpu_count": os.cpu_count(),
              "python": sys.version.split()[0], "settings": vars(args) | {"out": None},
              "rounds": rounds, **summary,
              "note": "CPU = worker process CPU time (all its threads) / events received; the "
                      "server is another process. Shared machine: other jobs were running."}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
