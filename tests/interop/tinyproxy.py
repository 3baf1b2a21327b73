"""tinyproxy (Debian's package, installed by scripts/ensure-system-deps.sh) as the forward
proxy of a company network: each test starts its own instance, with its own config, on a free
loopback port, in the foreground, and stops it after.

``start_tinyproxy(auth=("user", "pass"))`` requires Basic proxy authentication;
``connect_ports=(443,)`` refuses CONNECT to every other port (403), as proxies that allow
tunnels to 443 only do. The log (``log()``) names every request the proxy took, so a test can
tell whether a call went through it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.fixtures.processes import stop_process

from .nginx import free_port

START_TIMEOUT_S = 10.0


@dataclass
class Tinyproxy:
    port: int
    prefix: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        path = self.prefix / "tinyproxy.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def requests(self) -> list[str]:
        """The request lines the proxy took (``CONNECT host:port HTTP/1.1``, ``POST http://...``)."""
        return [line.split("): ", 1)[1] for line in self.log().splitlines()
                if "Request (file descriptor" in line and "): " in line]


def version() -> str:
    out = subprocess.run(["tinyproxy", "-v"], capture_output=True, text=True, check=True)
    return (out.stdout or out.stderr).strip()


def start_tinyproxy(auth: tuple[str, str] | None = None, connect_ports: tuple[int, ...] = (),
                    port: int | None = None) -> Tinyproxy:
    exe = shutil.which("tinyproxy")
    if exe is None:
        raise RuntimeError("tinyproxy is not installed: run scripts/ensure-system-deps.sh (as root)")
    prefix = Path(tempfile.mkdtemp(prefix="llmclient-tinyproxy-"))
    port = port or free_port()
    lines = [
        f"Port {port}",
        "Listen 127.0.0.1",
        "Timeout 60",
        f'LogFile "{prefix}/tinyproxy.log"',
        "LogLevel Connect",
        f'PidFile "{prefix}/tinyproxy.pid"',
        "MaxClients 200",
        "Allow 127.0.0.1",
    ]
    if auth is not None:
        lines.append(f"BasicAuth {auth[0]} {auth[1]}")
    lines += [f"ConnectPort {p}" for p in connect_ports]
    (prefix / "tinyproxy.conf").write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen([exe, "-d", "-c", str(prefix / "tinyproxy.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proxy = Tinyproxy(port, prefix, proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"tinyproxy exited: {err}\n{proxy.log()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proxy
        except OSError:
            if time.monotonic() > deadline:
                stop_tinyproxy(proxy)
                raise RuntimeError(f"tinyproxy did not listen on {port}") from None
            time.sleep(0.05)


def stop_tinyproxy(proxy: Tinyproxy) -> None:
    proc = proxy.process
    if proc is not None:
        stop_process(proc, timeout=10)
    if proc is not None and proc.stderr is not None:
        proc.stderr.close()
    shutil.rmtree(proxy.prefix, ignore_errors=True)
