"""A recording HTTP/1.1 proxy in front of the reference server: every request a client sends
is kept (method, path, query, headers, JSON body) and forwarded; the answer (streamed ones
chunk by chunk) goes back unchanged. The differential suite compares what the official client
and llmclient put on the wire through it."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

# Headers either client is free to send differently (identity, tracing, SDK telemetry,
# transport details), left out of the comparison.
VOLATILE = frozenset({
    "user-agent", "traceparent", "tracestate", "x-request-id", "idempotency-key",
    "accept-encoding", "content-length", "host", "connection", "accept", "content-encoding",
    "transfer-encoding", "x-llm-wire", "te", "upgrade", "http2-settings",
})
_BOUNDARY_RE = re.compile(r"boundary=([^;\s]+)")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def comparable(self) -> dict[str, Any]:
        headers = {k: v for k, v in self.headers.items()
                   if k not in VOLATILE and not k.startswith("x-stainless")}
        body = self.body
        boundary = _BOUNDARY_RE.search(headers.get("content-type", ""))
        if boundary:  # a multipart body's boundary is random per request
            headers["content-type"] = headers["content-type"].replace(boundary.group(1), "<boundary>")
            if isinstance(body, str):
                body = body.replace(boundary.group(1), "<boundary>")
        return {"method": self.method, "path": self.path, "headers": headers, "body": body}


@dataclass
class Recorder:
    upstream: str
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> list[Recorded]:
        with self.lock:
            out, self.requests = self.requests, []
        return out


def _handler(recorder: Recorder, client: httpx.Client) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _proxy(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            ctype = self.headers.get("content-type", "")
            body: Any = raw.decode("utf-8", "replace") if raw else None
            if raw and ctype.startswith("application/json"):
                body = json.loads(raw)
            headers = {k.lower(): v for k, v in self.headers.items()}
            with recorder.lock:
                recorder.requests.append(Recorded(self.command, self.path, headers, body))
            fwd = {k: v for k, v in headers.items()
                   if k not in ("host", "content-length", "connection", "accept-encoding")}
            fwd["accept-encoding"] = "identity"
            req = client.build_request(self.command, recorder.upstream + self.path, headers=fwd, content=raw)
            resp = client.send(req, stream=True)
            try:
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "accept-encoding", "content-encoding", "date", "server"):
                        self.send_header(k, v)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for piece in resp.iter_raw():
                    if piece:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            finally:
                resp.close()

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _proxy

    return Handler


class WireProxy:
    def __init__(self, upstream: str) -> None:
        self.recorder = Recorder(upstream)
        self._client = httpx.Client(timeout=30)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.recorder, self._client))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()
