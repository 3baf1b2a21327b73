"""What one call will cost against a token budget, estimated before it is sent (pure).

OpenAI counts a request against its tokens-per-minute budget when it arrives, before it runs:
the prompt's tokens estimated from its characters, plus the most it may generate (``max_tokens``
or ``max_completion_tokens``, times ``n``). The client makes the same estimate, so that its
pacing and the server's count agree; where they differ the server's own headers correct the
model after each answer (``budget.learn``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "IMAGE_TOKENS", "estimate_tokens", "prompt_chars"]

# OpenAI's rule of thumb ("Counting tokens", help.openai.com, recorded 2026-12): a token is
# about 4 characters of English text.
CHARS_PER_TOKEN = 4
# An image part counts as a low-detail image (OpenAI vision guide, 2026-12: 85 base tokens).
IMAGE_TOKENS = 85


def _text_chars(value: Any) -> tuple[int, int]:
    """(characters, image parts) in a message content, an input, or a list of them."""
    if isinstance(value, str):
        return len(value), 0
    if isinstance(value, Mapping):
        if value.get("type") in ("image_url", "input_image"):
            return 0, 1
        chars = images = 0
        for key in ("content", "text", "input_text", "arguments"):
            c, i = _text_chars(value.get(key))
            chars, images = chars + c, images + i
        return chars, images
    if isinstance(value, (list, tuple)):
        chars = images = 0
        for item in value:
            if isinstance(item, int):  # a pre-tokenized prompt: one token each
                chars += CHARS_PER_TOKEN
                continue
            c, i = _text_chars(item)
            chars, images = chars + c, images + i
        return chars, images
    return 0, 0


def prompt_chars(body: Mapping[str, Any]) -> tuple[int, int]:
    """Characters and image parts of what a request sends to be read (messages, prompt,
    input, instructions)."""
    chars = images = 0
    for key in ("messages", "prompt", "input", "instructions"):
        c, i = _text_chars(body.get(key))
        chars, images = chars + c, images + i
    return chars, images


def estimate_tokens(body: Mapping[str, Any] | None) -> int:
    """The tokens a request will be counted for: prompt estimate plus its generation cap
    (``max_completion_tokens``, ``max_tokens`` or ``max_output_tokens``) times ``n``; a call
    without a cap is counted for its prompt alone."""
    if not body:
        return 0
    chars, images = prompt_chars(body)
    prompt = -(-chars // CHARS_PER_TOKEN) + images * IMAGE_TOKENS
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or body.get("max_output_tokens") or 0
    n = body.get("n") or 1
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
        cap = 0
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        n = 1
    return prompt + cap * n
