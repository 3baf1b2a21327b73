"""llmclient's WebSocket transport, sync or async, behind one synchronous face, so one test body
runs on both drivers (``[sync]``: ``SyncWebSocket``; ``[async]``: ``AsyncWebSocket``, each call
run to its end on a loop of the test's own)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from llmclient.transport.websocket import (
    WebSocketOptions,
    connect_async,
    connect_sync,
)

KINDS = ("sync", "async")
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


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
