"""``resource.with_streaming_response.create(...)``: the official context managers.

``with client.chat.completions.with_streaming_response.create(...) as response:`` sends the
request on entry (an error status raises there, as in the official client) and gives an
:class:`APIResponse` (``async with``: :class:`AsyncAPIResponse`) with the official surface:
``headers``, ``status_code``, ``url``, ``http_request``, ``elapsed``, ``retries_taken``,
``parse()``, ``read()``, ``text()``, ``json()``, ``iter_bytes()``, ``iter_text()``,
``iter_lines()``; the response is closed on exit. The call runs through llmclient's pipeline
(``_raw=True``): a streamed call's body is read as it comes, a whole answer's body has been
read (and decoded) by the time the block starts.
"""

from __future__ import annotations

from ._async.response import AsyncAPIResponse, AsyncResponseContextManager
from ._sync.response import APIResponse, ResponseContextManager
from .response_base import StreamAlreadyConsumed

__all__ = [
    "APIResponse", "AsyncAPIResponse", "AsyncResponseContextManager", "ResponseContextManager",
    "StreamAlreadyConsumed",
]
