"""What is passed through to the official async client: the httpx transport it sends through,
what its context managers and streams are wrapped in, and the types editors see
(``api/passthrough.py`` tells the whole story)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from ...pipeline.tracing import new_trace_context
from ...transport.lanes import TransportSettings, shared_async_transport
from ..passthrough_errors import translated

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai import resources as r
    from openai._client import AsyncOpenAIWithRawResponse, AsyncOpenAIWithStreamedResponse
    from openai.resources.conversations import AsyncConversations
    from openai.resources.realtime import AsyncRealtime
    from openai.resources.webhooks import AsyncWebhooks

__all__ = ["AsyncManagedIO", "AsyncPassthroughTypes", "_AsyncAdapter"]


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
