"""A minimal in-process OpenAI-compatible server for faults that must be exact.

The live reference server (``tests/conftest.py``: ``ref_server``) covers realistic behaviour;
this one exists so a test can say "fail the first two attempts with 429 and Retry-After: 0",
"cut the stream after 3 chunks", "send an HTML page" and check exactly what the client did.
It records every request it saw (headers, HTTP version) and which streams the client cancelled.

Faults come in the ``x-test-fault`` header: ``;``-separated ``key=value`` items:
  status=N          answer N with an OpenAI-shaped error body
  times=K           only the first K attempts of a call (same Idempotency-Key) get the fault
  retry_after=S / retry_after_ms=N   headers sent with the error status
  html              the error body is an HTML page (as from a proxy)
  badjson           200 with a JSON body cut short
  htmlok            200 with an HTML page
  cut_after=N       stream: N chunks, then end the body without finish_reason / [DONE]
  malformed_sse     stream: the second chunk's JSON is cut short
  no_done           stream: finish_reason sent but no [DONE]
  no_finish         stream: [DONE] sent but no finish_reason (as llama-cpp-python's server
                    ends a stream it interrupts)
  open_choice=I     stream: choice I also gets a content chunk, and never a finish_reason
  error_event       stream: an ``error`` object after the first chunk
  slow_ms=N         stream: wait N ms before each chunk
  chunks=N          stream: N content chunks (default: max_tokens or 5)
  stall_ms=N        wait N ms before answering
  claim_gzip        say ``Accept-Encoding: gzip`` in the response (bodies in any coding get 415)
  encoded=C:N       200 whose JSON body (a chat answer padded to N MB) is sent with
                    Content-Encoding C (zstd or gzip), asked for or not: a compression bomb

Like most real servers it reads only JSON request bodies: another Content-Type, or any
Content-Encoding, is answered 415 (and kept in ``refused``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


def parse_fault(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in header.split(";"):
        key, _, value = item.strip().partition("=")
        if key:
            out[key] = value
    return out


def chat_completion(model: str, content: str, tools: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    finish = "stop"
    if tools:
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


def chunk(model: str, delta: dict[str, Any], finish: str | None = None, kind: str = "chat") -> dict[str, Any]:
    if kind == "chat":
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": delta.get("content", ""), "finish_reason": finish}
        obj = "text_completion"
    return {"id": "chunk-test", "object": obj, "created": 1700000000, "model": model, "choices": [choice]}


@dataclass
class Seen:
    path: str
    method: str
    headers: dict[str, str]
    http_version: str
    body: dict[str, Any] | None
    client: Any = None


@dataclass
class FakeApp:
    seen: list[Seen] = field(default_factory=list)
    attempts: Counter[str] = field(default_factory=Counter)
    cancelled: list[str] = field(default_factory=list)
    chunks_sent: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[str, str | None]] = field(default_factory=list)  # (content-type, coding)

    def last(self, path_suffix: str = "") -> Seen:
        for s in reversed(self.seen):
            if s.path.endswith(path_suffix):
                return s
        raise LookupError(path_suffix)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        # Like most servers (vLLM, TGI, llama.cpp): JSON only, and no request content-codings.
        ctype = headers.get("content-type", "application/json").split(";")[0].strip()
        coding = headers.get("content-encoding")
        if raw and (ctype != "application/json" or coding):
            self.refused.append((ctype, coding))
            what = f"Content-Encoding {coding!r}" if coding else f"Content-Type {ctype!r}"
            err = {"error": {"message": f"unsupported {what}", "type": "invalid_request_error",
                             "param": None, "code": None}}
            return await _respond(send, 415, orjson.dumps(err), b"application/json", [])
        body = orjson.loads(raw) if raw else None
        seen = Seen(scope["path"], scope["method"], headers, scope["http_version"], body, scope.get("client"))
        self.seen.append(seen)
        await self.handle(seen, receive, send)

    async def handle(self, seen: Seen, receive: Receive, send: Send) -> None:
        fault = parse_fault(seen.headers.get("x-test-fault", ""))
        key = seen.headers.get("idempotency-key") or seen.headers.get("x-request-id", "")
        self.attempts[key] += 1
        if "times" in fault and self.attempts[key] > int(fault["times"]):
            fault = {}
        out_headers = [(b"x-request-id", f"srv-{os.urandom(4).hex()}".encode()),
                       (b"server-timing", b"queue;dur=0.5, engine;dur=12.25, cache;desc=miss")]
        if "claim_gzip" in fault:  # says it reads gzip request bodies (and then refuses them)
            out_headers.append((b"accept-encoding", b"gzip"))
        if "stall_ms" in fault:
            await asyncio.sleep(int(fault["stall_ms"]) / 1000.0)
        if "status" in fault:
            status = int(fault["status"])
            if "retry_after" in fault:
                out_headers.append((b"retry-after", fault["retry_after"].encode()))
            if "retry_after_ms" in fault:
                out_headers.append((b"retry-after-ms", fault["retry_after_ms"].encode()))
            if "html" in fault:
                page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
                return await _respond(send, status, page, b"text/html", out_headers)
            err = {"error": {"message": f"injected {status}", "type": "test_error", "param": None, "code": f"e{status}"}}
            return await _respond(send, status, orjson.dumps(err), b"application/json", out_headers)
        if "badjson" in fault:
            return await _respond(send, 200, b'{"id": "x", "choices": [', b"application/json", out_headers)
        if "encoded" in fault:
            from llmclient.wire.compression import compress

            coding, megabytes = fault["encoded"].split(":")
            answer = chat_completion("test-model", "x" * int(float(megabytes) * 1024 * 1024))
            out_headers.append((b"content-encoding", coding.encode()))
            return await _respond(send, 200, compress(orjson.dumps(answer), coding),
                                  b"application/json", out_headers)
        if "htmlok" in fault:
            return await _respond(send, 200, b"<html><body>Welcome to nginx!</body></html>", b"text/html", out_headers)
        path, body = seen.path, seen.body or {}
        model = body.get("model", "test-model")
        if path == "/v1/models":
            data = {"object": "list", "data": [{"id": "test-model", "object": "model", "created": 1, "owned_by": "me"}]}
            return await _respond(send, 200, orjson.dumps(data), b"application/json", out_headers)
        if path.startswith("/v1/models/"):
            name = path.rsplit("/", 1)[1]
            if name != "test-model":
                err = {"error": {"message": f"The model '{name}' does not exist", "type": "invalid_request_error",
                                 "param": None, "code": "model_not_found"}}
                return await _respond(send, 404, orjson.dumps(err), b"application/json", out_headers)
            data = {"id": name, "object": "model", "created": 1, "owned_by": "me"}
            return await _respond(send, 200, orjson.dumps(data), b"application/json", out_headers)
        if path == "/v1/embeddings":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            items = []
            for i, _ in enumerate(inputs):
                vec = [0.5 + i, -1.25, 2.0]
                emb: Any = vec
                if body.get("encoding_format") == "base64":
                    emb = base64.b64encode(struct.pack("<3f", *vec)).decode()
                    if "bad_base64" in fault:  # 10 bytes: not a whole number of float32s
                        emb = base64.b64encode(b"0123456789").decode()
                items.append({"object": "embedding", "index": i, "embedding": emb})
            data = {"object": "list", "data": items, "model": model, "usage": {"prompt_tokens": 3, "total_tokens": 3}}
            return await _respond(send, 200, orjson.dumps(data), b"application/json", out_headers)
        kind = "chat" if path == "/v1/chat/completions" else "completion"
        if path not in ("/v1/chat/completions", "/v1/completions"):
            return await _respond(send, 404, b'{"error": {"message": "no such route"}}', b"application/json", out_headers)
        if body.get("stream"):
            return await self.stream(seen, body, fault, kind, send, receive, out_headers)
        if kind == "chat":
            data = chat_completion(model, "Hello world", tools=bool(body.get("tools")))
        else:
            data = {"id": "cmpl-test", "object": "text_completion", "created": 1, "model": model,
                    "choices": [{"index": 0, "text": "Hello world", "finish_reason": "stop", "logprobs": None}],
                    "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}}
        return await _respond(send, 200, orjson.dumps(data), b"application/json", out_headers)

    async def stream(self, seen: Seen, body: dict[str, Any], fault: dict[str, str], kind: str,
                     send: Send, receive: Receive, out_headers: list[tuple[bytes, bytes]]) -> None:
        rid = seen.headers.get("x-request-id", "")
        disconnected = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected.set()
                    return

        watcher = asyncio.ensure_future(watch())
        n = int(fault.get("chunks", body.get("max_tokens") or 5))
        slow = int(fault.get("slow_ms", 0)) / 1000.0
        model = body.get("model", "test-model")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), *out_headers]})
        sent = 0
        try:
            events: list[bytes] = []
            if kind == "chat":
                events.append(_sse(chunk(model, {"role": "assistant", "content": ""})))
            for i in range(n):
                events.append(_sse(chunk(model, {"content": f"tok{i} "}, kind=kind)))
            if "open_choice" in fault:
                extra = chunk(model, {"content": "other"}, kind=kind)
                extra["choices"][0]["index"] = int(fault["open_choice"])
                events.append(_sse(extra))
            if "no_finish" not in fault:
                events.append(_sse(chunk(model, {}, "stop", kind=kind)))
            if (body.get("stream_options") or {}).get("include_usage"):
                events.append(_sse({"id": "chunk-test", "object": "chat.completion.chunk", "choices": [],
                                    "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n}}))
            if "no_done" not in fault:
                events.append(b"data: [DONE]\n\n")
            if "malformed_sse" in fault:
                events[1] = events[1][:25] + b"\n\n"
            if "error_event" in fault:
                events.insert(1, _sse({"error": {"message": "engine exploded", "type": "server_error"}}))
            if "cut_after" in fault:
                events = events[: int(fault["cut_after"])]
            for event in events:
                if slow:
                    await asyncio.sleep(slow)
                if disconnected.is_set():
                    self.cancelled.append(rid)
                    return
                await send({"type": "http.response.body", "body": event, "more_body": True})
                sent += 1
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.chunks_sent[rid] = sent
            watcher.cancel()


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


async def _respond(send: Send, status: int, body: bytes, ctype: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"test server on port {port} did not start")


class HypercornServer:
    """Runs a FakeApp under hypercorn (h2c + HTTP/1.1, or TLS with ALPN) in a thread."""

    def __init__(self, *, certfile: str | None = None, keyfile: str | None = None,
                 max_streams: int = 100, keep_alive_s: float = 30.0, max_requests: int = 1000,
                 alpn: list[str] | None = None) -> None:
        from hypercorn.config import Config

        self.app = FakeApp()
        self.port = free_port()
        self.tls = certfile is not None
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.keep_alive_timeout = keep_alive_s
        config.h2_max_concurrent_streams = max_streams
        config.keep_alive_max_requests = max_requests  # then GOAWAY (hypercorn's default: 1,000)
        config.accesslog = None
        config.errorlog = None
        if certfile:
            config.certfile, config.keyfile = certfile, keyfile
        if alpn is not None:
            config.alpn_protocols = alpn
        self._config = config
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        from hypercorn.asyncio import serve

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(self.app, self._config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]

        asyncio.run(main())

    def start(self) -> HypercornServer:
        self._thread.start()
        wait_listening(self.port)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=5)


class _H1Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 only (answers an HTTP/2 preface with 505, as h1-only servers do)."""

    protocol_version = "HTTP/1.1"
    server: H1Server  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._reply(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        self._reply(orjson.loads(self.rfile.read(length)) if length else None)

    def _reply(self, body: dict[str, Any] | None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append(Seen(self.path, self.command, headers, self.request_version.split("/")[1], body))
        self.server.connections.add(self.client_address)
        if body and body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            events = [_sse(chunk("m", {"content": f"tok{i} "})) for i in range(3)]
            events += [_sse(chunk("m", {}, "stop")), b"data: [DONE]\n\n"]
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/v1/models"):
            data = orjson.dumps({"object": "list", "data": [{"id": "test-model", "object": "model", "created": 1, "owned_by": "me"}]})
        else:
            data = orjson.dumps(chat_completion((body or {}).get("model", "m"), "Hello over HTTP/1.1"))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class H1Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _H1Handler)
        self.seen: list[Seen] = []
        self.connections: set[tuple[str, int]] = set()
        self.port = int(self.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def start(self) -> H1Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def make_cert(directory: Path) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (also usable as its own CA bundle)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
        check=True, capture_output=True,
    )
    return str(cert), str(key)
