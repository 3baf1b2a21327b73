"""``AsyncAnthropic``: the Anthropic face for asyncio, over the same chain (its async twin).

A module of its own, as ``_client_async.py`` is for ``AsyncOpenAI``: ``import llmclient`` loads
no async layer, stream or resource until an app asks for ``llmclient.AsyncAnthropic``. Settings,
headers and errors are ``_anthropic.AnthropicBase``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _official
from ._anthropic import AnthropicBase
from ._async.client import AsyncClientIO
from ._synchronization import start_task
from .api._async.anthropic import AsyncBeta, AsyncMessages, AsyncModels
from .transport.lanes import AsyncTransport, shared_async_transport

if TYPE_CHECKING:
    import asyncio

    from typing_extensions import Unpack

    from ._client_options import AnthropicOptions

__all__ = ["AsyncAnthropic"]


class AsyncAnthropic(AsyncClientIO, AnthropicBase):
    """Asynchronous client (drop-in for ``anthropic.AsyncAnthropic``)."""

    _beta_class = AsyncBeta

    def __init__(self, **options: Unpack[AnthropicOptions]) -> None:
        super().__init__(**options)
        self._warm_task: asyncio.Task[None] | None = None
        if self._config.connection.warm:
            # With no running loop, nothing starts: warm on the first call's loop (warmup()).
            self._warm_task = start_task(self.warmup)

    def _attach(self) -> None:
        self.messages: AsyncMessages = AsyncMessages(self)
        self.models: AsyncModels = AsyncModels(self)  # type: ignore[assignment]

    @property
    def _transport(self) -> AsyncTransport | None:
        if self._http_client is not None:
            return None
        return shared_async_transport(self._transport_settings)

    async def __aenter__(self) -> AsyncAnthropic:
        return self


# With ``anthropic`` imported, ``isinstance(client, anthropic.AsyncAnthropic)`` holds (``_official``).
_official.register(AsyncAnthropic, hide=True, packages=("anthropic",))
