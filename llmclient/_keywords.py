"""Unknown keywords raise ``TypeError``, as the official client's do: ``OpenAI(bogus_option=2)``
and ``chat.completions.create(..., temprature=0.2)`` fail before anything is sent, and the
message names the closest real keyword. A field the API has and the installed ``openai`` does
not know yet goes in ``extra_body``, the official way.

The names are the installed official client's own (its ``__init__`` and ``create``
signatures), read once; without ``openai`` the constructor knows the official-only settings
below and ``create`` checks nothing (without ``openai``, nothing changes).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Collection, Iterable
from typing import Any

__all__ = ["check_keywords", "create_params", "official_settings", "unknown_keyword_error"]

# The official client's constructor keywords that llmclient does not take itself (openai 3.63):
# kept for the pass-through resources' client (``api/passthrough.py``).
OFFICIAL_ONLY_SETTINGS = frozenset({
    "admin_api_key", "workload_identity", "webhook_secret", "provider", "data_residency",
    "websocket_base_url", "_strict_response_validation", "_enforce_credentials",
})

# The official ``create`` each llmclient endpoint stands for, as the TypedDict of its body
# (module, class; ``openai.types``, loaded with the response types already) and whether it
# takes ``stream``: the same names as the method's signature (a test holds them to it), without
# importing ``openai.resources`` (some 20 modules more on the first call).
_PARAMS_OF = {
    "/chat/completions": ("openai.types.chat.completion_create_params", "CompletionCreateParamsBase", True),
    "/completions": ("openai.types.completion_create_params", "CompletionCreateParamsBase", True),
    "/embeddings": ("openai.types.embedding_create_params", "EmbeddingCreateParams", False),
    "/responses": ("openai.types.responses.response_create_params", "ResponseCreateParamsBase", True),
}
# What every official ``create`` takes besides its body's fields.
_REQUEST_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


def unknown_keyword_error(where: str, given: Iterable[str], known: Collection[str]) -> TypeError | None:
    """The TypeError for the first of ``given`` not in ``known``, naming the closest known
    keyword (the official wording: "got an unexpected keyword argument"); None if all known."""
    unknown = [name for name in given if name not in known]
    if not unknown:
        return None
    import difflib  # only for the message of an error: not on every call's path

    name = unknown[0]
    close = difflib.get_close_matches(name, [k for k in known if not k.startswith("_")], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    more = "" if "create" not in where else " (a field the installed openai does not know goes in extra_body)"
    return TypeError(f"{where} got an unexpected keyword argument {name!r}{hint}{more}")


def check_keywords(where: str, given: Iterable[str], known: Collection[str]) -> None:
    error = unknown_keyword_error(where, given, known)
    if error is not None:
        raise error


def official_settings(cls_name: str) -> frozenset[str]:
    """The official client's constructor keywords (``OpenAI``, ``AzureOpenAI`` ...), from the
    installed ``openai``; without it, the official-only ones llmclient knows."""
    try:
        import openai  # the official signature, only when a keyword is not llmclient's own
    except ImportError:
        return OFFICIAL_ONLY_SETTINGS
    cls = getattr(openai, cls_name, openai.OpenAI)
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self"}


_UNSET: Any = object()
_known: dict[str, frozenset[str] | None] = {}


def create_params(path: str, own: Collection[str]) -> frozenset[str] | None:
    """The keywords ``create`` takes for ``path``: the official signature's (of the installed
    ``openai``) and llmclient's own per-call options ``own``; None (no check) when ``openai``
    is not used (not installed, or ``LLMCLIENT_TYPES=light`` and not imported)."""
    known = _known.get(path, _UNSET)
    if known is _UNSET:
        known = _known[path] = _load(path, own)
    return known


def _load(path: str, own: Collection[str]) -> frozenset[str] | None:
    target = _PARAMS_OF.get(path)
    if target is None:
        return None
    if "openai" not in sys.modules and os.environ.get("LLMCLIENT_TYPES", "").lower() == "light":
        return None
    try:
        body = getattr(importlib.import_module(target[0]), target[1])
    except (ImportError, AttributeError):
        return None
    names = frozenset(body.__required_keys__) | frozenset(body.__optional_keys__) | _REQUEST_OPTIONS
    return names | frozenset(own) | (frozenset({"stream"}) if target[2] else frozenset())
