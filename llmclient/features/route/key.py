"""The routing key of a call: what a server's prefix (KV) cache would see first.

A server reuses the KV blocks of the longest prompt prefix it has computed before; what it
shares between calls is their *leading* text: the tools and system prompt, then a
conversation's earlier turns. The key is therefore

* the app's own ``prompt_cache_key`` when it set one (OpenAI's routing hint), else its
  ``user`` (Anthropic's ``metadata.user_id``): the app said which calls belong together;
* else a chain of block hashes over the leading characters of the rendered prompt
  (``BLOCK_CHARS`` each, at most ``MAX_BLOCKS``): ``h_i = H(h_(i-1) || block_i)``, as a
  server names its KV blocks. The chain lets the router find the replica that already holds
  the longest part of the prompt (``affinity.PrefixIndex``: a conversation's next turn). The
  whole leading text (its last block chained with the rest) places the call on the ring: the same prompt (or two prompts sharing their
  first ``MAX_BLOCKS`` blocks: a long conversation's turns) lands on the same replica in every
  process, while calls that share only a system prompt spread over the fleet (a system prompt
  costs each replica one prefill; what makes a session's turns fast is its own history).

Pure and stable across processes (blake2b, never Python's salted ``hash``); a hash never
reveals the prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["BLOCK_CHARS", "MAX_BLOCKS", "RouteKey", "prompt_text", "route_key"]

BLOCK_CHARS = 256  # ~64 tokens of English: four of the reference server's 16-token KV blocks
MAX_BLOCKS = 64    # 16 KiB of leading text is enough to tell conversations apart


@dataclass(frozen=True, slots=True)
class RouteKey:
    """``ring``: where the call sits on the ring (None: no key, any replica will do);
    ``blocks``: the chained hashes of the prompt's full leading blocks (empty for an app key)."""

    ring: int | None
    blocks: tuple[int, ...] = ()


_NO_KEY = RouteKey(None)


def _h(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if text is None:  # an image or audio part: its reference stands for it
                    ref = part.get("image_url") or part.get("input_audio") or part.get("file") or part
                    text = orjson.dumps(ref, option=orjson.OPT_SORT_KEYS).decode()
                parts.append(str(text))
            else:
                parts.append(str(part))
        return "".join(parts)
    return "" if content is None else orjson.dumps(content, option=orjson.OPT_SORT_KEYS).decode()


def prompt_text(body: dict[str, Any], limit: int = BLOCK_CHARS * MAX_BLOCKS) -> str:
    """The leading ``limit`` characters of the prompt as a server renders it, roughly: model,
    tools, then each message's role and content (or ``instructions`` + ``input``, or
    ``prompt``); on Anthropic's Messages API the top-level ``system`` (text or text blocks)
    comes before the messages, as Anthropic's prompt cache orders them (tools, system,
    messages). Only the order and the text matter: the same prefix gives the same text."""
    out: list[str] = [str(body.get("model", "")), "\x00"]
    size = 0
    tools = body.get("tools")
    if tools:
        out.append(orjson.dumps(tools, option=orjson.OPT_SORT_KEYS).decode())
    items: list[Any] = []
    if "messages" in body:
        system = body.get("system")
        if system:
            items.append({"role": "system", "content": system})
        items.extend(body.get("messages") or ())
    else:
        if body.get("instructions"):
            items.append({"role": "system", "content": body["instructions"]})
        for name in ("input", "prompt"):
            value = body.get(name)
            if isinstance(value, list) and value and isinstance(value[0], dict):
                items.extend(value)
            elif value is not None:
                items.append({"role": "user", "content": value if isinstance(value, str) else
                              orjson.dumps(value).decode()})
    size = sum(len(s) for s in out)
    for item in items:
        if size >= limit:
            break
        if isinstance(item, dict):
            piece = f"\x1e{item.get('role', item.get('type', ''))}\x1f{_content_text(item.get('content'))}"
        else:
            piece = f"\x1e{item}"
        out.append(piece)
        size += len(piece)
    return "".join(out)[:limit]


def route_key(path: str, body: dict[str, Any] | None) -> RouteKey:
    """The call's :class:`RouteKey`. No body, or an endpoint no prefix cache serves
    (embeddings, models): no key."""
    if not body or path.startswith("/embeddings"):
        return _NO_KEY
    app_key = body.get("prompt_cache_key") or body.get("user")
    if not app_key:
        metadata = body.get("metadata")
        app_key = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(app_key, str) and app_key:
        return RouteKey(_h(b"app\x00" + app_key.encode()))
    text = prompt_text(body).encode("utf-8", "surrogatepass")
    if not text:
        return _NO_KEY
    blocks: list[int] = []
    digest = b""
    for start in range(0, len(text) - BLOCK_CHARS + 1, BLOCK_CHARS):
        d = hashlib.blake2b(digest + text[start:start + BLOCK_CHARS], digest_size=8).digest()
        digest = d
        blocks.append(int.from_bytes(d, "big"))
    tail = text[len(blocks) * BLOCK_CHARS:]
    ring = blocks[-1] if blocks and not tail else _h(b"ring\x00" + digest + tail)
    return RouteKey(ring, tuple(blocks))
