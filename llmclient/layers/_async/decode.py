"""The server's answer made into what the face returns: a whole body read, decoded and made into
the face's object; a stream handed to the face's ``Stream`` with its decoder and how it goes on
after a failure (``pipeline/resume.py`` decides which): a cut background Responses stream resumed
after its last event, a stream that failed before any content sent again, a chat stream cut
after content continued (``stream_resume="continue"``). What goes on after a failure is sent
through the chain from the retry layer down. Always in the chain.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import httpx

from ...features.hedge import CancelToken
from ...pipeline.reply import Reply
from ...pipeline.resume import continuable, continuation_body, resendable, resumable
from ...wire.codec import JSON_CODEC
from ..answer import decode_body, make_object, response_coding, stream_decoder

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Decode", "Layer", "wanted"]

# A sync stream reads on its caller's thread: an early resume (api/early_resume.py) races its
# silent read from a watcher thread, and cancels that read with the call's CancelToken.
ON_EVENT_LOOP = True  # unasync: sync=ON_EVENT_LOOP = False


def wanted(ctx: Context, options: CallOptions) -> bool:
    return True


class Decode:
    __slots__ = ("_again", "_ctx", "_inner")
    needs = "retry"  # what a stream goes on with after a failure: the chain from there down

    def __init__(self, inner: Any, ctx: Context, again: Any) -> None:
        self._inner, self._ctx = inner, ctx
        self._again = again  # the chain from the retry layer down: what a stream goes on with

    async def __call__(self, call: Call) -> Reply:
        if (not ON_EVENT_LOOP and call.cancel is None and call.options.stream_early_resume
                and resumable(call.method, call.path, call.body, call.stream)):
            call.cancel = CancelToken()  # an early resume cancels the silent read (api.early_resume)
        response = await self._inner(call)
        if call.stream:
            return self._stream(call, response)
        try:
            if response_coding(response) is None:
                data = await response.aread()
            else:  # undone by decode_body, under a size cap (httpx would undo it uncapped)
                data = b"".join([piece async for piece in response.aiter_raw()])
        except httpx.TransportError as exc:
            raise self._ctx.errors.connection_error(call, exc, response.request) from exc
        finally:
            await response.aclose()
        record = call.record
        record.bytes_received += response.num_bytes_downloaded  # as on the wire
        record.finish()
        value = decode_body(call, response, data, call.codec)
        obj = self._ctx.finish(call, make_object(call, call.make, value, response), response)
        return Reply(response, value, obj)

    def _stream(self, call: Call, response: httpx.Response) -> Reply:
        method, path, body = call.method, call.path, call.body
        return Reply(
            response, decoder=stream_decoder(call, response, call.codec),
            resume=functools.partial(self._resume, call) if resumable(method, path, body, True) else None,
            resend=functools.partial(self._resend, call) if resendable(method, path, True) else None,
            proceed=(functools.partial(self._continue, call)
                     if continuable(call.options.stream_resume, method, path, body, True) else None),
        )

    async def _resume(self, call: Call, response_id: str, after: int) -> tuple[httpx.Response, Any]:
        """The rest of a cut background stream (``pipeline.resume``): ``GET /responses/{id}?
        stream=true&starting_after=N``, with the call's headers (credentials, a gateway's own),
        trace and timeouts; retried as any GET. Its (response, decoder)."""
        headers = {k: v for k, v in call.headers.items() if k not in ("content-type", "content-encoding")}
        again = self._ctx.build("GET", f"/responses/{response_id}", stream=True, options=call.options,
                                extra_headers=headers, timeout=call.timeout,
                                extra_query={**call.query, "stream": "true", "starting_after": after})
        again.trace = call.trace  # one trace for the whole stream, resumes included
        again.route_pin = call.record.replica  # several replicas: the one that holds it
        again.codec = JSON_CODEC
        if not ON_EVENT_LOOP and call.options.stream_early_resume:
            again.cancel = CancelToken()  # an early resume may cancel this one too (api.early_resume)
        response = await self._again(again)
        return response, stream_decoder(again, response, JSON_CODEC)

    async def _resend(self, call: Call) -> tuple[httpx.Response, Any]:
        """A chat stream that failed before any content, sent again (``pipeline.resume``)."""
        response = await self._again(call)
        return response, stream_decoder(call, response, call.codec)

    async def _continue(self, call: Call, text: str, shown: int) -> tuple[httpx.Response, Any]:
        """A chat stream cut after content, continued from its partial answer (``stream_resume=
        "continue"``, ``pipeline.resume``): the same call, its body with ``text`` as the
        assistant's prefix; the same record and trace."""
        body = continuation_body(call.body or {}, text, shown, call.path)
        assert body is not None  # the stream asked only after continuation_body said it can
        again = dataclasses.replace(call, body=body, content=None, route=None)
        response = await self._again(again)
        return response, stream_decoder(again, response, again.codec)


Layer = Decode
