"""One test body for both clients: the ``drive`` fixture runs it on ``OpenAI`` and ``AsyncOpenAI``.

A test that takes ``drive`` (tests/conftest.py) runs twice, ``[sync]`` and ``[async]``, and is
written once, in sync style::

    client = drive.client(base_url=..., api_key="k")           # OpenAI or AsyncOpenAI
    answer = drive(client.chat.completions.create(...))        # a value, or the awaited coroutine
    chunks = drive.iterate(drive(client.chat.completions.create(..., stream=True)))
    drive.sleep(0.3)                                           # the async client's tasks run meanwhile

The async kind keeps one event loop for the whole test (a plain loop: ``asyncio.Runner`` needs
Python 3.11), so a client's connections and background tasks stay on one loop; between ``drive``
calls that loop does not run. At teardown the clients
and httpx clients it made are closed, then the async clients' shared connections, then the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Literal, TypeVar, overload

import httpx

import llmclient

Kind = Literal["sync", "async"]
KINDS: tuple[Kind, ...] = ("sync", "async")
T = TypeVar("T")


async def _await(value: Awaitable[T]) -> T:
    return await value


async def _cancel_the_rest() -> None:
    """Cancel the loop's other tasks (a prefetch still in flight) and wait for them to end."""
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class Drive:
    """Runs client calls of one test for one kind of client (see the module docstring)."""

    def __init__(self, kind: Kind) -> None:
        self.kind: Kind = kind
        self.is_async = kind == "async"
        self._loop = asyncio.new_event_loop() if self.is_async else None
        self._closers: list[Callable[[], object]] = []

    @overload
    def __call__(self, value: Awaitable[T]) -> T: ...
    @overload
    def __call__(self, value: T) -> T: ...
    def __call__(self, value: Any) -> Any:
        """``value`` itself (a sync client's answer) or, awaited on this test's loop, its result."""
        if not inspect.isawaitable(value):
            return value
        if self._loop is None:
            raise TypeError(f"the sync client gave an awaitable ({type(value).__name__})")
        return self._loop.run_until_complete(_await(value))

    def client(self, module: ModuleType = llmclient, *, face: str = "OpenAI", **kwargs: Any) -> Any:
        """``module.OpenAI(**kwargs)`` or ``module.AsyncOpenAI(**kwargs)``, closed at teardown
        (``face="Anthropic"``: ``module.Anthropic`` or ``module.AsyncAnthropic``)."""
        client = getattr(module, f"Async{face}" if self.is_async else face)(**kwargs)
        self._closers.append(client.close)
        return client

    def http_client(self, event_hooks: dict[str, list[Callable[[Any], None]]] | None = None,
                    module: ModuleType = httpx, **kwargs: Any) -> Any:
        """A ``module.Client`` or ``module.AsyncClient`` (httpx, or httpx2: sync hooks made
        awaitable for it), closed at teardown."""
        if not self.is_async:
            sync = module.Client(event_hooks=event_hooks, **kwargs)
            self._closers.append(sync.close)
            return sync

        def wrap(hook: Callable[[Any], None]) -> Callable[[Any], Awaitable[None]]:
            async def run(item: Any) -> None:
                hook(item)
            return run

        hooks = {name: [wrap(h) for h in hs] for name, hs in (event_hooks or {}).items()}
        http = module.AsyncClient(event_hooks=hooks, **kwargs)
        self._closers.append(http.aclose)
        return http

    def iterate(self, items: Iterable[T] | AsyncIterable[T], limit: int | None = None) -> list[T]:
        """The first ``limit`` (default: all) items of a stream, page or other (async) iterable."""
        if isinstance(items, Iterable):
            out: list[T] = []
            for item in items:
                out.append(item)
                if limit is not None and len(out) >= limit:
                    break
            return out

        async def collect(source: AsyncIterable[T]) -> list[T]:
            got: list[T] = []
            async for item in source:
                got.append(item)
                if limit is not None and len(got) >= limit:
                    break
            return got

        return self(collect(items))

    @contextmanager
    def enter(self, manager: Any) -> Iterator[Any]:
        """``with manager`` for the sync kind, ``async with manager`` for the async one."""
        if not self.is_async:
            with manager as value:
                yield value
            return
        value = self(manager.__aenter__())
        try:
            yield value
        except BaseException as exc:
            if not self(manager.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            self(manager.__aexit__(None, None, None))

    def gather(self, calls: Sequence[Callable[[], Any]], workers: int) -> list[Any]:
        """Results of ``calls``, at most ``workers`` at a time: threads for the sync kind, tasks
        on this test's loop for the async one (all started before any finishes, up to ``workers``)."""
        if not self.is_async:
            with ThreadPoolExecutor(workers) as pool:
                return list(pool.map(lambda call: call(), calls))

        async def run_all() -> list[Any]:
            gate = asyncio.Semaphore(workers)

            async def one(call: Callable[[], Any]) -> Any:
                async with gate:
                    return await call()

            return list(await asyncio.gather(*(one(c) for c in calls)))

        return self(run_all())

    def sleep(self, seconds: float) -> None:
        """Wait; for the async kind the loop runs meanwhile (prefetch tasks, keep-warm timers)."""
        if self._loop is None:
            time.sleep(seconds)
        else:
            self(asyncio.sleep(seconds))

    def close(self) -> None:
        """Teardown: close what this test made, the loop's shared connections, the loop."""
        try:
            for close in reversed(self._closers):
                self(close())
        finally:
            loop = self._loop
            if loop is not None:
                try:
                    loop.run_until_complete(llmclient.aclose_all())
                    loop.run_until_complete(_cancel_the_rest())
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.run_until_complete(loop.shutdown_default_executor())
                finally:
                    loop.close()
