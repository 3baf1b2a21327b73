"""``DefaultHttpxClient`` / ``DefaultAsyncHttpxClient``: httpx clients with the official
client's defaults (timeout, connection limits, redirects followed), for ``http_client=``
when a proxy or custom transport is needed. A client passed as ``http_client`` sends every
request (llmclient's own HTTP/2 connections are then not used)."""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["DefaultAsyncHttpxClient", "DefaultHttpxClient"]

# openai/_constants.py: DEFAULT_TIMEOUT and DEFAULT_CONNECTION_LIMITS.
DEFAULT_TIMEOUT = httpx.Timeout(timeout=600.0, connect=5.0)
DEFAULT_CONNECTION_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def _defaults(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("timeout", DEFAULT_TIMEOUT)
    kwargs.setdefault("limits", DEFAULT_CONNECTION_LIMITS)
    kwargs.setdefault("follow_redirects", True)
    return kwargs


class DefaultHttpxClient(httpx.Client):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_defaults(kwargs))


class DefaultAsyncHttpxClient(httpx.AsyncClient):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_defaults(kwargs))


# -- sending through a caller's http_client --------------------------------------------------
#
# The official client builds each request with ``http_client.build_request(...)``: the
# client's own headers go under the request's (ours win on a clash), its params before the
# request's, its cookies too; ``send`` then applies its auth and event hooks. llmclient builds
# its request first (tracing, codecs, compression) and hands it over the same way. An httpx2
# client (what ``openai.DefaultHttpxClient`` is since openai 3.x) gets an httpx2 request, and
# its response and errors come back as httpx's, which the rest of llmclient reads.


def is_httpx2(http_client: Any) -> bool:
    return type(http_client).__module__.split(".", 1)[0] == "httpx2" or any(
        c.__module__.split(".", 1)[0] == "httpx2" for c in type(http_client).__mro__[1:])


def client_headers(http_client: Any) -> dict[str, str]:
    """The caller's client's own headers, lower-cased (for the credential scope)."""
    headers = getattr(http_client, "headers", None)
    return {k.lower(): v for k, v in headers.items()} if headers is not None else {}


def _rebuild(http_client: Any, request: httpx.Request) -> Any:
    url = request.url
    return http_client.build_request(
        request.method,
        str(url.copy_with(query=None)),
        params=list(url.params.multi_items()) or None,
        headers=list(request.headers.multi_items()),
        content=request.content if request.content else None,
        extensions=dict(request.extensions),
    )


def send_through(http_client: Any, request: httpx.Request) -> httpx.Response:
    """``http_client.send`` of ``request`` merged with the client's headers, params, cookies."""
    if not is_httpx2(http_client):
        return http_client.send(_rebuild(http_client, request), stream=True)
    try:
        theirs = http_client.send(_rebuild(http_client, request), stream=True)
    except Exception as exc:
        raise _as_httpx(exc, request) from exc
    return _response_of(theirs, request, _Sync2Stream(theirs, request))


async def asend_through(http_client: Any, request: httpx.Request) -> httpx.Response:
    """See :func:`send_through` (an ``httpx.AsyncClient`` or ``httpx2.AsyncClient``)."""
    if not is_httpx2(http_client):
        return await http_client.send(_rebuild(http_client, request), stream=True)
    try:
        theirs = await http_client.send(_rebuild(http_client, request), stream=True)
    except Exception as exc:
        raise _as_httpx(exc, request) from exc
    return _response_of(theirs, request, _Async2Stream(theirs, request))


def _response_of(theirs: Any, request: httpx.Request, stream: Any) -> httpx.Response:
    response = httpx.Response(
        theirs.status_code,
        headers=list(theirs.headers.multi_items()),
        stream=stream,
        request=request,
        extensions={"http_version": theirs.http_version.encode("ascii", "replace"),
                    "reason_phrase": theirs.reason_phrase.encode("ascii", "replace")},
    )
    return response


def _as_httpx(exc: Exception, request: httpx.Request) -> Exception:
    """httpx2's error as the httpx class of the same name (the retry rules read those)."""
    if type(exc).__module__.split(".", 1)[0] != "httpx2":
        return exc
    for klass in type(exc).__mro__:
        ours = getattr(httpx, klass.__name__, None)
        if isinstance(ours, type) and issubclass(ours, httpx.TransportError):
            return ours(str(exc), request=request)
        if isinstance(ours, type) and issubclass(ours, httpx.HTTPError):
            return ours(str(exc))
    return exc


class _Sync2Stream(httpx.SyncByteStream):
    def __init__(self, response: Any, request: httpx.Request) -> None:
        self._response, self._request = response, request

    def __iter__(self) -> Any:
        try:
            yield from self._response.iter_raw()
        except Exception as exc:
            raise _as_httpx(exc, self._request) from exc

    def close(self) -> None:
        self._response.close()


class _Async2Stream(httpx.AsyncByteStream):
    def __init__(self, response: Any, request: httpx.Request) -> None:
        self._response, self._request = response, request

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except Exception as exc:
            raise _as_httpx(exc, self._request) from exc

    async def aclose(self) -> None:
        await self._response.aclose()
