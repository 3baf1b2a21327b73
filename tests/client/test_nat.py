"""A NAT that forgets idle flows (issue 32): llmclient's call survives a silence longer than the
NAT remembers; the official client's hangs until its read timeout.

``nat_scenario.py`` runs in a fresh network namespace (``unshare -n``) whose conntrack forgets an
established flow after 12 s and drops what it no longer knows (nftables, ``ct state invalid``);
the reference server pauses a stream 25 s mid-answer. llmclient's HTTP/2 connection PINGs a
stream silent 10 s (``transport.http2.liveness``), so the flow never goes idle long enough to be
forgotten; the official client's HTTP/1.1 connection sends nothing, loses the flow, and never
sees the rest. Needs root, ``unshare`` and ``nft``: skipped with the reason otherwise. It waits
out the official client's read timeout (about 50 s in all), so it runs with the slow suite
(``make test-interop``, which ``.ci/run`` runs), not in ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a network namespace, conntrack sysctls, nftables)"
    for tool in ("unshare", "nft", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (nftables, util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-n", "sh", "-c",
                            "echo 12 > /proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established && "
                            "nft add table inet probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot set up a forgetful NAT here: {probe.stderr.strip()[:200]}"
    return None


@pytest.mark.interop
@pytest.mark.timeout(180)
def test_a_call_silent_longer_than_the_nat_remembers_completes_with_llmclient_only() -> None:
    why = _why_not()
    if why is not None:
        pytest.skip(why)
    done = subprocess.run(["unshare", "-n", sys.executable, "-m", "tests.client.nat_scenario"],
                          cwd=ROOT, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(result)  # both clients' outcomes and times, for the record (pytest -s)
    assert result["llmclient"]["complete"], result
    assert not result["openai"]["complete"], result
    assert result["openai"]["error"] == "APITimeoutError", result  # it waited out its read timeout
