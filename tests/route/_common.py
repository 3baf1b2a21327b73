"""What the route tests share: the model name, a chat with a long shared system prompt, a dead
port (nothing listens there, nor can meanwhile: a dead replica)."""

from __future__ import annotations

from tests._addresses import dead_port

MODEL = "gpt-4o-mini"
SYSTEM = "You are the support assistant of a large hardware shop. Answer briefly. " * 12

__all__ = ["MODEL", "SYSTEM", "chat", "dead_port"]


def chat(session: str, turns: list[str]) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for n, text in enumerate(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": f"{session}: {text}"})
    return messages
