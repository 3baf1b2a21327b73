"""What the OpenAI face does with I/O, written once as coroutines: run a call through the chain
and hand back the face's object (a whole answer, a stream, or the raw response), warm the
connection, close. The settings and the chain are :class:`~llmclient._client.BaseClient`'s;
``scripts/unasync.py`` writes the blocking twin (``llmclient/_sync/client.py``).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import orjson

from .._errors import APIConnectionError
from ..api._async.resources import (
    AsyncChat,
    AsyncCompletions,
    AsyncEmbeddings,
    AsyncModels,
    AsyncResponses,
)
from ..api._async.streaming import AsyncStream
from ..api.raw import RawResponse
from ..features.route.router import model_labels, model_mismatch
from ..layers import setup
from ..layers._async.cache import alookup_cache
from ..layers._async.chain import Chain
from ..wire.codec import JSON_CODEC

if TYPE_CHECKING:
    from .._client import BaseClient as _Base
    from ..layers.context import Context
    from ..pipeline.call import Call
else:
    _Base = object

__all__ = ["AsyncClientIO"]


class AsyncClientIO(_Base):
    """Mixed into the async client (before :class:`~llmclient._client.BaseClient`)."""

    _on_event_loop = True  # unasync: sync=_on_event_loop = False

    def _make_chain(self, ctx: Context) -> Chain:
        return Chain(ctx)

    @staticmethod
    def _cache_lookup(ctx: Context) -> Any:
        """The cache's look-up alone, for the Port (what speculation reads the cache with)."""
        return lambda call: alookup_cache(ctx, call)

    def _attach(self) -> None:
        """The resources llmclient runs itself."""
        client: Any = self  # the face (AsyncOpenAI), of which this is a part
        self.chat: AsyncChat = AsyncChat(client)
        self.completions: AsyncCompletions = AsyncCompletions(client)
        self.embeddings: AsyncEmbeddings = AsyncEmbeddings(client)
        self.responses: AsyncResponses = AsyncResponses(client)
        self.models: AsyncModels = AsyncModels(client)

    async def _request(self, call: Call, make: Any, raw: bool = False, stream_make: Any = None) -> Any:
        """``call`` through the chain; the face's object of its answer (``make``: a whole answer,
        ``stream_make``: each event of a stream; ``raw``: the server's own answer with it)."""
        call.make, call.stream_make, call.raw = make, stream_make, raw
        provider = self._token_provider()
        if provider is not None:  # a credential fetched before every request (Azure AD)
            token = provider()
            if inspect.isawaitable(token):  # a coroutine function gave it: awaited where a loop runs
                token = await token  # unasync: sync=pass
            self._set_token(call, token)
        chain = self._chain
        reply = await (chain.default if call.options is chain.defaults else chain.for_options(call.options))(call)
        result = reply.result
        if result is None:  # a live stream (the trace layer may have wrapped make: read it back)
            result = AsyncStream(reply.response, call, reply.decoder, call.stream_make or call.make,
                                 reply.on_complete, reply.resume, reply.resend, reply.proceed)
        return RawResponse(reply.response, result) if raw else result

    async def warmup(self) -> None:
        """Open and prime the connection (TCP, TLS, HTTP/2 SETTINGS) before the first call.

        Sends ``GET /models`` (one per replica); any HTTP status counts as warm, connection
        errors raise (with several replicas: a dead one is ejected, not raised). Replicas that
        list different models are a ValueError naming each."""
        send = self._chain.send
        answers = []
        for call in self._warm_calls():
            call.codec = JSON_CODEC
            try:
                response = await send(call)
            except APIConnectionError:
                if self._router is None:
                    raise
                continue  # one replica down: the router has ejected it
            await response.aread()
            await response.aclose()
            answers.append((call, response))
        if self._router is not None:
            served: dict[str, list[str] | None] = {}
            for call, response in answers:
                try:
                    listed = orjson.loads(response.content)
                except ValueError:
                    listed = None
                # None where the answer is not a model list: nothing to compare
                served[call.base_url] = model_labels(listed.get("data")) if isinstance(listed, dict) else None
            problem = model_mismatch(served)
            if problem is not None:
                raise ValueError(problem)

    async def warm(self, *, messages: Any, model: str, keep_warm: bool | float = False, **params: Any) -> Any:
        """Send this prompt with ``max_tokens=1`` so the server's prefix cache holds it.

        ``keep_warm``: True refreshes it before the provider's prompt cache forgets it
        (``SpeculationConfig.provider``); a number is that cache's TTL in seconds. Stopped by
        :meth:`close`. Returns the one-token completion (its ``usage`` shows what was cached)."""
        speculation = self._speculation()
        return await speculation.awarm(keep_warm, {"messages": messages, "model": model, **params})

    async def close(self) -> None:
        """Connections are shared by every client of the process with the same settings; they
        are kept for the next client (:func:`llmclient.close_all` / :func:`llmclient.aclose_all`
        close them at shutdown). Closes the WebSockets kept for the next ``responses.connect()``.
        Stops keep-warm timers and cancels prefetches in flight. An
        ``http_client`` the client was given is closed, as the official client closes it."""
        self.__dict__["_closed"] = True
        await setup.aclose(self._ctx)
        park = self.__dict__.get("_ws_park")  # the sockets responses.connect() kept (ws_mode.Park)
        for ws in park.drain() if park is not None else ():
            try:
                await ws.close()
            except Exception:  # a kept socket its server dropped already: nothing to save
                pass
        official = self.__dict__.get("_official")  # the pass-through's (api/passthrough.py)
        if official is not None:
            await official.close()
        if self._http_client is not None:
            await self._http_client.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
