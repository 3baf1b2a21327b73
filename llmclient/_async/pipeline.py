"""One call's journey through the stages, with its I/O: the async client's, written once.

:meth:`AsyncPipeline._request` runs the stages in order (prepare, lookup, encode, send, decode,
store, after); :meth:`AsyncPipeline._send` is the attempt loop (its decisions are
:class:`~llmclient.pipeline.shared.Attempts`'), and :meth:`AsyncPipeline._send_call` races a hedged
copy. The stages themselves, without I/O, are :class:`~llmclient._client.BaseClient`'s.
Written once, as coroutines; ``scripts/unasync.py`` generates the blocking twin.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import TYPE_CHECKING, Any

import httpx

from .._logging import current_trace_id
from ..api.streaming import AsyncStream
from ..features import otel as _otel
from ..features.admit.pacer import admit_timeout
from ..features.hedge import CancelToken
from ..pipeline import shared as _pipeline
from ..pipeline.resume import continuable, continuation_body, resendable, resumable
from ..pipeline.shared import Attempts, RawResponse, first_token_probe, response_coding
from ..transport.http_clients import asend_through
from ..wire.codec import JSON_CODEC, Codec

if TYPE_CHECKING:
    from .._client import BaseClient as _Stages
    from ..pipeline.call import Call
else:
    _Stages = object

__all__ = ["AsyncPipeline"]


class AsyncPipeline(_Stages):
    """Mixed into the async client (before :class:`~llmclient._client.BaseClient`)."""

    _transport: Any  # the client's shared transport; None with a caller's http_client
    _on_event_loop = True  # unasync: sync=_on_event_loop = False

    async def _send_once(self, request: httpx.Request) -> httpx.Response:
        transport = self._transport
        if transport is not None:
            return await transport.send(request)
        return await asend_through(self._http_client, request)  # its headers, params, auth, hooks

    async def _send(self, call: Call, content: bytes | None, codec: Codec) -> httpx.Response:
        tries = Attempts(self, call, content, codec)
        pacer = self._features.pacer
        while True:
            ticket = None
            if pacer is not None:  # admit: wait for rate-limit budget (features/admit)
                low = call.headers.get("x-llm-priority") == "low"  # batch, prefetch: after the others
                ticket = await pacer.aadmit(call.base_url, call.scope, call.body, admit_timeout(call.timeout), low)  # unasync: sync=ticket = pacer.admit(call.base_url, call.scope, call.body, admit_timeout(call.timeout), low)
                if ticket is not None and ticket.wait_s > 0:
                    if call.cancel is not None:  # a hedged copy's wait ends when the other wins
                        await call.cancel.asleep(ticket.wait_s)
                    else:
                        await _pipeline.async_sleep(ticket.wait_s)
            request = tries.request(call.record.on_trace_async)  # unasync: sync=request = tries.request(call.record.on_trace)
            try:
                response = await self._send_once(request)
            except Exception as exc:
                if pacer is not None:
                    pacer.settle(ticket, call.base_url, call.scope, None, None)
                delay = tries.after_exception(exc, request)  # raises when there is no retry
            else:
                if pacer is not None:
                    pacer.settle(ticket, call.base_url, call.scope, response.status_code, response.headers)
                verdict = tries.after_headers(response)
                if verdict == "ok":
                    return response
                if verdict == "resend":
                    await response.aclose()
                    continue
                try:
                    raw = await response.aread()
                except httpx.TransportError:
                    raw = b""
                finally:
                    await response.aclose()
                delay = tries.after_status(response, raw)  # raises when there is no retry
            if delay > 0:
                if call.cancel is not None:  # a hedged call's wait ends when its copy wins
                    await call.cancel.asleep(delay)
                else:
                    await _pipeline.async_sleep(delay)
            tries.next()

    async def _resume_stream(self, call: Call, response_id: str, after: int) -> tuple[httpx.Response, Any]:
        """The rest of a cut background stream (``pipeline.resume``): ``GET /responses/{id}?
        stream=true&starting_after=N``, with the call's headers (credentials, a gateway's own),
        trace and timeouts; retried as any GET. Its (response, decoder)."""
        headers = {k: v for k, v in call.headers.items() if k not in ("content-type", "content-encoding")}
        again = self._build_call("GET", f"/responses/{response_id}", stream=True, options=call.options,
                                 extra_headers=headers, timeout=call.timeout,
                                 extra_query={**call.query, "stream": "true", "starting_after": after})
        again.trace = call.trace  # one trace for the whole stream, resumes included
        again.route_pin = call.record.replica  # several replicas: the one that holds it
        if not self._on_event_loop and call.options.stream_early_resume:
            again.cancel = CancelToken()  # an early resume may cancel this one too (api.early_resume)
        response = await self._send(again, None, JSON_CODEC)
        return response, self._stream_decoder(again, response, JSON_CODEC)

    async def _resend_stream(self, call: Call, content: bytes | None, codec: Codec) -> tuple[httpx.Response, Any]:
        """A chat stream that failed before any content, sent again (``pipeline.resume``)."""
        response = await self._send(call, content, codec)
        return response, self._stream_decoder(call, response, codec)

    async def _continue_stream(self, call: Call, codec: Codec, text: str, shown: int) -> tuple[httpx.Response, Any]:
        """A chat stream cut after content, continued from its partial answer (``stream_resume=
        "continue"``, ``pipeline.resume``): the same call, its body with ``text`` as the
        assistant's prefix; the same record and trace."""
        body = continuation_body(call.body or {}, text, shown)
        assert body is not None  # the stream asked only after continuation_body said it can
        again = dataclasses.replace(call, body=body)
        response = await self._send(again, self._encode(again, codec), codec)
        return response, self._stream_decoder(again, response, codec)

    async def _send_call(self, call: Call, content: bytes | None, codec: Codec) -> httpx.Response:
        """_send, or a race of two copies when the call is hedged (``_hedge``)."""
        plan = self._features.hedge_plan(call, self._speaks_h2)
        if plan is None:
            return await self._send(call, content, codec)
        track, delay = plan
        if delay is None:  # not enough known yet: send it once, and learn
            t0 = time.perf_counter()
            response = await self._send_first(call, content, codec)
            track.observe((time.perf_counter() - t0) * 1000.0)
            return response
        primary, twin, adopt = self._features.hedge_racers(call)
        return await self._features.race_async(lambda c: self._send_first(c, content, codec), primary, twin,
                                               track, delay, adopt)

    async def _send_first(self, call: Call, content: bytes | None, codec: Codec) -> httpx.Response:
        """_send; for a stream, also until its first token (what a hedged stream races on: a
        slow replica sends its headers, and often a role-only chunk, at once, its token late)."""
        response = await self._send(call, content, codec)
        read_until = getattr(response.stream, "read_until", None) if call.stream else None
        if read_until is not None:
            try:
                await read_until(first_token_probe(response, codec))
            except BaseException:
                await response.aclose()
                raise
        return response

    async def _request(self, call: Call, make: Any, raw: bool = False, stream_make: Any = None) -> Any:
        span = _otel.start(call)  # None unless OpenTelemetry is configured (the otel extra)
        if span is not None:
            make, stream_make = span.wrap(make, stream_make)
        token = current_trace_id.set(call.trace.trace_id)
        handle: Any = None
        features = self._features  # images, cache, speculation, hedging: their hooks (_features)
        try:
            if features.has_images(call):
                # Decoding and resizing a photo takes ~100 ms of CPU: not on the event loop.
                call = await _pipeline.off_loop(features.prepare, call)  # unasync: sync=call = features.prepare(call)
            if not raw:  # with_raw_response / with_streaming_response want the server's own answer
                handle = await features.alookup(call)
            if handle is not None and handle.entry is not None:
                if call.stream:
                    return handle.areplay_stream(stream_make or make)
                return self._finish(call, make(handle.response()), None)
            codec = self._codec_for(call)
            content = self._encode(call, codec)
            gate = features.gates.gate(call.base_url) if features.gates is not None else None
            if gate is not None:  # adaptive concurrency: a slot until the response closes
                await gate.aacquire(admit_timeout(call.timeout))  # unasync: sync=gate.acquire(admit_timeout(call.timeout))
            if (not self._on_event_loop and call.cancel is None and call.options.stream_early_resume
                    and resumable(call.method, call.path, call.body, call.stream)):
                call.cancel = CancelToken()  # an early resume cancels the silent read (api.early_resume)
            try:
                response = await self._send_call(call, content, codec)
            except BaseException:
                if gate is not None:
                    gate.release(None)
                raise
            if gate is not None:
                gate.hold(response, call.record, call.stream)
            if call.stream:
                decoder = self._stream_decoder(call, response, codec)
                on_complete = features.on_stream_complete(call, handle)
                resume = (functools.partial(self._resume_stream, call)
                          if resumable(call.method, call.path, call.body, call.stream) else None)
                resend = (functools.partial(self._resend_stream, call, content, codec)
                          if resendable(call.method, call.path, call.stream) else None)
                proceed = (functools.partial(self._continue_stream, call, codec)
                           if continuable(call.options.stream_resume, call.method, call.path, call.body,
                                          call.stream) else None)
                result: Any = AsyncStream(response, call, decoder, stream_make or make, on_complete,
                                          resume, resend, proceed)
                if span is not None:
                    span.stream = True  # ends when the stream does (_streaming)
                return RawResponse(response, result) if raw else result
            try:
                if response_coding(response) is None:
                    data = await response.aread()
                else:  # undone by _decode, under a size cap (httpx would undo it uncapped)
                    data = b"".join([piece async for piece in response.aiter_raw()])
            except httpx.TransportError as exc:
                raise self._connection_error(call, exc, response.request) from exc
            finally:
                await response.aclose()
            call.record.bytes_received += response.num_bytes_downloaded  # as on the wire
            call.record.finish()
            value = self._decode(call, response, data, codec)
            obj = self._finish(call, self._make(call, make, value, response), response)
            if handle is not None:  # the cache keeps a complete answer, one that made an object
                await handle.astore_response(value)
            features.after(call, value)
            return RawResponse(response, obj) if raw else obj
        except BaseException as exc:
            if span is not None:
                span.end(call, exc)
            raise
        finally:
            if handle is not None:
                handle.release()
            current_trace_id.reset(token)
            if span is not None and not span.stream:
                span.end(call, None)
