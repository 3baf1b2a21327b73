# Generated from llmclient/layers/_async/read.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Reading an error answer's body (small: an error message) and closing it, for the layers that
decide from it (retry, encode, route); the body stays readable from the response afterwards."""

from __future__ import annotations

import httpx

__all__ = ["read_error_body"]


def read_error_body(response: httpx.Response) -> bytes:
    """The body of an error answer (b"" when the connection failed while it came), closed."""
    try:
        return response.read()
    except httpx.TransportError:
        response._content = b""  # what later readers of the response see
        return b""
    finally:
        response.close()
