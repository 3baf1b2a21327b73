"""What a feature may do with the client it is attached to, and nothing more: a feature
(speculation today) gets a :class:`Port`, never the client or its chain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..pipeline.call import Call

__all__ = ["Port"]


@dataclass(frozen=True, slots=True)
class Port:
    """``build`` makes a :class:`~llmclient.pipeline.call.Call` as the client makes one (its base
    URL, headers, credential scope, timeout and retries); ``request`` runs one through the whole
    chain (``request(call, make, raw=False, stream_make=None)``; the async client's returns a
    coroutine); ``lookup`` is the cache layer's look-up alone (a handle or None; a coroutine for
    the async client) and ``cache_for`` the client's response cache for a call, or None.
    ``options(**fields)`` makes call options and ``split(params)`` takes a call's options out of
    ``create(**params)`` (``(body, options)``), as the client's resources do; ``chat_completion``
    is the face's type of a chat answer and ``chat_path`` the path of its chat call
    (``/chat/completions``; the Anthropic face's ``/v1/messages``)."""

    build: Callable[..., Call]
    request: Callable[..., Any]
    lookup: Callable[[Call], Any]
    cache_for: Callable[[Call], Any]
    defaults: Any  # the client's own CallOptions (wire, images, prefetch, hedge)
    has_cache: bool  # whether the client has a response cache of its own
    is_async: bool
    options: Callable[..., Any]
    split: Callable[[dict[str, Any]], tuple[dict[str, Any], Any]]
    chat_completion: Any
    chat_path: str = "/chat/completions"
