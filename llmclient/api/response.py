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

import datetime
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx

from .._errors import OpenAIError

if TYPE_CHECKING:
    from .raw import RawResponse

__all__ = [
    "APIResponse", "AsyncAPIResponse", "AsyncResponseContextManager", "ResponseContextManager",
    "StreamAlreadyConsumed",
]


class StreamAlreadyConsumed(OpenAIError):
    """The body was streamed (``iter_lines()`` and the like) and then read whole (the official
    class and message)."""

    def __init__(self) -> None:
        super().__init__(
            "Attempted to read or stream some content, but the content has already been streamed. "
            "This could be due to attempting to stream the response content more than once.\n\n"
            "You can fix this by manually accumulating the response content while streaming or by "
            "calling `.read()` before starting to stream."
        )


class _Base:
    """A whole answer's body was read (and decoded) by llmclient's pipeline before the block
    starts; what the caller then sees of it is what an unread body would show: closed once read
    or streamed, an error for reading it whole after streaming it, as in the official client."""

    def __init__(self, raw: RawResponse) -> None:
        self._raw = raw
        self.http_response: httpx.Response = raw.http_response
        self.retries_taken: int = raw.retries_taken
        self._buffered = hasattr(raw.http_response, "_content")
        self._read = self._streamed = self._closed = False

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def http_request(self) -> httpx.Request:
        return self.http_response.request

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def url(self) -> httpx.URL:
        return self.http_response.url

    @property
    def method(self) -> str:
        return self.http_request.method

    @property
    def http_version(self) -> str:
        return self.http_response.http_version

    @property
    def elapsed(self) -> datetime.timedelta:
        return self._raw.elapsed

    @property
    def is_closed(self) -> bool:
        if self._buffered:
            return self._read or self._streamed or self._closed
        return self.http_response.is_closed

    @property
    def request_id(self) -> str | None:
        return self.http_response.headers.get("x-request-id")

    def _before_read(self) -> None:
        if self._buffered and self._streamed and not self._read:
            raise StreamAlreadyConsumed()
        self._read = True

    def _before_stream(self) -> None:
        if self._buffered and self._streamed and not self._read:
            raise httpx.StreamConsumed()
        self._streamed = True

    def _cast(self, to: Any) -> Any:
        """``parse(to=...)``: the body as ``str``, ``bytes``, ``httpx.Response``, plain JSON
        (``object``/``dict``/``list``) or a pydantic model; else the call's own result."""
        if to is None:
            return self._raw.parse()
        if to is httpx.Response:
            return self.http_response
        if to is str:
            return self.http_response.text
        if to is bytes:
            return self.http_response.content
        data = self.http_response.json()
        validate = getattr(to, "model_validate", None)
        return validate(data) if validate is not None else data

    def _parses_a_stream(self, to: Any) -> bool:
        return to is None and not self._buffered

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [{self.status_code}] type={type(self._raw._parsed)}>"


class APIResponse(_Base):
    """What ``with ... with_streaming_response.create(...) as response`` gives (sync)."""

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
        yield from self.http_response.iter_bytes(chunk_size)

    def iter_text(self, chunk_size: int | None = None) -> Iterator[str]:
        self._before_stream()
        yield from self.http_response.iter_text(chunk_size)

    def iter_lines(self) -> Iterator[str]:
        self._before_stream()
        yield from self.http_response.iter_lines()


class AsyncAPIResponse(_Base):
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


class ResponseContextManager:
    """Sends on ``__enter__``, closes the response on ``__exit__`` (the official class's name)."""

    def __init__(self, send: Callable[[], RawResponse]) -> None:
        self._send = send
        self._response: APIResponse | None = None

    def __enter__(self) -> APIResponse:
        self._response = APIResponse(self._send())
        return self._response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()


class AsyncResponseContextManager:
    """See :class:`ResponseContextManager` (``async with``)."""

    def __init__(self, send: Callable[[], Awaitable[RawResponse]]) -> None:
        self._send = send
        self._response: AsyncAPIResponse | None = None

    async def __aenter__(self) -> AsyncAPIResponse:
        self._response = AsyncAPIResponse(await self._send())
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            await self._response.close()
