# Generated from llmclient/_async/client.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
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
from ..api._sync.resources import (
    Chat,
    Completions,
    Embeddings,
    Models,
    Responses,
)
from ..api._sync.streaming import Stream
from ..api.raw import RawResponse
from ..features.route.router import model_labels, model_mismatch
from ..layers import setup
from ..layers._sync.cache import lookup_cache
from ..layers._sync.chain import Chain
from ..wire.codec import JSON_CODEC

if TYPE_CHECKING:
    from .._client import BaseClient as _Base
    from ..layers.context import Context
    from ..pipeline.call import Call
else:
    _Base = object

__all__ = ["ClientIO"]


class ClientIO(_Base):
    """Mixed into the sync client (before :class:`~llmclient._client.BaseClient`)."""

    _on_event_loop = False

    def _make_chain(self, ctx: Context) -> Chain:
        return Chain(ctx)

    @staticmethod
    def _cache_lookup(ctx: Context) -> Any:
        """The cache's look-up alone, for the Port (what speculation reads the cache with)."""
        return lambda call: lookup_cache(ctx, call)

    def _attach(self) -> None:
        """The resources llmclient runs itself."""
        client: Any = self  # the face (OpenAI), of which this is a part
        self.chat: Chat = Chat(client)
        self.completions: Completions = Completions(client)
        self.embeddings: Embeddings = Embeddings(client)
        self.responses: Responses = Responses(client)
        self.models: Models = Models(client)

    def _request(self, call: Call, make: Any, raw: bool = False, stream_make: Any = None) -> Any:
        """``call`` through the chain; the face's object of its answer (``make``: a whole answer,
        ``stream_make``: each event of a stream; ``raw``: the server's own answer with it)."""
        call.make, call.stream_make, call.raw = make, stream_make, raw
        provider = self._token_provider()
        if provider is not None:  # a credential fetched before every request (Azure AD)
            token = provider()
            if inspect.isawaitable(token):  # a coroutine function gave it: awaited where a loop runs
                pass
            self._set_token(call, token)
        chain = self._chain
        reply = (chain.default if call.options is chain.defaults else chain.for_options(call.options))(call)
        result = reply.result
        if result is None:  # a live stream (the trace layer may have wrapped make: read it back)
            result = Stream(reply.response, call, reply.decoder, call.stream_make or call.make,
                                 reply.on_complete, reply.resume, reply.resend, reply.proceed)
        return RawResponse(reply.response, result) if raw else result

    def warmup(self) -> None:
        """Open and prime the connection (TCP, TLS, HTTP/2 SETTINGS) before the first call.

        Sends ``GET /models`` (one per replica); any HTTP status counts as warm, connection
        errors raise (with several replicas: a dead one is ejected, not raised). Replicas that
        list different models are a ValueError naming each."""
        send = self._chain.send
        answers = []
        for call in self._warm_calls():
            call.codec = JSON_CODEC
            try:
                response = send(call)
            except APIConnectionError:
                if self._router is None:
                    raise
                continue  # one replica down: the router has ejected it
            response.read()
            response.close()
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

    def warm(self, *, messages: Any, model: str, keep_warm: bool | float = False, **params: Any) -> Any:
        """Send this prompt with ``max_tokens=1`` so the server's prefix cache holds it.

        ``keep_warm``: True refreshes it before the provider's prompt cache forgets it
        (``SpeculationConfig.provider``); a number is that cache's TTL in seconds. Stopped by
        :meth:`close`. Returns the one-token completion (its ``usage`` shows what was cached)."""
        speculation = self._speculation()
        return speculation.warm(keep_warm, {"messages": messages, "model": model, **params})

    def close(self) -> None:
        """Connections are shared by every client of the process with the same settings; they
        are kept for the next client (:func:`llmclient.close_all` / :func:`llmclient.close_all`
        close them at shutdown). Closes the WebSockets kept for the next ``responses.connect()``.
        Stops keep-warm timers and cancels prefetches in flight. An
        ``http_client`` the client was given is closed, as the official client closes it."""
        self.__dict__["_closed"] = True
        setup.close(self._ctx)
        park = self.__dict__.get("_ws_park")  # the sockets responses.connect() kept (ws_mode.Park)
        for ws in park.drain() if park is not None else ():
            try:
                ws.close()
            except Exception:  # a kept socket its server dropped already: nothing to save
                pass
        official = self.__dict__.get("_official")  # the pass-through's (api/passthrough.py)
        if official is not None:
            official.close()
        if self._http_client is not None:
            self._http_client.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
