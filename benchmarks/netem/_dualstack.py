"""A dual-stack name whose IPv6 route is broken, for Happy Eyeballs (RFC 8305) tests and figures.

`DualStackLink` is a `NetnsLink` (a namespace joined to the host by a veth pair) whose veth
also carries an IPv6 unique local pair (fd00::/8, RFC 4193: never routed beyond the site),
and a name, `DualStackLink.NAME`, that resolves *inside the namespace* to the host end's IPv6
address first, then its IPv4 one: `ip netns exec` binds `/etc/netns/<namespace>/hosts` over
`/etc/hosts` for the command it runs (ip-netns(8)), so the host's resolver is never touched.
`blackhole_ipv6()` adds an nftables rule in the namespace that drops every TCP segment from
the host's IPv6 address (neighbour discovery still answers, so the SYN does go out): nothing
comes back (no SYN-ACK, no reset, no ICMP), as on a network whose IPv6 route is broken, so a client that tries addresses one after another waits
out its connect timeout there before it tries IPv4.

The client runs inside the namespace (`link.command([...])`), the server on the host, bound
to the host end's IPv4 address (`host_address`). Everything is removed on close (the hosts
file too), at exit and on SIGINT/SIGTERM, like every `NetnsLink`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ._netns import _NETNS_DIR, _NS_RE, NetnsError, NetnsLink, _ip, _pid_alive, netns_supported

__all__ = ["DualStackLink", "dualstack_supported"]

_ETC_NETNS = Path("/etc/netns")


def dualstack_supported() -> tuple[bool, str]:
    """(True, "") when this machine can build a `DualStackLink`, else (False, why)."""
    ok, why = netns_supported()
    if not ok:
        return ok, why
    if shutil.which("nft") is None:
        return False, "`nft` (nftables) is not installed: the IPv6 blackhole is an nftables rule"
    if not os.path.isdir(_NETNS_DIR) and not os.access("/run", os.W_OK):
        return False, f"{_NETNS_DIR} cannot be made"
    return True, ""


def _forget_dead_hosts_files() -> None:
    """/etc/netns/<namespace>/ folders this module left behind in processes that are gone."""
    if not _ETC_NETNS.is_dir():
        return
    for entry in _ETC_NETNS.iterdir():
        m = _NS_RE.match(entry.name)
        if m and not _pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


class DualStackLink(NetnsLink):
    """A namespace whose name `NAME` resolves to a (blackholable) IPv6 and a working IPv4
    address of the host end (context manager)."""

    NAME = "dualstack.llmclient.test"

    def __init__(self) -> None:
        super().__init__("loopback")
        k = int(self.name.rsplit("-", 1)[1])
        pid_tag = os.getpid() % 0xFFFF
        # fd00::/8 with the pid and the link's number: two links never share a prefix
        self.host_address6 = f"fd00:11c:{pid_tag:x}:{k:x}::1"
        self.ns_address6 = f"fd00:11c:{pid_tag:x}:{k:x}::2"
        self.blackholed = False

    def _create(self) -> None:
        _forget_dead_hosts_files()
        super()._create()
        _ip("-6", "addr", "add", f"{self.host_address6}/64", "dev", self.host_if, "nodad")
        _ip("-n", self.name, "-6", "addr", "add", f"{self.ns_address6}/64", "dev", self.ns_if, "nodad")
        etc = _ETC_NETNS / self.name
        etc.mkdir(parents=True, exist_ok=True)
        # IPv6 first, as getaddrinfo orders a ULA against a benchmark-range IPv4 (RFC 6724)
        (etc / "hosts").write_text(f"127.0.0.1 localhost\n{self.host_address6} {self.NAME}\n"
                                   f"{self.host_address} {self.NAME}\n")

    def blackhole_ipv6(self) -> None:
        """From now on no TCP segment from the host's IPv6 address reaches the namespace."""
        table = ["nft", "add", "table", "inet", "lcxbh"]
        chain = ["nft", "add", "chain", "inet", "lcxbh", "input",
                 "{ type filter hook input priority 0; policy accept; }"]
        rule = ["nft", "add", "rule", "inet", "lcxbh", "input", "ip6", "saddr", self.host_address6,
                "meta", "l4proto", "tcp", "drop"]  # TCP only: neighbour discovery still answers
        for argv in (table, chain, rule):
            result = subprocess.run(self.command(argv), capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise NetnsError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
        self.blackholed = True

    def close(self) -> None:
        shutil.rmtree(_ETC_NETNS / self.name, ignore_errors=True)
        super().close()

    def __enter__(self) -> DualStackLink:
        self.start()
        return self
