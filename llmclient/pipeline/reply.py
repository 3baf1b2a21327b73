"""What the chain gives back for one call: a :class:`Reply` (plain data).

The upper layers (trace, images, cache, decode) pass a Reply up; the lower ones (gate, hedge,
retry, encode, route, pace, send) pass up the server's ``httpx.Response`` with its headers read.
``decode`` turns one into the other: a whole answer is read, decoded and made into the face's
object (``result``); a live stream's reply carries what the face's ``Stream`` needs to read it and
to go on after a failure (``decoder``, ``resume``, ``resend``, ``proceed``), plus what runs once it
completed (``on_complete``: the cache's store, then speculation's planning).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from .call import Call

__all__ = ["Reply"]


@dataclass(slots=True, eq=False)
class Reply:
    response: httpx.Response | None  # None: answered without the server (a cache hit, a join)
    value: dict[str, Any] | None = None  # a whole answer as data
    # The face's object: a whole answer's, or a stream replayed from the cache. None: a live
    # stream, which the face wraps in its Stream from the fields below.
    result: Any = None
    decoder: Any = None  # the live stream's decoder (wire.codec.StreamDecoder)
    resume: Callable[[str, int], Any] | None = None  # a cut background stream: the events after N
    resend: Callable[[], Any] | None = None  # a stream that failed before content: sent again
    proceed: Callable[[str, int], Any] | None = None  # a chat stream cut after content: continued
    on_complete: Callable[[Call, list[dict[str, Any]]], None] | None = None
