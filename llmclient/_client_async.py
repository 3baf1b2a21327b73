"""``AsyncOpenAI``: the OpenAI face for asyncio, over the same chain (its async twin).

A module of its own, so that ``import llmclient`` loads no async layer, stream or resource until
an app asks for ``llmclient.AsyncOpenAI`` (the package's ``__getattr__``): a sync program never
pays for them. Settings, headers and the chain's making are ``_client.BaseClient``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _official
from ._async.client import AsyncClientIO
from ._client import BaseClient
from ._synchronization import start_task
from .api.passthrough import AsyncPassthrough
from .transport.lanes import AsyncTransport, shared_async_transport

if TYPE_CHECKING:
    import asyncio

    from typing_extensions import Unpack

    from ._client_options import ClientOptions

__all__ = ["AsyncOpenAI"]


class AsyncOpenAI(AsyncPassthrough, AsyncClientIO, BaseClient):
    """Asynchronous client (drop-in for ``openai.AsyncOpenAI``)."""

    def __init__(self, **options: Unpack[ClientOptions]) -> None:
        super().__init__(**options)
        self._warm_task: asyncio.Task[None] | None = None
        if self._config.connection.warm:
            # With no running loop, nothing starts: warm on the first call's loop (warmup()).
            self._warm_task = start_task(self.warmup)

    @property
    def _transport(self) -> AsyncTransport | None:
        if self._http_client is not None:
            return None
        return shared_async_transport(self._transport_settings)

    async def __aenter__(self) -> AsyncOpenAI:
        return self


# With ``openai`` imported, ``isinstance(client, openai.AsyncOpenAI)`` holds (``_official``).
_official.register(AsyncOpenAI, hide=True)
