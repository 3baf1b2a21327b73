"""``python -m benchmarks.server``: run the reference server.

Prints ``CA <path>`` (with ``--tls`` and a generated certificate) and then exactly one
``READY http(s)://HOST:PORT`` line on stdout once listening; logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import continuation, limits, ratelimit, shutdown, tracing, ws_responses
from ._http import configure_logging
from .app import App, AppConfig
from .engine import ENGINES, Engine, create_engine, load_profile
from .engine.scheduler import POLICIES
from .faults import FaultInjector, FaultSpecError, parse_fault_list
from .serve import ServeOptions, serve
from .tls import TlsSetupError, generate_certs


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--tls", action="store_true", help="HTTPS (ALPN h2 + http/1.1)")
    p.add_argument("--cert", type=Path, help="server certificate chain (PEM); generated if absent")
    p.add_argument("--key", type=Path, help="server private key (PEM)")
    p.add_argument("--cert-dir", type=Path, help="where generated certificates go (default: a temp dir)")
    p.add_argument("--http1-only", action="store_true", help="speak HTTP/1.1 only")
    p.add_argument("--profile", default="h100-8b", help="engine profile name or JSON path")
    p.add_argument("--engine", default="sim",
                   help="sim | torch | module:factory (a callable taking the profile name)")
    p.add_argument("--cold-start-s", type=float,
                   help="sim engine: override the profile's model load time (seconds)")
    p.add_argument("--kv-blocks", type=int, metavar="N",
                   help="sim engine: KV cache blocks instead of the profile's (as vLLM's "
                        "--num-gpu-blocks-override): a smaller cache to model more sessions than "
                        "one replica holds; the profile's cost figures are unchanged")
    p.add_argument("--served-model-name", action="append", default=[], metavar="NAME",
                   help="the chat model id(s) served instead of the engine's own and the OpenAI "
                        "aliases, as vLLM's flag; /v1/models lists each with root = the engine's model "
                        "(repeatable)")
    p.add_argument("--no-server-timing", action="store_true",
                   help="send no Server-Timing (no header, no closing SSE comment), as vLLM, SGLang "
                        "and llama.cpp send none")
    p.add_argument("--faults", default="", help="run-wide faults, e.g. 'status=503;prob=0.05'")
    p.add_argument("--fault-seed", type=int, default=0, help="seed of the fault RNG")
    p.add_argument("--allow-fault-headers", action="store_true",
                   help="honour a request's x-fault header (off: any client could inject faults)")
    p.add_argument("--api-key", help="require 'Authorization: Bearer <key>' on /v1 routes (on Anthropic's "
                                     "Messages routes 'x-api-key: <key>', or the same Bearer header)")
    p.add_argument("--server", default="granian", choices=("granian", "hypercorn", "uvicorn"),
                   help="HTTP server: granian (HTTP/1.1 + HTTP/2), hypercorn (HTTP/1.1 + HTTP/2), "
                        "uvicorn (HTTP/1.1 only, as vLLM and SGLang serve)")
    p.add_argument("--uvicorn-http", default="h11", choices=("h11", "httptools"),
                   help="uvicorn's HTTP/1.1 parser: h11, or httptools, which uvicorn[standard] "
                        "installs and so vLLM and SGLang run on")
    p.add_argument("--keep-alive-s", type=float, default=None, metavar="S",
                   help="close a connection idle for S seconds (hypercorn, uvicorn; default: an hour). "
                        "uvicorn --keep-alive-s 1 closes idle connections every second, as a busy "
                        "deployment's short keep-alive does")
    p.add_argument("--loop", default="auto", choices=("auto", "asyncio", "uvloop"),
                   help="event loop; auto = uvloop when installed (less CPU per request)")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--no-compress", action="store_true",
                   help="never compress response bodies (by default: 1 KiB and more, with the "
                        "best coding the request's Accept-Encoding lists)")
    p.add_argument("--access-log", action="store_true",
                   help="one log line per request (status, ms, Server-Timing, request id, "
                        "traceparent) on stderr")
    p.add_argument("--trace-spans", type=Path, metavar="PATH",
                   help="write a span per request (continuing its traceparent; queue, prefill, "
                        "decode, image-decode children) to PATH as JSON lines; needs opentelemetry-sdk")
    p.add_argument("--otlp-endpoint", metavar="URL",
                   help="export those spans over OTLP/HTTP to URL (e.g. http://127.0.0.1:4318)")
    p.add_argument("--reject-fields", default="", metavar="NAME[,NAME]",
                   help="answer 400 naming the field to requests that carry it (a strict gateway)")
    p.add_argument("--scheduling-policy", default="fcfs", choices=POLICIES,
                   help="as vLLM's: fcfs (arrival order; a body 'priority' other than 0 is a 400) or "
                        "priority (the body's 'priority', lower first, else x-llm-priority: low = 1; "
                        "a waiting request preempts lower-priority running ones, as vLLM V0 did)")
    p.add_argument("--no-waiting-preemption", action="store_true",
                   help="with --scheduling-policy priority: a waiting request never preempts a "
                        "running one, it waits for a free slot (vLLM V1's scheduler)")
    limits.add_arguments(p)
    ratelimit.add_arguments(p)
    continuation.add_arguments(p)
    ws_responses.add_arguments(p)
    return p


def make_engine(kind: str, profile: str, cold_start_s: float | None = None,
                scheduling_policy: str = "fcfs", preempt_for_waiting: bool = True,
                kv_blocks: int | None = None) -> Engine:
    """``sim``/``torch`` via :func:`engine.create_engine`; ``module:factory`` plugs in any
    callable taking the profile name and returning an Engine. Only ``sim`` schedules by
    priority (the others serve ``scheduling_policy="priority"`` without preemption: refused).
    ``kv_blocks``: the sim engine's KV cache size instead of the profile's."""
    if scheduling_policy != "fcfs" and kind != "sim":
        raise SystemExit(f"--scheduling-policy {scheduling_policy} needs --engine sim, got {kind!r}")
    if kv_blocks is not None and kind != "sim":
        raise SystemExit(f"--kv-blocks is for the sim engine, not --engine {kind}")
    if kind in ENGINES:
        try:
            kwargs: dict[str, Any] = {"cold_start_s": cold_start_s} if cold_start_s is not None else {}
            if kind == "sim":
                kwargs.update(scheduling_policy=scheduling_policy, preempt_for_waiting=preempt_for_waiting)
            if kv_blocks is not None:
                if kv_blocks < 1:
                    raise ValueError(f"--kv-blocks must be at least 1, got {kv_blocks}")
                return create_engine(kind, dataclasses.replace(load_profile(profile), kv_blocks=kv_blocks),
                                     **kwargs)
            return create_engine(kind, profile, **kwargs)
        except (ImportError, ValueError, OSError) as exc:
            raise SystemExit(f"--engine {kind} --profile {profile}: {exc}") from None
    module, sep, attr = kind.partition(":")
    if not sep:
        raise SystemExit(f"--engine must be one of {', '.join(ENGINES)} or module:factory, got {kind!r}")
    engine: Engine = getattr(importlib.import_module(module), attr)(profile)
    return engine


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    configure_logging(getattr(logging, args.log_level.upper(), logging.INFO))
    try:
        faults = FaultInjector(parse_fault_list(args.faults), seed=args.fault_seed)
    except FaultSpecError as exc:
        raise SystemExit(f"--faults: {exc}") from None
    cert, key = args.cert, args.key
    if args.tls and (cert is None) != (key is None):
        raise SystemExit("--cert and --key go together")
    if args.tls and cert is None:
        directory = args.cert_dir or Path(tempfile.mkdtemp(prefix="llmclient-ref-tls-"))
        try:
            paths = generate_certs(directory)
        except TlsSetupError as exc:
            raise SystemExit(str(exc)) from None
        cert, key = paths.cert, paths.key
        sys.stdout.write(f"CA {paths.ca}\n")
    if args.no_waiting_preemption and args.scheduling_policy != "priority":
        raise SystemExit("--no-waiting-preemption goes with --scheduling-policy priority")
    engine = make_engine(args.engine, args.profile, args.cold_start_s, args.scheduling_policy,
                         not args.no_waiting_preemption, args.kv_blocks)
    app = App(engine, AppConfig(faults=faults, fault_headers=args.allow_fault_headers,
                                limits=limits.from_args(args),
                                api_key=args.api_key, access_log=args.access_log,
                                compress_responses=not args.no_compress,
                                tracing=tracing.create(args.trace_spans, args.otlp_endpoint),
                                ratelimits=ratelimit.from_args(args),
                                reject_fields=frozenset(f for f in args.reject_fields.split(",") if f),
                                scheduling_policy=args.scheduling_policy,
                                served_names=tuple(dict.fromkeys(n for n in args.served_model_name if n)),
                                server_timing=not args.no_server_timing,
                                continuation=continuation.from_args(args),
                                websocket=ws_responses.from_args(args)))
    if args.keep_alive_s is not None and (args.server == "granian" or args.keep_alive_s <= 0):
        raise SystemExit("--keep-alive-s takes seconds > 0, with --server hypercorn or uvicorn "
                         "(granian has no idle timeout to set)")
    opts = ServeOptions(args.host, args.port, args.server, args.http1_only,
                        cert if args.tls else None, key if args.tls else None, args.uvicorn_http,
                        **({"keep_alive_s": args.keep_alive_s} if args.keep_alive_s is not None else {}))
    shutdown.configure(args.shutdown_grace_s)
    _install_loop(args.loop)
    asyncio.run(serve(app, opts))


def _install_loop(kind: str) -> None:
    if kind == "asyncio":
        return
    try:
        import uvloop
    except ImportError:
        if kind == "uvloop":
            raise SystemExit("--loop uvloop needs uvloop: pip install uvloop") from None
        return
    uvloop.install()


if __name__ == "__main__":
    main()
