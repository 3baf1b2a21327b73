"""A derived ``prompt_cache_key`` for one origin that routes by a key (api.openai.com).

OpenAI routes a request to a machine by a hash of the prompt's first tokens combined with the
optional ``prompt_cache_key``; requests for one prefix and key beyond ~15 a minute spill to
other machines. Calls that share a long system prompt but are different conversations thus
crowd onto one machine and spill at random, and a conversation's next turn often lands on a
machine that never saw its history. When the app sets no key (nor ``user``, the older field
that ``prompt_cache_key`` replaces), llmclient derives one per *conversation*: a keyed hash of
the conversation's opening (model, tools, system prompt and the first user message), which
every later turn of that conversation repeats, so its turns share a key and a machine while
other conversations spread. Calls that share only a system prompt get different keys.

* Stable: the same opening gives the same key in every process using the same credentials
  and origin (the hash is keyed by the call's credential scope, never Python's salted hash).
* Never reveals the prompt: a keyed BLAKE2b of the text; without the credentials a guess at a
  short prompt cannot even be checked against it.
* Sent by default only to :data:`KEYED_HOSTS` (api.openai.com; :func:`wanted`).
* Never sent where the app set its own ``prompt_cache_key`` (or ``user``), to an endpoint other
  than chat completions and responses, in a protobuf body, or to an origin that refused it
  (a 400 or 422 naming the field: :func:`refused`; the call is then sent once more without it,
  safe because such an answer proves the request was not run).

Pure; the client's encode stage calls :func:`derive` and the send loop :func:`refused`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .key import prompt_text

__all__ = ["FIELD", "KEYED_HOSTS", "PATHS", "derive", "opening", "refused", "wanted"]

FIELD = "prompt_cache_key"
PATHS = frozenset({"/chat/completions", "/responses"})
# Where the default (``auto_cache_key=None``) sends a key: the origins that document the field
# and route by it. Elsewhere it buys nothing (vLLM, SGLang, llama.cpp: one process, one prefix
# cache; vLLM logs a warning per request for a field it ignores) and a strict gateway refuses
# it (Mistral 422, older Azure OpenAI 400): ``auto_cache_key=True`` sends it there too.
KEYED_HOSTS = frozenset({"api.openai.com"})
_PERSON = b"llmc-pck-v1"  # domain separation: no other llmclient hash has the same value


def wanted(option: bool | None, base_url: str) -> bool:
    """Whether to derive a key for a call to ``base_url``: the app's ``auto_cache_key`` when it
    set one, else only for :data:`KEYED_HOSTS`."""
    if option is not None:
        return option
    rest = base_url.partition("://")[2]
    host = rest.split("/", 1)[0].rpartition("@")[2].split(":", 1)[0].lower()
    return host in KEYED_HOSTS


def opening(body: dict[str, Any]) -> dict[str, Any] | None:
    """The part of ``body`` that every turn of its conversation repeats: the messages up to and
    including the first user message (Responses: ``instructions`` and the ``input`` items up to
    the first user item). None when the conversation is kept by the server
    (``previous_response_id``, ``conversation``): its turns' bodies share nothing to hash."""
    if body.get("previous_response_id") or body.get("conversation"):
        return None
    out: dict[str, Any] = {k: body[k] for k in ("model", "tools", "instructions") if k in body}
    for name in ("messages", "input"):
        items = body.get(name)
        if isinstance(items, list):
            head: list[Any] = []
            for item in items:
                head.append(item)
                if isinstance(item, dict) and item.get("role") == "user":
                    break
            out[name] = head
        elif items is not None:
            out[name] = items
    return out


def derive(path: str, body: dict[str, Any] | None, secret: str) -> str | None:
    """The key to send with this call, or None (the app set its own key or ``user``, another
    endpoint, nothing to hash). ``secret``: what keys the hash (the call's credential scope,
    hex), so keys are stable per credentials and origin and say nothing of the prompt."""
    if not body or path not in PATHS:
        return None
    if body.get(FIELD) is not None or body.get("user"):
        return None
    head = opening(body)
    if head is None or not (head.get("messages") or head.get("input") or head.get("instructions")):
        return None
    # each part's leading 16 KiB (prompt_text's limit): a system prompt longer than that still
    # leaves the first user message in the key, and a photo's megabytes are not all hashed
    parts = [prompt_text({k: head[k] for k in ("model", "tools", "instructions") if k in head})]
    items = head.get("messages", head.get("input"))
    for item in items if isinstance(items, list) else ([] if items is None else [items]):
        parts.append(prompt_text({"messages": [item]} if isinstance(item, dict) else {"input": item}))
    text = "\x1d".join(parts).encode("utf-8", "surrogatepass")
    key = hashlib.sha256(secret.encode()).digest()  # any secret length -> BLAKE2b's 32-byte key
    return "llmc-" + hashlib.blake2b(text, key=key, person=_PERSON, digest_size=16).hexdigest()


def refused(status: int, raw: bytes) -> bool:
    """True when an error answer says the origin does not take the field: a 400 or 422 (a
    validation error: the request was not run) whose body names ``prompt_cache_key``
    (OpenAI-style ``param``, an "unrecognized argument" text, pydantic's ``extra_forbidden``)."""
    return status in (400, 422) and FIELD.encode() in raw
