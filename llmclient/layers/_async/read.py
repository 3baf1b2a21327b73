"""Reading an error answer's body (small: an error message) and closing it, for the layers that
decide from it (retry, encode, route); the body stays readable from the response afterwards."""

from __future__ import annotations

import httpx

__all__ = ["aread_error_body"]


async def aread_error_body(response: httpx.Response) -> bytes:
    """The body of an error answer (b"" when the connection failed while it came), closed."""
    try:
        return await response.aread()
    except httpx.TransportError:
        response._content = b""  # what later readers of the response see
        return b""
    finally:
        await response.aclose()
