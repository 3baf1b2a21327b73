"""``.with_raw_response``'s result: the HTTP response, and ``parse()`` for the usual object."""

from __future__ import annotations

import datetime
from typing import Any

import httpx

__all__ = ["RawResponse"]


class RawResponse:
    """``.with_raw_response`` result: the HTTP response plus ``parse()`` for the usual object."""

    def __init__(self, http_response: httpx.Response, parsed: Any) -> None:
        self.http_response = http_response
        self._parsed = parsed

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def request_id(self) -> str | None:
        return self.http_response.headers.get("x-request-id")

    @property
    def http_version(self) -> str:
        return self.http_response.http_version

    @property
    def http_request(self) -> httpx.Request:
        return self.http_response.request

    @property
    def url(self) -> httpx.URL:
        return self.http_response.request.url

    @property
    def method(self) -> str:
        return self.http_response.request.method

    @property
    def is_closed(self) -> bool:
        return self.http_response.is_closed

    @property
    def retries_taken(self) -> int:
        record = getattr(self._parsed, "timings", None)
        return int(getattr(record, "retries", 0) or 0)

    @property
    def elapsed(self) -> datetime.timedelta:
        """Request sent to the last byte read (to the headers while a stream is unread), as the
        official client's ``http_response.elapsed``."""
        record = getattr(self._parsed, "timings", None)
        ms = getattr(record, "total_ms", None) or getattr(record, "first_byte_ms", None) or 0.0
        return datetime.timedelta(milliseconds=ms)

    @property
    def content(self) -> bytes:
        return self.http_response.content

    @property
    def text(self) -> str:
        return self.http_response.text

    def parse(self) -> Any:
        return self._parsed
