# Generated from llmclient/api/_async/passthrough.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""What is passed through to the official sync client: the httpx transport it sends through,
what its context managers and streams are wrapped in, and the types editors see
(``api/passthrough.py`` tells the whole story)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from ...pipeline.tracing import new_trace_context
from ...transport.lanes import TransportSettings, shared_sync_transport
from ..passthrough_errors import httpx2_errors, translated

if TYPE_CHECKING:
    from openai import OpenAI
    from openai import resources as r
    from openai._client import OpenAIWithRawResponse, OpenAIWithStreamedResponse
    from openai.resources.conversations import Conversations
    from openai.resources.realtime import Realtime
    from openai.resources.webhooks import Webhooks

__all__ = ["ManagedIO", "PassthroughTypes", "_Adapter", "sync_httpx2_client"]


def _trace(request: httpx.Request) -> None:
    """The headers every llmclient request carries; a caller's own traceparent is continued."""
    context = new_trace_context(request.headers.get("traceparent"), request.headers.get("tracestate"))
    for key, value in context.headers().items():
        if key != "x-request-id" or key not in request.headers:
            request.headers[key] = value


class _Adapter(httpx.BaseTransport):
    """httpx transport interface over the shared SyncTransport (which closes with close_all)."""

    def __init__(self, settings: TransportSettings) -> None:
        self._settings = settings

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()  # a multipart upload is a stream: our connections send whole bodies
        _trace(request)
        return shared_sync_transport(self._settings).send(request)


def sync_httpx2_client(settings: TransportSettings, timeout: Any) -> Any:
    """An ``httpx2`` client (what anthropic 2.x sends with) over llmclient's shared connections:
    ``httpx2`` keeps httpx's transport interface under its own classes, so each request is
    handed across as an ``httpx.Request`` and the answer streamed back as an ``httpx2.Response``."""
    import httpx2  # comes with anthropic 2.x: only its pass-through needs it

    class Stream(httpx2.SyncByteStream):
        """The body of an answer from llmclient's transport, read as the official client reads."""

        def __init__(self, response: httpx.Response) -> None:
            self._response = response

        def __iter__(self) -> Any:
            with httpx2_errors(httpx2, None):
                for chunk in self._response.iter_raw():
                    yield chunk

        def close(self) -> None:
            self._response.close()

    class Adapter(httpx2.BaseTransport):
        def handle_request(self, request: Any) -> Any:
            body = request.read()
            sent = httpx.Request(request.method, str(request.url), headers=request.headers.raw, content=body,
                                 extensions={k: v for k, v in request.extensions.items() if k == "timeout"})
            _trace(sent)
            with httpx2_errors(httpx2, request):
                response = shared_sync_transport(settings).send(sent)
            return httpx2.Response(response.status_code, headers=response.headers.raw, stream=Stream(response),
                                   request=request, extensions={k: v for k, v in response.extensions.items()
                                                                if k in ("http_version", "reason_phrase")})

    return httpx2.Client(transport=Adapter(), timeout=timeout, follow_redirects=True)


class ManagedIO:
    """``_Managed``'s entry, exit and iteration (``with``, ``for``)."""

    __slots__ = ()

    _target: Any

    if TYPE_CHECKING:  # _Managed's own, used here
        @staticmethod
        def _enter(enter: Callable[[], Any]) -> Any: ...

    def __enter__(self) -> Any:
        return self._enter(self._target.__enter__)

    def __exit__(self, *exc: Any) -> Any:
        return self._target.__exit__(*exc)

    def __iter__(self) -> Any:  # a Stream / ResponseStream: iterated, errors mapped
        it = self._target.__iter__()
        while True:
            with translated():
                try:
                    item = it.__next__()
                except StopIteration:
                    return
            yield item


class PassthroughTypes:
    """The official sync client's attributes that ``SyncPassthrough`` passes through, as editors
    and mypy see them (at run time they are ``_Passthrough``'s properties)."""

    if TYPE_CHECKING:
        admin: r.Admin
        audio: r.Audio
        batches: r.Batches
        containers: r.Containers
        conversations: Conversations
        evals: r.Evals
        files: r.Files
        fine_tuning: r.FineTuning
        images: r.Images
        moderations: r.Moderations
        realtime: Realtime
        uploads: r.Uploads
        vector_stores: r.VectorStores
        videos: r.Videos
        webhooks: Webhooks
        with_raw_response: OpenAIWithRawResponse
        with_streaming_response: OpenAIWithStreamedResponse
        get = OpenAI.get
        post = OpenAI.post
        patch = OpenAI.patch
        put = OpenAI.put
        delete = OpenAI.delete
        get_api_list = OpenAI.get_api_list
        request = OpenAI.request
        webhook_secret: str | None
