"""What the official ``with_streaming_response`` context managers give, both kinds: the response's
attributes and the rules for reading it (``api/response.py`` names the public classes; their
reads, of each kind, are ``api/_async/response.py`` and its generated sync twin)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import httpx

from .._errors import OpenAIError

if TYPE_CHECKING:
    from .raw import RawResponse

__all__ = ["ResponseBase", "StreamAlreadyConsumed"]


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


class ResponseBase:
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
