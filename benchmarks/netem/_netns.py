"""Kernel path (Linux, root): a network namespace joined to the host by a veth pair.

The server runs inside the namespace (`link.command([...])` prefixes `ip netns exec`), and
its traffic crosses the veth, where tbf shapes each direction in the kernel: the host end's
egress is the upload (client -> server), the namespace end's egress the download. Delay,
jitter, loss and the handshake charge still come from the userspace forwarder in front
(Network(..., netns=link) turns its own bandwidth shaping off), because kernels like the one
this was built on have no netem qdisc (`tc qdisc add ... netem` answers "Specified qdisc
kind is unknown"); `netem_available()` checks that on the machine at hand.

Addresses come from 198.18.0.0/15, which RFC 2544 (Appendix C.2.2) and RFC 5735 §3 reserve
for benchmark networks, so they never collide with a real one; the traffic never leaves the
host. Every namespace and veth is named with a `lcxnet`/`lcx` prefix and the creating pid;
everything is removed on exit from the context manager, at interpreter exit, on SIGINT and
SIGTERM, and leftovers of dead processes are removed at the next start.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ipaddress
import itertools
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

from ._profiles import NetworkProfile, get_profile

__all__ = [
    "NetnsError",
    "NetnsLink",
    "cleanup_leftovers",
    "enter_netns",
    "netem_available",
    "netns_supported",
]

NS_PREFIX = "lcxnet-"
LINK_PREFIX = "lcx"
_NETNS_DIR = "/run/netns"
_CLONE_NEWNET = 0x40000000
_BENCH_NET = ipaddress.IPv4Network("198.18.0.0/15")
_LINK_RE = re.compile(r"^lcx(\d+)[hn]\d+$")
_NS_RE = re.compile(r"^lcxnet-(\d+)-\d+$")

_counter = itertools.count()
_active: dict[str, NetnsLink] = {}
_lock = threading.Lock()
_handlers_installed = False


class NetnsError(RuntimeError):
    """An `ip`/`tc` command failed; the message carries the command and its stderr."""


def netns_supported() -> tuple[bool, str]:
    """(True, "") when this process can create namespaces, else (False, reason)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False, "network namespaces need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return False, f"`{tool}` (iproute2) is not installed"
    return True, ""


def netem_available() -> bool:
    """Whether the kernel has the netem qdisc (tried on a throwaway dummy-less veth)."""
    ok, _ = netns_supported()
    if not ok:
        return False
    name = f"{LINK_PREFIX}{os.getpid()}h{next(_counter)}"
    try:
        _ip("link", "add", name, "type", "veth", "peer", "name", name[:-1] + "x")
    except NetnsError:
        return False
    try:
        result = subprocess.run(
            ["tc", "qdisc", "add", "dev", name, "root", "netem", "delay", "1ms"],
            capture_output=True,
            text=True,
            check=False,
        )
        return result.returncode == 0
    finally:
        with contextlib.suppress(NetnsError):
            _ip("link", "del", name)


