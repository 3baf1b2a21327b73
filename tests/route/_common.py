"""What the route tests share: the model name, a chat with a long shared system prompt, a free
port (nothing listens there: a dead replica)."""

from __future__ import annotations

import socket

MODEL = "gpt-4o-mini"
SYSTEM = "You are the support assistant of a large hardware shop. Answer briefly. " * 12


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chat(session: str, turns: list[str]) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for n, text in enumerate(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": f"{session}: {text}"})
    return messages
