# Generated from llmclient/api/_async/response.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""``with resource.with_streaming_response.create(...) as response``: the response's reads
and the context manager that sends and closes it (what they share is ``api/response_base.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx

from ..._synchronization import Work
from ..response_base import ResponseBase, StreamAlreadyConsumed

if TYPE_CHECKING:
    from ..raw import RawResponse

__all__ = ["APIResponse", "ResponseContextManager"]


class APIResponse(ResponseBase):
    """What ``with ... with_streaming_response.create(...) as response`` gives."""

    def parse(self, *, to: Any = None) -> Any:
        if not self._parses_a_stream(to):
            self.read()
        return self._cast(to)

    def read(self) -> bytes:
        self._before_read()
        try:
            return self.http_response.read()
        except httpx.StreamConsumed as exc:
            raise StreamAlreadyConsumed() from exc

    def text(self) -> str:
        self.read()
        return self.http_response.text

    def json(self) -> object:
        self.read()
        return self.http_response.json()

    def close(self) -> None:
        self._closed = True
        self.http_response.close()

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        self._before_stream()
        for chunk in self.http_response.iter_bytes(chunk_size):
            yield chunk

    def iter_text(self, chunk_size: int | None = None) -> Iterator[str]:
        self._before_stream()
        for chunk in self.http_response.iter_text(chunk_size):
            yield chunk

    def iter_lines(self) -> Iterator[str]:
        self._before_stream()
        for line in self.http_response.iter_lines():
            yield line


class ResponseContextManager:
    """Sends on ``__enter__``, closes the response on ``__exit__`` (the official class's name)."""

    def __init__(self, send: Work[RawResponse]) -> None:
        self._send = send
        self._response: APIResponse | None = None

    def __enter__(self) -> APIResponse:
        self._response = APIResponse(self._send())
        return self._response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()
