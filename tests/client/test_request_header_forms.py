"""A call's own headers (layers/request._form): the form httpx.Headers gives them, and the
error it raises for one it refuses (pure, no sockets)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llmclient.layers.request import _form


@pytest.mark.parametrize("pair", [
    ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    ("X-Request-ID", "abc"), ("Idempotency-Key", ""), ("x-bytes", b"raw"), (b"X-Raw", b"v"),
])
def test_same_form_as_httpx(pair: tuple[Any, Any]) -> None:
    assert _form(*pair) == httpx.Headers([pair])._list[0]


@pytest.mark.parametrize("pair", [("x-name", "caf\u00e9"), ("caf\u00e9", "v"), ("x-none", None), ("x-int", 3)])
def test_same_error_as_httpx(pair: tuple[Any, Any]) -> None:
    with pytest.raises(Exception) as theirs:
        httpx.Headers([pair])
    with pytest.raises(type(theirs.value)) as ours:
        _form(*pair)
    assert str(ours.value) == str(theirs.value)
