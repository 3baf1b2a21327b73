"""What is passed through to the official async client: the httpx transport it sends through,
what its context managers and streams are wrapped in, and the types editors see
(``api/passthrough.py`` tells the whole story)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from ...pipeline.tracing import new_trace_context
from ...transport.lanes import TransportSettings, shared_async_transport
from ..passthrough_errors import httpx2_errors, translated

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai import resources as r
    from openai._client import AsyncOpenAIWithRawResponse, AsyncOpenAIWithStreamedResponse
    from openai.resources.conversations import AsyncConversations
    from openai.resources.realtime import AsyncRealtime
    from openai.resources.webhooks import AsyncWebhooks

__all__ = ["AsyncManagedIO", "AsyncPassthroughTypes", "_AsyncAdapter", "async_httpx2_client"]


def _trace(request: httpx.Request) -> None:
    """The headers every llmclient request carries; a caller's own traceparent is continued."""
    context = new_trace_context(request.headers.get("traceparent"), request.headers.get("tracestate"))
    for key, value in context.headers().items():
        if key != "x-request-id" or key not in request.headers:
            request.headers[key] = value


class _AsyncAdapter(httpx.AsyncBaseTransport):
    """httpx transport interface over the shared AsyncTransport (which closes with aclose_all)."""

    def __init__(self, settings: TransportSettings) -> None:
        self._settings = settings

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:  # unasync: sync=def handle_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()  # a multipart upload is a stream: our connections send whole bodies
        _trace(request)
        return await shared_async_transport(self._settings).send(request)


def async_httpx2_client(settings: TransportSettings, timeout: Any) -> Any:
    """An ``httpx2`` client (what anthropic 2.x sends with) over llmclient's shared connections:
    ``httpx2`` keeps httpx's transport interface under its own classes, so each request is
    handed across as an ``httpx.Request`` and the answer streamed back as an ``httpx2.Response``."""
    import httpx2  # comes with anthropic 2.x: only its pass-through needs it

    class Stream(httpx2.AsyncByteStream):  # unasync: sync=class Stream(httpx2.SyncByteStream):
        """The body of an answer from llmclient's transport, read as the official client reads."""

        def __init__(self, response: httpx.Response) -> None:
            self._response = response

        async def __aiter__(self) -> Any:
            with httpx2_errors(httpx2, None):
                async for chunk in self._response.aiter_raw():
                    yield chunk

        async def aclose(self) -> None:
            await self._response.aclose()

    class Adapter(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:  # unasync: sync=def handle_request(self, request: Any) -> Any:
            body = await request.aread()
            sent = httpx.Request(request.method, str(request.url), headers=request.headers.raw, content=body,
                                 extensions={k: v for k, v in request.extensions.items() if k == "timeout"})
            _trace(sent)
            with httpx2_errors(httpx2, request):
                response = await shared_async_transport(settings).send(sent)
            return httpx2.Response(response.status_code, headers=response.headers.raw, stream=Stream(response),
                                   request=request, extensions={k: v for k, v in response.extensions.items()
                                                                if k in ("http_version", "reason_phrase")})

    return httpx2.AsyncClient(transport=Adapter(), timeout=timeout, follow_redirects=True)


class AsyncManagedIO:
    """``_Managed``'s entry, exit and iteration (``async with``, ``async for``)."""

    __slots__ = ()

    _target: Any

    if TYPE_CHECKING:  # _Managed's own, used here
        @staticmethod
        def _enter(enter: Callable[[], Any]) -> Any: ...

    async def __aenter__(self) -> Any:
        return await self._enter(self._target.__aenter__)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._target.__aexit__(*exc)

    async def __aiter__(self) -> Any:  # a Stream / ResponseStream: iterated, errors mapped
        it = self._target.__aiter__()
        while True:
            with translated():
                try:
                    item = await it.__anext__()
                except StopAsyncIteration:
                    return
            yield item


class AsyncPassthroughTypes:
    """The official async client's attributes that ``AsyncPassthrough`` passes through, as editors
    and mypy see them (at run time they are ``_Passthrough``'s properties)."""

    if TYPE_CHECKING:
        admin: r.AsyncAdmin
        audio: r.AsyncAudio
        batches: r.AsyncBatches
        containers: r.AsyncContainers
        conversations: AsyncConversations
        evals: r.AsyncEvals
        files: r.AsyncFiles
        fine_tuning: r.AsyncFineTuning
        images: r.AsyncImages
        moderations: r.AsyncModerations
        realtime: AsyncRealtime
        uploads: r.AsyncUploads
        vector_stores: r.AsyncVectorStores
        videos: r.AsyncVideos
        webhooks: AsyncWebhooks
        with_raw_response: AsyncOpenAIWithRawResponse
        with_streaming_response: AsyncOpenAIWithStreamedResponse
        get = AsyncOpenAI.get
        post = AsyncOpenAI.post
        patch = AsyncOpenAI.patch
        put = AsyncOpenAI.put
        delete = AsyncOpenAI.delete
        get_api_list = AsyncOpenAI.get_api_list
        request = AsyncOpenAI.request
        webhook_secret: str | None
