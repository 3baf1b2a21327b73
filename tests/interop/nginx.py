"""nginx (Debian's package, installed by scripts/ensure-system-deps.sh) in front of the reference
server, as a self-hosted deployment or a company gateway puts it.

One nginx process, started by :func:`start_nginx` with its own prefix directory, config and
certificates (the reference server's throwaway CA), listens on several loopback ports, one per
behaviour under test; every listener proxies to the same upstream over HTTP/1.1 with keepalive,
as nginx does to a model server.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.fixtures.processes import stop_process
from benchmarks.server.tls import generate_certs
from tests._addresses import dead_port, start_holding_ports

from .system_tools import need

START_TIMEOUT_S = 20.0

_WS = ('proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"; '
       "proxy_read_timeout 3600s;")

# listener name -> the directives of its server block (after "listen 127.0.0.1:PORT")
LISTENERS: dict[str, tuple[str, str]] = {
    # name: (listen flags, extra directives)
    "tls12": ("ssl http2", "ssl_protocols TLSv1.2;"),
    "tls13": ("ssl http2", "ssl_protocols TLSv1.3;"),
    "h2c": ("http2", ""),
    "h1_tls": ("ssl", "ssl_protocols TLSv1.2 TLSv1.3;"),  # ALPN offers http/1.1 only
    "h1": ("", ""),
    "request_limit": ("http2", "keepalive_requests 50;"),  # then GOAWAY
    "idle_timeout": ("http2", "keepalive_timeout 1s;"),
    "small_body": ("http2", "client_max_body_size 16k;"),
    "dead_upstream": ("http2", ""),
    "short_read": ("http2", "proxy_read_timeout 1s;"),  # shorter than a silent upstream
    # WebSockets (the Responses WebSocket mode): nginx's documented upgrade proxying
    # (nginx.org/en/docs/http/websocket.html), HTTP/1.1 only since the upgrade is HTTP/1.1's.
    "ws": ("", _WS),
    "ws_tls": ("ssl", "ssl_protocols TLSv1.2 TLSv1.3; " + _WS),
    "ws_short_read": ("", _WS.replace("3600s", "1s")),  # an idle socket is closed after 1 s
}

_CONF = """\
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 1024; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    upstream ref {{ server 127.0.0.1:{upstream}; keepalive 32; }}
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    proxy_request_buffering off;
    proxy_read_timeout 60s;
{servers}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Nginx:
    prefix: Path
    ca_path: str
    ports: dict[str, int]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def base_url(self, listener: str) -> str:
        tls = "ssl" in LISTENERS[listener][0]
        return f"{'https' if tls else 'http'}://127.0.0.1:{self.ports[listener]}/v1"

    def ws_url(self, listener: str) -> str:
        """The Responses WebSocket URL through ``listener`` (ws:// or wss://)."""
        return self.base_url(listener).replace("http", "ws", 1) + "/responses"

    def reload(self) -> None:
        subprocess.run(["nginx", "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf"),
                        "-s", "reload"], check=True, capture_output=True)

    def version(self) -> str:
        out = subprocess.run(["nginx", "-v"], capture_output=True, text=True, check=True)
        return out.stderr.strip().removeprefix("nginx version: ")

    def error_log(self) -> str:
        return (self.prefix / "error.log").read_text(errors="replace")


def start_nginx(upstream_port: int) -> Nginx:
    """nginx with a listener per :data:`LISTENERS` entry, each on a port it holds itself.

    The ports are found free, then nginx binds them: in between, another worker's server can
    take one. nginx then keeps the ports it did bind, retries the taken one for a few seconds
    and exits, while a client of that port reaches the other process (one run's WebSocket
    handshake got another nginx's 57-byte HTTP/2 preface). So every port's listening socket
    must be one of nginx's own, else it starts again on new ports."""
    return start_holding_ports(lambda: _start_once(upstream_port), _pid_and_ports,
                               lambda nginx: stop_nginx(nginx, quiet=True), "nginx")


def _pid_and_ports(nginx: Nginx) -> tuple[int, list[int]]:
    assert nginx.process is not None
    return nginx.process.pid, list(nginx.ports.values())


def _start_once(upstream_port: int) -> Nginx:
    exe = shutil.which("nginx")
    if exe is None:
        raise RuntimeError("nginx is not installed: run scripts/ensure-system-deps.sh (as root)")
    prefix = Path(tempfile.mkdtemp(prefix="llmclient-nginx-"))
    certs = generate_certs(prefix / "certs")
    ports = {name: free_port() for name in LISTENERS}
    dead = dead_port()  # nothing listens there, nor can meanwhile
    servers = []
    for name, (flags, extra) in LISTENERS.items():
        target = f"http://127.0.0.1:{dead}" if name == "dead_upstream" else "http://ref"
        servers.append(f"    server {{ listen 127.0.0.1:{ports[name]} {flags}; {extra} "
                       f"location / {{ proxy_pass {target}; }} }}")
    conf = _CONF.format(d=prefix, cert=certs.cert, key=certs.key, upstream=upstream_port,
                        servers="\n".join(servers))
    (prefix / "nginx.conf").write_text(conf)
    proc = subprocess.Popen([exe, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    nginx = Nginx(prefix, str(certs.ca), ports, proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    for port in ports.values():
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"nginx exited: {err}\n{nginx.error_log()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    stop_nginx(nginx)
                    raise RuntimeError(f"nginx did not listen on {port}") from None
                time.sleep(0.05)
    return nginx


@contextlib.contextmanager
def running_nginx(upstream_port: int) -> Iterator[Nginx]:
    """nginx in front of ``upstream_port`` while the block runs (skipped where nginx is
    missing, failed in CI): what each interop module's ``nginx`` fixture yields."""
    need("nginx")
    proxy = start_nginx(upstream_port)
    try:
        yield proxy
    finally:
        stop_nginx(proxy)


def stop_nginx(nginx: Nginx, quiet: bool = False) -> None:
    proc = nginx.process
    if proc is not None and proc.poll() is not None and not quiet:
        # It ended before its tests did (twice in 100 loop runs under -n 4 a worker's nginx
        # stopped listening mid-module: likely a port taken before it bound it, which
        # start_nginx now checks): say how, before its logs are removed.
        warnings.warn(f"nginx (pid {proc.pid}) exited by itself with code {proc.returncode}; its error log ends:\n"
                      f"{nginx.error_log()[-3000:]}", stacklevel=2)
    if proc is not None:
        stop_process(proc, timeout=10)  # SIGTERM: nginx's fast shutdown
    if proc is not None and proc.stderr is not None:
        proc.stderr.close()
    shutil.rmtree(nginx.prefix, ignore_errors=True)