def _run(argv: Sequence[str], *, check: bool = True) -> str:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def _ip(*args: str, check: bool = True) -> str:
    return _run(["ip", *args], check=check)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_namespaces() -> list[str]:
    out = _ip("netns", "list", check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_links() -> list[str]:
    out = _ip("-o", "link", "show", check=False)
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def cleanup_leftovers() -> list[str]:
    """Remove namespaces and veths this module created in processes that are gone."""
    removed = []
    for ns in list_namespaces():
        m = _NS_RE.match(ns)
        if m and not _pid_alive(int(m.group(1))):
            _ip("netns", "del", ns, check=False)
            removed.append(ns)
    for link in list_links():
        m = _LINK_RE.match(link)
        if m and not _pid_alive(int(m.group(1))):
            _ip("link", "del", link, check=False)
            removed.append(link)
    return removed


def enter_netns(name: str) -> None:
    """Move the calling *thread* into namespace `name` (setns(2) is per thread for netns)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.path.join(_NETNS_DIR, name), os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({name}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _tbf_args(mbit: float) -> list[str]:
    rate_Bps = mbit * 1e6 / 8
    # The bucket must hold at least one timer tick of data at the rate or tbf cannot reach
    # it (tc-tbf(8)); 4 ms (HZ=250) is the coarsest tick in use.
    burst = max(32 * 1024, int(rate_Bps * 0.004))
    return ["tbf", "rate", f"{mbit}mbit", "burst", str(burst), "latency", "100ms"]


class NetnsLink:
    """A namespace + veth pair with tbf bandwidth from `profile` (context manager)."""

    def __init__(self, profile: str | NetworkProfile = "wan") -> None:
        ok, reason = netns_supported()
        if not ok:
            raise NetnsError(f"cannot create a network namespace: {reason}")
        self.profile = get_profile(profile)
        k = next(_counter)
        pid = os.getpid()
        self.name = f"{NS_PREFIX}{pid}-{k}"
        self.host_if = f"{LINK_PREFIX}{pid}h{k}"
        self.ns_if = f"{LINK_PREFIX}{pid}n{k}"
        if len(self.host_if) > 15:  # IFNAMSIZ - 1
            raise NetnsError(f"interface name {self.host_if!r} is too long")
        self.host_address = ""
        self.ns_address = ""
        self.prefixlen = 30
        self._up = False

    # Where the server inside listens, and how the client reaches it.
    @property
    def server_host(self) -> str:
        return self.ns_address

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace (for subprocess)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def start(self) -> NetnsLink:
        _install_handlers()
        cleanup_leftovers()
        with _lock:
            _active[self.name] = self
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        self._up = True
        return self

    def _create(self) -> None:
        subnet = _free_subnet()
        self.host_address, self.ns_address = str(subnet[1]), str(subnet[2])
        cidr = f"/{self.prefixlen}"
        _ip("netns", "add", self.name)
        _ip(*f"link add {self.host_if} type veth peer name {self.ns_if} netns {self.name}".split())
        _ip("addr", "add", self.host_address + cidr, "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        _ip("-n", self.name, "addr", "add", self.ns_address + cidr, "dev", self.ns_if)
        _ip("-n", self.name, "link", "set", self.ns_if, "up")
        _ip("-n", self.name, "link", "set", "lo", "up")
        if self.profile.up_mbit:
            tbf = _tbf_args(self.profile.up_mbit)
            _run(["tc", "qdisc", "add", "dev", self.host_if, "root", *tbf])
        if self.profile.down_mbit:
            tbf = _tbf_args(self.profile.down_mbit)
            _run(["tc", "-n", self.name, "qdisc", "add", "dev", self.ns_if, "root", *tbf])

    def close(self) -> None:
        """Remove the veth pair and the namespace (idempotent, never raises)."""
        with _lock:
            _active.pop(self.name, None)
        # Deleting one end of a veth deletes both; the namespace mount goes with netns del.
        if self.host_if in list_links():
            _ip("link", "del", self.host_if, check=False)
        if self.name in list_namespaces():
            _ip("netns", "del", self.name, check=False)
        self._up = False

    def __enter__(self) -> NetnsLink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        return {
            "namespace": self.name,
            "host_if": self.host_if,
            "ns_if": self.ns_if,
            "host_address": self.host_address,
            "ns_address": self.ns_address,
            "tbf_up_mbit": self.profile.up_mbit,
            "tbf_down_mbit": self.profile.down_mbit,
        }


def _free_subnet() -> ipaddress.IPv4Network:
    """The first /30 of the benchmark range that no interface on the host uses yet."""
    used: list[ipaddress.IPv4Network] = []
    for line in _ip("-o", "-4", "addr", "show", check=False).splitlines():
        for word in line.split():
            if "/" in word and word[0].isdigit():
                with contextlib.suppress(ValueError):
                    used.append(ipaddress.IPv4Interface(word).network)
    used = [net for net in used if net.overlaps(_BENCH_NET)]
    for subnet in _BENCH_NET.subnets(new_prefix=30):
        if not any(subnet.overlaps(net) for net in used):
            return subnet
    raise NetnsError("no free /30 left in 198.18.0.0/15")


def _close_all() -> None:
    with _lock:
        links = list(_active.values())
    for link in links:
        link.close()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _close_all()
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_previous_handlers: dict[int, Any] = {}


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_close_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal only works in the main thread; atexit still cleans up
    for signum in (signal.SIGINT, signal.SIGTERM):
        _previous_handlers[signum] = signal.getsignal(signum)
        signal.signal(signum, _on_signal)
