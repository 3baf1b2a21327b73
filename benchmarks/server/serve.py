"""Run the app under an HTTP server and announce readiness with one ``READY <origin>`` line.

Default server: granian (Rust HTTP/1.1 + HTTP/2 on hyper, ASGI), embedded in this process's
event loop. Chosen by measurement (README "Choosing the HTTP server"): on the same 2-core VM
and the same raw ASGI app, h2load with 16 streams on one connection cost granian a fraction of
hypercorn's server CPU per HTTP/2 request (the figures are in that README section). granian's
``auto`` mode serves HTTP/1.1 and h2c with prior knowledge (RFC 9113 §3.3) on one plain port and
negotiates h2 by ALPN under TLS. hypercorn (pure Python, on h2) stays available with
``--server hypercorn``; the app code path is the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import shutdown

__all__ = ["ServeOptions", "serve"]

log = logging.getLogger("benchmarks.server.serve")

# Benchmarks open few long-lived connections and push many streams through each; defaults
# built for the open internet (hypercorn: GOAWAY after 1,000 requests per connection,
# 100 concurrent streams) would make the server, not the client, the thing measured.
MAX_CONCURRENT_STREAMS = 1024
KEEP_ALIVE_S = 3600


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    server: str = "granian"
    http1_only: bool = False
    cert: Path | None = None
    key: Path | None = None
    uvicorn_http: str = "h11"  # or "httptools" (uvicorn[standard], as vLLM and SGLang install it)
    keep_alive_s: float = KEEP_ALIVE_S  # how long an idle connection is kept (hypercorn, uvicorn)


def origin_url(scheme: str, host: str, port: int) -> str:
    """``scheme://host:port``, an IPv6 literal in brackets (RFC 3986: ``http://[::1]:8000``)."""
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _announce(scheme: str, host: str, port: int) -> None:
    sys.stdout.write(f"READY {origin_url(scheme, host, port)}\n")
    sys.stdout.flush()


def _free_port(host: str) -> int:
    # granian binds inside Rust and offers no pre-bound socket; pick a free port first.
    # The window between close and granian's bind is microseconds on loopback.
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


async def serve(app: object, opts: ServeOptions) -> None:
    scheme = "https" if opts.cert else "http"
    if opts.server == "granian":
        await _serve_granian(app, opts, scheme)
    elif opts.server == "hypercorn":
        await _serve_hypercorn(app, opts, scheme)
    elif opts.server == "uvicorn":
        await _serve_uvicorn(app, opts, scheme)
    else:
        raise ValueError(f"--server must be granian, hypercorn or uvicorn, got {opts.server!r}")


async def _serve_granian(app: object, opts: ServeOptions, scheme: str) -> None:
    try:
        from granian.constants import HTTPModes, Interfaces
        from granian.http import HTTP1Settings, HTTP2Settings
        from granian.server.embed import Server
    except ImportError:
        raise SystemExit("granian is not installed: pip install granian, or use --server hypercorn") from None
    port = opts.port or _free_port(opts.host)
    server = Server(
        app, address=opts.host, port=port, interface=Interfaces.ASGI,
        http=HTTPModes.http1 if opts.http1_only else HTTPModes.auto,
        http1_settings=HTTP1Settings(keep_alive=True),
        http2_settings=HTTP2Settings(max_concurrent_streams=MAX_CONCURRENT_STREAMS),
        websockets=True, backlog=1024, log_enabled=False,  # the Responses WebSocket mode
        ssl_cert=opts.cert, ssl_key=opts.key,
    )
    task = asyncio.ensure_future(server.serve())
    await _wait_listening(opts.host, port, task, opts.cert is not None)
    _on_signals(server.stop)
    _announce(scheme, opts.host, port)
    await task


async def _wait_listening(host: str, port: int, task: asyncio.Future[None], tls: bool) -> None:
    """Wait until the server answers an HTTP request (not merely until the port is bound):
    granian's worker sets its own process signal dispositions when it starts serving, so our
    handlers go in after that, and READY means requests are really served."""
    ctx = None
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # a readiness probe of our own socket, nothing more
    probe = f"GET /health HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n".encode()
    for _ in range(1000):
        if task.done():
            task.result()
            raise SystemExit("the HTTP server exited during startup")
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=ctx)
            writer.write(probe)
            answered = (await reader.read(12)).startswith(b"HTTP/1.1")
            writer.close()
            if answered:
                return
        except OSError:
            pass
        await asyncio.sleep(0.01)
    raise SystemExit(f"the HTTP server did not answer on {host}:{port}")


async def _serve_hypercorn(app: object, opts: ServeOptions, scheme: str) -> None:
    from hypercorn.asyncio import serve as hserve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"{opts.host}:{opts.port}"]
    config.keep_alive_max_requests = 2**62
    config.keep_alive_timeout = opts.keep_alive_s
    config.h2_max_concurrent_streams = MAX_CONCURRENT_STREAMS
    config.accesslog = None
    config.alpn_protocols = ["http/1.1"] if opts.http1_only else ["h2", "http/1.1"]
    if opts.cert:
        config.certfile, config.keyfile = str(opts.cert), str(opts.key)
    sock = socket.socket(socket.AF_INET6 if ":" in opts.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((opts.host, opts.port))
    sock.listen(1024)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    config.bind = [f"fd://{sock.fileno()}"]
    stop = asyncio.Event()
    _on_signals(stop.set)
    task = asyncio.ensure_future(hserve(app, config, shutdown_trigger=stop.wait, mode="asgi"))  # type: ignore[arg-type]
    await _wait_listening(opts.host, port, task, opts.cert is not None)
    _announce(scheme, opts.host, port)
    await task
    with contextlib.suppress(OSError):  # hypercorn closes the fd itself on shutdown
        sock.close()


async def _serve_uvicorn(app: object, opts: ServeOptions, scheme: str) -> None:
    """uvicorn speaks HTTP/1.1 only (h11, or httptools): what vLLM, SGLang, llama-cpp-python's
    server and litellm's proxy are served by. An h2c preface gets an HTTP/1.1 error answer there."""
    try:
        import uvicorn
    except ImportError:
        raise SystemExit("uvicorn is not installed: pip install uvicorn") from None
    if opts.uvicorn_http == "httptools":
        try:
            import httptools  # noqa: F401
        except ImportError:
            raise SystemExit("--uvicorn-http httptools needs httptools: pip install httptools") from None
    sock = socket.socket(socket.AF_INET6 if ":" in opts.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((opts.host, opts.port))
    sock.listen(1024)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        http=opts.uvicorn_http, lifespan="on", access_log=False, log_level="warning",
        timeout_keep_alive=opts.keep_alive_s,  # type: ignore[arg-type]  # a call_later delay: a float works
        loop="none",
        ssl_certfile=str(opts.cert) if opts.cert else None,
        ssl_keyfile=str(opts.key) if opts.key else None,
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    await _wait_listening(opts.host, port, task, opts.cert is not None)
    _on_signals(lambda: setattr(server, "should_exit", True))
    _announce(scheme, opts.host, port)
    await task
    with contextlib.suppress(OSError):
        sock.close()


def _on_signals(callback: Callable[[], object]) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)  # re-install: the C-level disposition may have changed
        loop.add_signal_handler(sig, shutdown.on_signal, callback)

