"""``async with resource.with_streaming_response.create(...) as response``: the response's reads
and the context manager that sends and closes it (what they share is ``api/response_base.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from ..._synchronization import AsyncWork
from ..response_base import ResponseBase, StreamAlreadyConsumed

if TYPE_CHECKING:
    from ..raw import RawResponse

__all__ = ["AsyncAPIResponse", "AsyncResponseContextManager"]


class AsyncAPIResponse(ResponseBase):
    """What ``async with ... with_streaming_response.create(...) as response`` gives."""

    async def parse(self, *, to: Any = None) -> Any:
        if not self._parses_a_stream(to):
            await self.read()
        return self._cast(to)

    async def read(self) -> bytes:
        self._before_read()
        try:
            return await self.http_response.aread()
        except httpx.StreamConsumed as exc:
            raise StreamAlreadyConsumed() from exc

    async def text(self) -> str:
        await self.read()
        return self.http_response.text

    async def json(self) -> object:
        await self.read()
        return self.http_response.json()

    async def close(self) -> None:
        self._closed = True
        await self.http_response.aclose()

    async def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        self._before_stream()
        async for chunk in self.http_response.aiter_bytes(chunk_size):
            yield chunk

    async def iter_text(self, chunk_size: int | None = None) -> AsyncIterator[str]:
        self._before_stream()
        async for chunk in self.http_response.aiter_text(chunk_size):
            yield chunk

    async def iter_lines(self) -> AsyncIterator[str]:
        self._before_stream()
        async for line in self.http_response.aiter_lines():
            yield line


class AsyncResponseContextManager:
    """Sends on ``__aenter__``, closes the response on ``__aexit__`` (the official class's name)."""

    def __init__(self, send: AsyncWork[RawResponse]) -> None:
        self._send = send
        self._response: AsyncAPIResponse | None = None

    async def __aenter__(self) -> AsyncAPIResponse:
        self._response = AsyncAPIResponse(await self._send())
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            await self._response.close()
