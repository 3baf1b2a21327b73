"""Start and stop the embedded reference server as a subprocess.

``python -m benchmarks.server --port 0 --profile NAME [--tls] [--faults SPEC]`` prints
``READY <origin>`` on stdout once it listens; with ``--tls`` it first prints the CA bundle that
signs its certificate (a line ``CA <path>``), which clients then verify against. The server's
log (stderr, one line per request with its trace id) goes to ``log_path`` so a slow request
from a result file can be looked up there.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ServerError", "ServerProcess", "parse_ready", "start_replicas", "start_server"]

# The benchmarks package this runs from: benchmarks in a checkout, llmclient_bench installed.
_PACKAGE = (__spec__.name if __spec__ is not None else __name__).split(".")[0]  # run as -m too
_READY = re.compile(r"^READY\s+(https?://[^\s]+)")
_CA = re.compile(r"^CA\s+(\S+)")


class ServerError(RuntimeError):
    """The reference server did not start (the message carries its last output)."""


def parse_ready(line: str) -> str | None:
    """The origin from a ``READY http://127.0.0.1:PORT`` line, else None."""
    match = _READY.match(line.strip())
    return match.group(1).rstrip("/") if match else None


@dataclass
class ServerProcess:
    origin: str                    # "http://127.0.0.1:PORT" (https with TLS)
    process: subprocess.Popen[str]
    profile: str
    tls: bool
    ca_path: str | None = None
    started_s: float = 0.0         # seconds from spawn to READY
    output: list[str] = field(default_factory=list)
    log_path: str | None = None

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])

    @property
    def host(self) -> str:
        return self.origin.split("//", 1)[1].rsplit(":", 1)[0]

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    def model(self, api_key: str = "bench-key") -> str | None:
        """The first model the server lists (each profile serves its own model name)."""
        import httpx

        try:
            response = httpx.get(self.base_url + "/models", verify=self.ca_path or True,
                                 headers={"authorization": f"Bearer {api_key}"}, timeout=10.0)
            data = response.json().get("data") or []
            return str(data[0]["id"]) if data else None
        except (httpx.HTTPError, ValueError, KeyError, IndexError, AttributeError):
            return None

    def wait_healthy(self, timeout: float = 120.0) -> float:
        """Block until ``/health`` answers 200 (the model has loaded); seconds waited.
        Profiles with a cold start answer 503 until then."""
        import httpx

        t0 = time.perf_counter()
        with httpx.Client(verify=self.ca_path or True, timeout=5.0) as client:
            while time.perf_counter() - t0 < timeout:
                if self.process.poll() is not None:
                    raise ServerError(f"reference server exited with {self.process.returncode}")
                try:
                    if client.get(self.origin + "/health").status_code == 200:
                        return time.perf_counter() - t0
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        raise ServerError(f"reference server not healthy within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        self.wait_or_kill(timeout)

    def wait_or_kill(self, timeout: float = 10.0) -> None:
        """Wait for the process to end (it was asked to); kill it if it is alive ``timeout`` on."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(profile: str = "zero", tls: bool = False, faults: str | None = None,
                 extra_args: tuple[str, ...] = (), timeout: float = 60.0,
                 log_dir: str | None = None, cert_dir: str | None = None) -> ServerProcess:
    """Spawn the reference server on a free port and wait for READY. Its log goes to a file in
    ``log_dir``; with TLS its generated CA, certificate and private key go to a folder of their
    own inside ``cert_dir`` (never beside the logs: a results folder is handed on, keys must
    not be), else wherever the server puts them (a temp folder of its own)."""
    # benchmarks.server from a checkout, llmclient_bench.server installed
    args = [sys.executable, "-m", f"{_PACKAGE}.server", "--port", "0", "--profile", profile]
    if tls:
        args.append("--tls")
        if cert_dir is not None and not {"--cert", "--cert-dir"} & set(extra_args):
            args += ["--cert-dir", tempfile.mkdtemp(prefix="certs-", dir=cert_dir)]
    if faults:
        args += ["--faults", faults]
    args += list(extra_args)
    # the folder holding the package (the checkout, or site-packages installed)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # a profile is a name or a JSON file's path: the log is named by its stem either way
    log_fd, log_path = tempfile.mkstemp(prefix=f"refserver-{Path(profile).stem}-", suffix=".log",
                                        dir=log_dir)
    t0 = time.perf_counter()
    try:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log_fd, text=True,
                                   cwd=root, env=env, bufsize=1)
    finally:
        os.close(log_fd)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        # Keep draining stdout for the server's whole life so it never blocks on a full pipe.
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True, name="refserver-stdout").start()
    output: list[str] = []
    origin: str | None = None
    ca_path: str | None = None
    deadline = t0 + timeout
    while origin is None:
        try:
            line = lines.get(timeout=max(0.05, deadline - time.perf_counter()))
        except queue.Empty:
            line = ""
        if line is None or time.perf_counter() > deadline:
            process.kill()
            with open(log_path, errors="replace") as log:
                tail = log.readlines()[-30:]
            raise ServerError(f"reference server ({' '.join(args[1:])}) did not become ready "
                              f"within {timeout:.0f}s; output:\n" + "".join(output[-30:] + tail))
        output.append(line)
        ca_match = _CA.match(line.strip())
        if ca_match:
            ca_path = ca_match.group(1)
        origin = parse_ready(line)
    started = time.perf_counter() - t0
    return ServerProcess(origin=origin, process=process, profile=profile, tls=tls,
                         ca_path=ca_path, started_s=started, output=output, log_path=log_path)


def start_replicas(n: int, profile: str = "zero", tls: bool = False,
                   extra_args: tuple[str, ...] = (), spawn: Any = None,
                   cert_from: ServerProcess | None = None, **kwargs: Any) -> list[ServerProcess]:
    """``n`` reference servers on their own ports, same profile (``spawn``: a
    :func:`start_server`-like callable, e.g. the suite's, which adds its TLS and log folder;
    then ``tls`` is whatever it uses). With TLS the first one generates the certificate and the
    others serve the same one (``ca_path`` is the same on all). Stops the ones it started if
    one fails. ``cert_from``: a replica started earlier whose certificate these serve too."""
    if n < 1:
        raise ValueError(f"replicas must be >= 1, got {n}")
    if spawn is None:
        def spawn(**kw: Any) -> ServerProcess:
            return start_server(tls=tls, **kw)
    started: list[ServerProcess] = []
    try:
        first = cert_from or spawn(profile=profile, extra_args=extra_args, **kwargs)
        if cert_from is None:
            started.append(first)
        more = extra_args
        if first.ca_path:  # generated: ca.pem, server.pem, server.key side by side (server/tls.py)
            folder = os.path.dirname(first.ca_path)
            more = (*extra_args, "--cert", os.path.join(folder, "server.pem"),
                    "--key", os.path.join(folder, "server.key"))
        while len(started) < n:
            server = spawn(profile=profile, extra_args=more, **kwargs)
            server.ca_path = server.ca_path or first.ca_path
            started.append(server)
    except BaseException:
        for server in started:
            server.stop()
        raise
    return started


def _main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.harness.serverproc",
                                description="start N reference-server replicas; Ctrl-C stops them")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--profile", default="h100-8b")
    p.add_argument("--tls", action="store_true")
    args, extra = p.parse_known_args(argv)
    # Ctrl-C and SIGTERM stop the replicas. Python leaves SIGINT ignored when it starts ignored,
    # as it does under a shell's background job (`cmd &`): the command then never stopped.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    servers = start_replicas(args.replicas, args.profile, args.tls, tuple(extra))
    try:  # from here a Ctrl-C at any point stops them (one right after READY included)
        for server in servers:
            print(f"READY {server.origin}" + (f" CA {server.ca_path}" if server.ca_path else ""), flush=True)
        while all(s.process.poll() is None for s in servers):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop_all(servers)


def stop_all(servers: list[ServerProcess], timeout: float = 10.0) -> None:
    """Stop several servers together: the signal to each first, then the waits (one after
    the other, each server's drain would add up)."""
    for server in servers:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGINT)
    for server in servers:  # a second SIGINT (stop()) would cut the drain short
        server.wait_or_kill(timeout)


if __name__ == "__main__":
    _main()
