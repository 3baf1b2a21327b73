"""llmclient's WebSocket transport, sync or async, behind one synchronous face, so one test body
runs on both drivers (``[sync]``: ``SyncWebSocket``; ``[async]``: ``AsyncWebSocket``, each call
run to its end on a loop of the test's own); and :class:`Conn`, the same for a client's
``responses.connect()``, llmclient's or the official one."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import openai
import orjson

import llmclient
from llmclient.transport.websocket import (
    WebSocketOptions,
    connect_async,
    connect_sync,
)

if TYPE_CHECKING:
    from tests.conftest import RefServer

KINDS = ("sync", "async")
TERMINAL = ("response.completed", "response.incomplete", "response.failed")
CONNECT_KEY = "sk-ws-connect"  # tests/client/test_ws_connect.py's server


class Ws:
    def __init__(self, driver: WsDriver, ws: Any) -> None:
        self.driver, self.ws = driver, ws

    def __getattr__(self, name: str) -> Any:  # attributes: closed, close_code, extensions ...
        return getattr(self.ws, name)

    def send(self, data: str | bytes) -> None:
        self.driver.run(self.ws.send(data))

    def send_json(self, value: Any) -> None:
        self.driver.run(self.ws.send_text(orjson.dumps(value)))

    def recv(self, timeout: float | None = 30.0) -> bytes:
        return self.driver.run(self.ws.recv(timeout))

    def recv_json(self, timeout: float | None = 30.0) -> Any:
        return orjson.loads(self.recv(timeout))

    def until_done(self, n: int = 1) -> list[dict[str, Any]]:
        events, ended = [], 0
        while ended < n:
            ev = self.recv_json()
            events.append(ev)
            ended += ev["type"] in TERMINAL or ev["type"] == "error"
        return events

    def ping(self) -> None:
        self.driver.run(self.ws.ping())

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.driver.run(self.ws.close(code, reason))

    def abort(self, error: BaseException | None = None) -> None:
        self.ws.abort(error)

    def __enter__(self) -> Ws:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class WsDriver:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.loop = asyncio.new_event_loop() if kind == "async" else None

    def run(self, value: Any) -> Any:
        if self.loop is None:
            return value
        return self.loop.run_until_complete(value)

    def sleep(self, seconds: float) -> None:
        """Let time pass; on the async driver the loop runs meanwhile (its timers fire)."""
        if self.loop is None:
            import time

            time.sleep(seconds)
        else:
            self.loop.run_until_complete(asyncio.sleep(seconds))

    def connect(self, url: str, **options: Any) -> Ws:
        opts = WebSocketOptions(**options)
        if self.loop is None:
            return Ws(self, connect_sync(url, opts))
        return Ws(self, self.run(connect_async(url, opts)))

    def close(self) -> None:
        if self.loop is not None:
            self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.close()


# -- client.responses.connect(), llmclient's or the official one ---------------------------------


def text_of(events: list[Any]) -> str:
    """The text the typed events' ``response.output_text.delta`` carried."""
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def final_of(events: list[Any]) -> Any:
    """The first terminal event (completed, incomplete, failed)."""
    return next(e for e in events if e.type in TERMINAL)


class Conn:
    """A connection of ``lib`` ("official" or "llmclient"), ``kind`` "sync" or "async", behind
    one synchronous face (the async one runs each call to its end on a loop of its own)."""

    def __init__(self, lib: str, kind: str, server: RefServer | str, api_key: str = CONNECT_KEY,
                 client_kw: dict[str, Any] | None = None, **connect: Any) -> None:
        self.lib, self.kind = lib, kind
        self.loop = asyncio.new_event_loop() if kind == "async" else None
        mod: Any = openai if lib == "official" else llmclient
        cls = mod.OpenAI if kind == "sync" else mod.AsyncOpenAI
        base_url = server if isinstance(server, str) else server.base_url
        self.client = self.run(self._make(cls, base_url, api_key, client_kw or {}))
        self.connect = connect

    @staticmethod
    async def _amake(cls: Any, base_url: str, api_key: str, kw: dict[str, Any]) -> Any:
        return cls(base_url=base_url, api_key=api_key, max_retries=0, **kw)

    def _make(self, cls: Any, base_url: str, api_key: str, kw: dict[str, Any]) -> Any:
        if self.loop is None:
            return cls(base_url=base_url, api_key=api_key, max_retries=0, **kw)
        return self._amake(cls, base_url, api_key, kw)

    def run(self, value: Any) -> Any:
        return value if self.loop is None else self.loop.run_until_complete(value)

    def manager(self) -> Any:
        async def make() -> Any:  # an async manager is made where a loop runs (warm=True's task)
            return self.client.responses.connect(**self.connect)

        if self.loop is None:
            return self.client.responses.connect(**self.connect)
        return self.run(make())

    def __enter__(self) -> Conn:
        self.mgr = self.manager()
        try:
            self.conn = self.mgr.__enter__() if self.loop is None else self.run(self.mgr.__aenter__())
        except BaseException:
            self._close_client()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.loop is None:
                self.mgr.__exit__(*exc)
            else:
                self.run(self.mgr.__aexit__(*exc))
        finally:
            self._close_client()

    def _close_client(self) -> None:
        self.run(self.client.close())
        if self.loop is not None:
            self.loop.close()

    def create(self, **kw: Any) -> None:
        self.run(self.conn.response.create(**kw))

    def send(self, event: Any) -> None:
        self.run(self.conn.send(event))

    def send_raw(self, data: str) -> None:
        self.run(self.conn.send_raw(data))

    def recv(self) -> Any:
        return self.run(self.conn.recv())

    def close(self) -> None:
        self.run(self.conn.close())

    def until_done(self, n: int = 1) -> list[Any]:
        events, ended = [], 0
        while ended < n:
            ev = self.recv()
            events.append(ev)
            ended += ev.type in TERMINAL or ev.type == "error"
        return events

    def iterate(self, n: int = 1) -> list[Any]:
        """Events through the connection's own iteration (``for`` / ``async for``)."""
        async def aiter() -> list[Any]:
            out, ended = [], 0
            async for ev in self.conn:
                out.append(ev)
                ended += ev.type in TERMINAL or ev.type == "error"
                if ended >= n:
                    break
            return out

        if self.loop is not None:
            return self.run(aiter())
        out, ended = [], 0
        for ev in self.conn:
            out.append(ev)
            ended += ev.type in TERMINAL or ev.type == "error"
            if ended >= n:
                break
        return out
