"""Run inside a fresh network namespace (``unshare -n``, root): a NAT that forgets idle flows.

Conntrack's established-flow timeout is lowered to :data:`FORGET_S` and loose pick-up of
mid-flow packets is off, so a flow silent longer than that is forgotten and its next packets are
INVALID; an nftables rule drops those, as a NAT that lost the mapping does (not a userspace
proxy, which would answer keepalives itself). The reference server, started inside the same
namespace, pauses a stream for :data:`PAUSE_S` mid-answer, longer than the NAT remembers. Both
clients read the same stream at once; the result, one JSON line per client, goes to stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

FORGET_S = 12      # conntrack's established-flow timeout here (Linux default: 5 days)
PAUSE_S = 25       # the server's silence mid-answer: longer than the NAT remembers
OFFICIAL_READ_S = 45.0  # the official client's read timeout here (its default: 600 s)

RULES = """
table inet forgetful_nat {
    chain input {
        type filter hook input priority 0; policy accept;
        ct state invalid drop
    }
}
"""


def _netns_setup() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    conntrack = Path("/proc/sys/net/netfilter")
    (conntrack / "nf_conntrack_tcp_timeout_established").write_text(str(FORGET_S))
    (conntrack / "nf_conntrack_tcp_loose").write_text("0")
    subprocess.run(["nft", "-f", "-"], input=RULES.encode(), check=True)


def _ask(kind: str, base_url: str, out: dict[str, Any]) -> None:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Think, then answer."}],
            "max_tokens": 12, "temperature": 0, "stream": True,
            "extra_headers": {"x-fault": f"stall_after=3;resume_ms={PAUSE_S * 1000}"}}
    t0 = time.monotonic()
    try:
        if kind == "llmclient":
            import llmclient

            client: Any = llmclient.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=120)
        else:
            import openai

            client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=OFFICIAL_READ_S)
        chunks = list(client.chat.completions.create(**body))
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        out[kind] = {"complete": bool(finish), "error": None}
    except Exception as exc:
        out[kind] = {"complete": False, "error": type(exc).__name__, "message": str(exc)[:200]}
    out[kind]["seconds"] = round(time.monotonic() - t0, 1)


def main() -> None:
    _netns_setup()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.conftest import FAULT_HEADERS, start_ref_server, stop_ref_server

    server = start_ref_server(FAULT_HEADERS)
    out: dict[str, Any] = {}
    try:
        threads = [threading.Thread(target=_ask, args=(kind, server.base_url, out))
                   for kind in ("llmclient", "openai")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop_ref_server(server)
    print(json.dumps({"forget_s": FORGET_S, "pause_s": PAUSE_S, **out}))


if __name__ == "__main__":
    main()
