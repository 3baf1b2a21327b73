"""What the route tests share: the model name, a chat with a long shared system prompt, a dead
port (nothing listens there, nor can meanwhile: a dead replica)."""

from __future__ import annotations

import socket

MODEL = "gpt-4o-mini"
SYSTEM = "You are the support assistant of a large hardware shop. Answer briefly. " * 12


# Bound, never listening: a connect there is refused, and no parallel test's server can take
# the port while this test process runs (a port merely found free can be bound a moment later).
_HELD: list[socket.socket] = []


def dead_port() -> int:
    """A loopback port where nothing listens, held for the rest of the test process."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


def chat(session: str, turns: list[str]) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for n, text in enumerate(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": f"{session}: {text}"})
    return messages
