"""The OpenAI-compatible ASGI app over an :class:`~benchmarks.server.engine.base.Engine`.

One code path whichever HTTP server (granian or hypercorn) runs it. Routes:
``/health``, ``/metrics``, ``/v1/models[/{id}]``, ``/v1/chat/completions``,
``/v1/completions``, ``/v1/embeddings``, ``/v1/responses[/{id}[/input_items]]`` (see
``responses.py``). Every response carries ``Server-Timing``
(queue, prefill, decode, image, serialize, total; ms) and ``x-request-id``; streams end with a
``: server-timing ...`` SSE comment before ``data: [DONE]`` since their headers are long gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from llmclient.wire import compress

from . import anthropic, responses, wire, ws_responses
from ._http import (
    REQUEST_ID,
    TRACEPARENT,
    Abort,
    BodyTimeout,
    BodyTooLarge,
    Cut,
    Delivery,
    Receive,
    Scope,
    Send,
    cancel_on_disconnect,
    close_quietly,
    error_body,
    header,
    read_body,
    send_bytes,
    server_timing,
)
from ._textstream import Step, TextStream, text_steps, tool_arguments
from ._validate import (
    ChatParams,
    CompletionParams,
    ImagePart,
    InvalidRequest,
    ToolChoice,
    parse_chat,
    parse_completion,
    parse_embedding,
    request_priority,
)
from .background import BackgroundRuns
from .continuation import ContinuationCost
from .embeddings import embedding_data
from .engine.base import (
    ContextLengthError,
    Engine,
    EngineError,
    EngineNotReady,
    EngineOOM,
    EngineOverloaded,
    EngineRequest,
    RequestTiming,
    TokenEvent,
)
from .engine.textgen import sample_key
from .faults import FaultInjector, FaultSpec, FaultSpecError
from .limits import Limits
from .logprobs import (
    LogprobTrack,
    chat_logprobs,
    choice_key,
    completion_logprobs,
    prompt_key,
    text_tokens,
)
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import HttpCounters, render_metrics, sample_gpu
from .tokenizer import count_tokens, encode_capped, tokenize
from .toolcalls import ToolCallWriter
from .vision import ImageError, decode_data_url, process_image

__all__ = ["App", "AppConfig"]

log = logging.getLogger("benchmarks.server.app")

# Model ids served besides the engine's own: common OpenAI names, so clients and benchmarks
# written for OpenAI run unchanged. Anything else answers 404 model_not_found.
DEFAULT_ALIASES = ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1", "ref-llm")
EMBEDDING_MODELS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                    "text-embedding-ada-002": 1536}
CREATED = 1_700_000_000  # fixed "created" of the model list: responses stay byte-stable
# CPU-heavy work (embeddings, image decode, tokenizing or parsing big bodies) runs on a few
# worker threads, not on the event loop, so /health, streams and SIGTERM are still served while
# it runs. Few: each worker holds the GIL while it computes and the loop must still get it.
CPU_WORKERS = 2
# Below these sizes the thread hop costs more than the work it would move off the loop.
OFFLOAD_BODY_BYTES = 256 * 1024
OFFLOAD_TEXT_CHARS = 64 * 1024
OFFLOAD_EMBEDDING_VALUES = 64 * 1024
# The largest embeddings response OpenAI sends: 2048 inputs of text-embedding-3-large's 3072.
MAX_EMBEDDING_VALUES = 2048 * 3072

_T = TypeVar("_T")


@dataclass
class AppConfig:
    faults: FaultInjector = field(default_factory=FaultInjector)
    # Honour a request's ``x-fault`` header. Off unless the server is started with
    # --allow-fault-headers: otherwise any client could make the server fail for everyone.
    fault_headers: bool = False
    limits: Limits = field(default_factory=Limits)
    api_key: str | None = None
    max_body_bytes: int = 32 * 1024 * 1024
    models: tuple[str, ...] = DEFAULT_ALIASES
    # vLLM's --served-model-name: the chat model ids served, instead of the engine's own id and
    # the aliases; /v1/models lists each with ``root``, the engine's model, as vLLM lists the
    # weights behind a served name. Empty: the engine's id and ``models``.
    served_names: tuple[str, ...] = ()
    # Server-Timing on every answer (a header, and for streams a final SSE comment). False: none,
    # as vLLM, SGLang and llama.cpp send none (--no-server-timing).
    server_timing: bool = True
    # One INFO line per request (method, path, status, ms, Server-Timing; the log format adds
    # request_id and traceparent), so a slow request found in a benchmark's result.json is one
    # grep away. Off by default: benchmarks count the server's CPU as noise.
    access_log: bool = False
    # Compress response bodies of MIN_COMPRESS_BYTES and more with the best coding the request's
    # Accept-Encoding lists (zstd, then gzip), as a gateway in front of a model server would.
    # Streams are never compressed (each chunk must reach the client when it is made).
    compress_responses: bool = True
    # The request spans (benchmarks.server.tracing.ServerTracing; --trace-spans/--otlp-endpoint),
    # or None: no tracing, no cost.
    tracing: Any = None
    # Rate limits per API key (benchmarks.server.ratelimit.RateLimiter; --rpm/--tpm), or None.
    ratelimits: Any = None
    # Request fields answered with 400 naming them (--reject-fields), as a strict gateway
    # does for a field it does not know (Azure's "Unrecognized request argument supplied").
    reject_fields: frozenset[str] = frozenset()
    # vLLM's --scheduling-policy: "fcfs" (its default: a body ``priority`` other than 0 is a 400,
    # x-llm-priority is only logged) or "priority" (the body field, else x-llm-priority: low = 1,
    # orders and preempts; the engine must be built with the same policy: make_engine).
    scheduling_policy: str = "fcfs"
    # The Responses cost model of a chained turn (continuation.py) and the WebSocket mode's
    # knobs (ws_responses.py).
    continuation: ContinuationCost = field(default_factory=ContinuationCost)
    websocket: ws_responses.WsSettings = field(default_factory=ws_responses.WsSettings)


@dataclass
class _Req:
    """Per-request state."""

    request_id: str
    accept: str | None
    fault: FaultSpec | None
    t0: float
    accept_encoding: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # What the request asked for, lower first: 1 for ``x-llm-priority: low`` (llmclient's batch
    # calls, prefetches and warm-ups), or the body's ``priority``. Reaches the engine only under
    # the priority scheduling policy (``_validate.request_priority``); fcfs sends 0.
    priority: int = 0
    engine_priority: int = 0
    ratelimit_headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # on its answer
    send_timing: bool = True  # AppConfig.server_timing
    api: str = anthropic.OPENAI  # the API the request speaks: its errors' shape (anthropic.face_of)
    extra_headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # on its answer

    def timing_comment(self) -> bytes:
        """A stream's closing ``: server-timing ...`` SSE comment; nothing with --no-server-timing."""
        return b": server-timing " + self.header_value() + b"\n\n" if self.send_timing else b""

    def add_engine_timing(self, t: RequestTiming | None) -> None:
        if t is None:
            return
        # n choices run in parallel: the request waited as long as its slowest choice.
        for key, value in (("queue", t.queue_ms), ("prefill", t.prefill_ms), ("decode", t.decode_ms)):
            self.timings[key] = max(self.timings.get(key, 0.0), value)

    def header_value(self) -> bytes:
        self.timings["total"] = (time.perf_counter() - self.t0) * 1000
        return server_timing(self.timings).encode()


class App:
    """The ASGI application. ``engine`` is started by the ASGI lifespan startup."""

    def __init__(self, engine: Engine, config: AppConfig | None = None) -> None:
        self.engine = engine
        self.config = config or AppConfig()
        name = getattr(engine, "model", None) or getattr(getattr(engine, "profile", None), "model", None)
        self.root = name if isinstance(name, str) else None  # the weights behind every chat id
        self.chat_models = self.config.served_names or tuple(dict.fromkeys(
            [*([name] if isinstance(name, str) else []), *self.config.models]))
        self.counters = HttpCounters()
        self._start_task: asyncio.Task[None] | None = None
        self._cpu = ThreadPoolExecutor(CPU_WORKERS, thread_name_prefix="ref-server-cpu")
        self._routes: dict[tuple[str, str], Callable[..., Any]] = {
            ("GET", "/health"): self._health,
            ("GET", "/metrics"): self._metrics,
            ("GET", "/v1/models"): self._models,
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/completions"): self._completions,
            ("POST", "/v1/embeddings"): self._embeddings,
            ("POST", "/v1/responses"): self._responses,
        }
        self.responses = responses.ResponseStore()
        self.background = BackgroundRuns(self.config.limits.background_retention_s,
                                         self.config.limits.background_max_bytes)
        self.anthropic = anthropic.Face(self)  # /v1/messages*, and /v1/models with anthropic-version

    # -- ASGI entry --------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await ws_responses.handle(self, scope, receive, send, _Req)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Load in the background so the port answers (/health 503) during cold start.
                self._start_task = asyncio.ensure_future(self._start_engine())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self._cpu.shutdown(wait=False, cancel_futures=True)
                await self.background.stop()
                await self.engine.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start_engine(self) -> None:
        try:
            await self.engine.start()
            log.info("engine %s ready on %s", self.engine.name, self.engine.device)
        except Exception:
            log.exception("engine failed to start")

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        rid = header(scope, b"x-request-id") or uuid.uuid4().hex
        REQUEST_ID.set(rid)
        TRACEPARENT.set(header(scope, b"traceparent") or "-")
        req = _Req(rid, header(scope, b"accept"), None, time.perf_counter(),
                   header(scope, b"accept-encoding"), send_timing=self.config.server_timing)
        if header(scope, b"x-llm-priority") == "low":
            req.priority = 1
        req.api = anthropic.face_of(scope)
        if req.api == anthropic.ANTHROPIC:
            req.extra_headers.append((b"request-id", anthropic.request_id(rid).encode()))
        status_box = [0]
        tracing = self.config.tracing
        span = (tracing.start(scope.get("method", "-"), scope.get("path", "-"),
                              header(scope, b"traceparent"), req.t0)
                if tracing is not None else None)

        async def counting_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode()),
                                      *wire.ADVERTISED_HEADERS, *req.ratelimit_headers, *req.extra_headers]
                if req.send_timing and not any(k == b"server-timing" for k, _ in message["headers"]):
                    message["headers"].append((b"server-timing", req.header_value()))
            await send(message)

        self.counters.in_flight += 1
        try:
            await self._dispatch(scope, receive, counting_send, req)
        except Abort:
            log.info("fault: reset")
            raise
        except (ConnectionError, OSError, asyncio.CancelledError):
            raise  # the client went away; nothing to answer
        except Exception:
            log.exception("unhandled error")  # the traceback stays in the server log
            if not status_box[0]:
                await self._error(counting_send, req, 500, "internal server error")
        finally:
            self.counters.in_flight -= 1
            self.counters.record(status_box[0] or 499)
            if span is not None:
                tracing.finish(span, status_box[0] or 499, req.timings, req.t0, rid)
            if self.config.access_log:
                log.info("%s %s %d %.1fms priority=%s %s", scope.get("method", "-"),
                         scope.get("path", "-"), status_box[0] or 499,
                         (time.perf_counter() - req.t0) * 1000.0,
                         "low" if req.priority > 0 else "normal", req.header_value().decode("latin-1"))

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send, req: _Req) -> None:
        if req.api == anthropic.ANTHROPIC:
            await self.anthropic.dispatch(scope, receive, send, req)
            return
        method, path = scope["method"], scope["path"]
        handler = self._routes.get((method, path))
        if handler is None and method == "GET" and path.startswith("/v1/models/"):
            await self._model(send, req, path[len("/v1/models/"):])
            return
        if handler is None and path.startswith("/v1/responses/"):
            if not self._authorized(scope):
                await self._error(send, req, 401, "Incorrect API key provided.", code="invalid_api_key")
                return
            query = scope.get("query_string", b"").decode("latin-1")
            try:  # a resumed stream takes stream faults too (a cut, a stall, a reset)
                fault_header = header(scope, b"x-fault") if self.config.fault_headers else None
                req.fault = self.config.faults.decide(fault_header) if fault_header else None
            except FaultSpecError as exc:
                await self._error(send, req, 400, f"x-fault header: {exc}", param="x-fault")
                return
            if req.fault is not None and req.fault.stall_ms:  # a resume slow to answer (early resume's tests)
                await asyncio.sleep(req.fault.stall_ms / 1000)
            await responses.handle_stored(self, self.responses, self.background, send, receive, req,
                                          method, path[len("/v1/responses/"):], query)
            return
        if handler is None:
            known = any(p == path for _, p in self._routes)
            status = 405 if known else 404
            await self._error(send, req, status, f"{method} {path} is not a route of this server")
            return
        if path.startswith("/v1/") and not self._authorized(scope):
            await self._error(send, req, 401, "Incorrect API key provided.", code="invalid_api_key")
            return
        if method == "GET":
            await handler(send, req)
            return
        await self._post(handler, scope, receive, send, req)

    def _authorized(self, scope: Scope) -> bool:
        if self.config.api_key is None:
            return True
        return header(scope, b"authorization") == f"Bearer {self.config.api_key}"

    async def _offload(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on a CPU worker thread, with this request's context (log ids)."""
        call = functools.partial(contextvars.copy_context().run, fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self._cpu, call)

    async def _decode(self, scope: Scope, raw: bytes) -> dict[str, Any]:
        args = (raw, header(scope, b"content-type"), header(scope, b"content-encoding"),
                self.config.max_body_bytes)
        # A compressed body may expand up to the body limit: offload it from a smaller size.
        if len(raw) < (OFFLOAD_BODY_BYTES if args[2] is None else OFFLOAD_BODY_BYTES // 16):
            return wire.decode_request(*args)
        return await self._offload(wire.decode_request, *args)

    async def _post(self, handler: Callable[..., Any], scope: Scope, receive: Receive,
                    send: Send, req: _Req) -> None:
        raw: bytes | None = None
        try:
            fault_header = header(scope, b"x-fault") if self.config.fault_headers else None
            req.fault = self.config.faults.decide(fault_header)
            raw = await read_body(receive, self.config.max_body_bytes,
                                  self.config.limits.body_timeout_s)
            body = await self._decode(scope, raw)
        except FaultSpecError as exc:
            await self._error(send, req, 400, f"x-fault header: {exc}", param="x-fault")
            return
        except BodyTooLarge as exc:
            # Stopped reading mid-body: the rest is never read, so over HTTP/1.1 the connection
            # ends with this answer, and says so (a client that reused it had its next call cut:
            # "Server disconnected", once in a full test run). A body read whole that
            # decompresses past the limit leaves the connection clean.
            close = ([(b"connection", b"close")]
                     if raw is None and scope.get("http_version", "1.1") < "2" else [])
            await self._error(send, req, 413, str(exc), headers=close)
            return
        except BodyTimeout as exc:
            # The rest of the body may never come: end the connection, not just the request.
            close = [(b"connection", b"close")] if scope.get("http_version", "1.1") < "2" else []
            await self._error(send, req, 408, str(exc), code="body_timeout", headers=close)
            return
        except wire.UnsupportedMediaType as exc:
            await self._error(send, req, 415, str(exc))
            return
        except wire.WireDecodeError as exc:
            await self._error(send, req, 400, str(exc))
            return
        if self.config.ratelimits is not None:  # --rpm/--tpm (ratelimit.py)
            key = header(scope, b"authorization") or header(scope, b"x-api-key") or ""
            verdict = self.config.ratelimits.admit(key, body)
            req.ratelimit_headers = (anthropic.ratelimit_headers(verdict) if req.api == anthropic.ANTHROPIC
                                     else verdict.headers)
            if not verdict.ok:
                code = "rate_limit_exceeded" if verdict.retry_after_s < self.config.ratelimits.window_s else None
                await self._error(send, req, 429, verdict.message, code=code or "request_too_large")
                return
        rejected = next((f for f in self.config.reject_fields if isinstance(body, dict) and f in body), None)
        if rejected is not None:
            await self._error(send, req, 400, f"Unrecognized request argument supplied: {rejected}", param=rejected)
            return
        try:
            req.engine_priority = request_priority(body, self.config.scheduling_policy, req.priority > 0)
        except InvalidRequest as exc:
            await self._error(send, req, exc.status, exc.message, exc.param, exc.code)
            return
        asked = body.get("priority") if isinstance(body, dict) else None
        if isinstance(asked, int) and not isinstance(asked, bool):
            req.priority = asked  # the access log shows what was asked
        # A client that goes away (timeout, hedge loser, Ctrl-C) must free its batch slot now,
        # as a real server's abort does, not after generating an answer nobody reads.
        watcher = asyncio.ensure_future(cancel_on_disconnect(receive, asyncio.current_task()))
        try:
            fault = req.fault
            if fault is not None and await self._early_fault(send, req, fault):
                return
            await handler(send, req, body)
        except InvalidRequest as exc:
            await self._error(send, req, exc.status, exc.message, exc.param, exc.code)
        except EngineError as exc:
            await self._engine_error(send, req, exc)
        finally:
            watcher.cancel()

    async def _early_fault(self, send: Send, req: _Req, fault: FaultSpec) -> bool:
        """Faults that act before the engine runs; True when the response is finished."""
        if fault.stall_ms:
            await asyncio.sleep(fault.stall_ms / 1000)
        if fault.status is not None:
            headers = []
            if fault.status in (429, 529) and fault.retry_after_s is not None:
                headers.append((b"retry-after", _retry_after(fault.retry_after_s)))
            msg = f"injected fault: status {fault.status}"
            await self._error(send, req, fault.status, msg, code="injected_fault", headers=headers)
            return True
        if fault.oom:
            await self._engine_error(send, req, EngineOOM("CUDA out of memory (injected fault)"))
            return True
        return False

    # -- responses -----------------------------------------------------------------------
    async def _error(self, send: Send, req: _Req, status: int, message: str,
                     param: str | None = None, code: str | None = None,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
        body = orjson.dumps(anthropic.error_body(status, message, req.request_id)
                            if req.api == anthropic.ANTHROPIC else error_body(status, message, param, code))
        await send_bytes(send, status, body, wire.JSON_TYPE, headers or ())

    async def _engine_error(self, send: Send, req: _Req, exc: EngineError) -> None:
        if isinstance(exc, EngineOverloaded):  # a full queue: Anthropic's API calls it overload
            status = 529 if req.api == anthropic.ANTHROPIC else 429
            await self._error(send, req, status, str(exc), code="rate_limit_exceeded",
                              headers=[(b"retry-after", _retry_after(exc.retry_after_s))])
        elif isinstance(exc, ContextLengthError):
            await self._error(send, req, 400, str(exc), "messages", "context_length_exceeded")
        elif isinstance(exc, EngineOOM):
            await self._error(send, req, 503, f"the engine ran out of memory: {exc}",
                              code="engine_out_of_memory")
        elif isinstance(exc, EngineNotReady):
            await self._error(send, req, 503, f"the model is still loading: {exc}",
                              code="model_loading", headers=[(b"retry-after", b"1")])
        else:
            log.error("engine error: %s", exc)
            await self._error(send, req, 500, f"engine error: {exc}", code="engine_error")

    async def _json(self, send: Send, req: _Req, obj: dict[str, Any], status: int = 200,
                    offload: bool = False) -> None:
        """Send ``obj`` encoded as the client accepts; ``offload``: encode (and compress) a big
        response on a CPU worker thread."""
        t = time.perf_counter()
        body, content_type = (await self._offload(wire.encode_response, obj, req.accept) if offload
                              else wire.encode_response(obj, req.accept))
        fault = req.fault
        if fault is not None and (fault.cut_after is not None or fault.malformed_sse or fault.reset):
            req.timings["serialize"] = (time.perf_counter() - t) * 1000
            await self._faulty_body(send, req, body, content_type, fault)
            return
        headers: tuple[tuple[bytes, bytes], ...] = ()
        coding = (wire.response_encoding(len(body), req.accept_encoding)
                  if self.config.compress_responses else None)
        if coding is not None:
            body = await self._offload(compress, body, coding) if offload else compress(body, coding)
            headers = ((b"content-encoding", coding.encode()), (b"vary", b"accept-encoding"))
        req.timings["serialize"] = (time.perf_counter() - t) * 1000
        await send_bytes(send, status, body, content_type, headers)

    async def _faulty_body(self, send: Send, req: _Req, body: bytes, content_type: str,
                           fault: FaultSpec) -> None:
        # No content-length: the body really ends early rather than failing length checks.
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type.encode())]})
        if fault.reset:
            raise Abort("injected reset")
        cut = fault.cut_after if fault.cut_after is not None else len(body) // 2
        await send({"type": "http.response.body", "body": body[:cut]})

    # -- GET routes ----------------------------------------------------------------------
    async def _health(self, send: Send, req: _Req) -> None:
        ready = self.engine.ready
        body = {"status": "ok" if ready else "loading", "engine": self.engine.name,
                "device": self.engine.device}
        await send_bytes(send, 200 if ready else 503, orjson.dumps(body), wire.JSON_TYPE)

    async def _metrics(self, send: Send, req: _Req) -> None:
        gpus = await asyncio.to_thread(sample_gpu)
        text = render_metrics(self.engine.stats(), self.counters, gpus, self.engine.ready)
        await send_bytes(send, 200, text.encode(), METRICS_TYPE)

    def _model_card(self, model_id: str) -> dict[str, Any]:
        card: dict[str, Any] = {"id": model_id, "object": "model", "created": CREATED,
                                "owned_by": "llmclient-reference"}
        if self.root is not None and model_id in self.chat_models:
            card["root"] = self.root  # as vLLM: the model a served name stands for
        return card

    async def _models(self, send: Send, req: _Req) -> None:
        ids = [*self.chat_models, *EMBEDDING_MODELS]
        await self._json(send, req, {"object": "list", "data": [self._model_card(m) for m in ids]})

    async def _model(self, send: Send, req: _Req, model_id: str) -> None:
        if model_id not in self.chat_models and model_id not in EMBEDDING_MODELS:
            await self._error(send, req, 404, _no_model(model_id), "model", "model_not_found")
            return
        await self._json(send, req, self._model_card(model_id))

    def _check_model(self, model: str, embedding: bool = False) -> None:
        if model not in (EMBEDDING_MODELS if embedding else self.chat_models):
            raise InvalidRequest(_no_model(model), "model", "model_not_found", status=404)

    # -- generation ----------------------------------------------------------------------
    async def _images(self, req: _Req, parts: tuple[ImagePart, ...]) -> tuple[int, str]:
        tokens, digest = await self._image_parts(req, parts)
        return sum(tokens), digest

    async def _image_parts(self, req: _Req, parts: tuple[ImagePart, ...]) -> tuple[list[int], str]:
        """Each image's prompt tokens, and one digest of them all (the prefix cache's key)."""
        if not parts:
            return [], ""
        t = time.perf_counter()
        tokens, digests = [], hashlib.blake2b(digest_size=16)
        for part in parts:
            try:
                result = await self._offload(_decode_image, part.url, part.detail, part.media_type)
            except ImageError as exc:
                raise InvalidRequest(f"{part.where}: {exc}", part.param or f"{part.where}.image_url",
                                     "invalid_image") from None
            tokens.append(result[0])
            digests.update(result[1].encode())
        req.timings["image"] = (time.perf_counter() - t) * 1000
        return tokens, digests.hexdigest()

    def _engine_requests(self, req: _Req, prompt_ids: tuple[int, ...], image_tokens: int,
                         digest: str, max_tokens: int | None, n: int, temperature: float,
                         seed: int | None, first_index: int = 0) -> list[EngineRequest]:
        window = self.engine.context_window
        prompt_tokens = len(prompt_ids) + image_tokens
        if prompt_tokens >= window:
            raise InvalidRequest(
                f"This model's maximum context length is {window} tokens; the prompt has "
                f"{prompt_tokens} tokens.", "messages", "context_length_exceeded")
        if max_tokens is not None and prompt_tokens + max_tokens > window:
            raise InvalidRequest(
                f"This model's maximum context length is {window} tokens; {prompt_tokens} in the "
                f"prompt plus max_tokens {max_tokens} exceed it.", "max_tokens",
                "context_length_exceeded")
        limit = max_tokens if max_tokens is not None else window - prompt_tokens
        return [EngineRequest(f"{req.request_id}-{first_index + i}", prompt_ids, limit,
                              image_tokens=image_tokens, image_digest=digest,
                              temperature=temperature, seed=seed, n_index=i,
                              priority=req.engine_priority)
                for i in range(n)]

    async def _prompt_ids(self, text: str, budget: int, param: str) -> tuple[int, ...]:
        """Token ids of a prompt; 400 naming the limit past the context window or ``budget``
        (what is left of the request's token limit), found without tokenizing all of it."""
        window = self.engine.context_window
        cap = min(window, budget)
        ids = (encode_capped(text, cap) if len(text) < OFFLOAD_TEXT_CHARS
               else await self._offload(encode_capped, text, cap))
        if len(ids) > cap:
            raise _too_many_tokens(window, cap, self.config.limits.max_request_tokens, param)
        return tuple(ids)

    async def _chat(self, send: Send, req: _Req, body: dict[str, Any]) -> None:
        p = parse_chat(body, self.engine.context_window)
        self._check_model(p.model)
        limit = self.config.limits.max_images
        if len(p.images) > limit:
            raise InvalidRequest(f"the messages hold {len(p.images)} images; at most {limit} per "
                                 "request", "messages", "too_many_images")
        prompt_ids = await self._prompt_ids(p.prompt_text, self.config.limits.max_request_tokens,
                                            "messages")
        image_tokens, digest = await self._images(req, p.images)
        # A continued answer (continue_final_message): the engine writes it from its start, as it
        # would have (same prompt, same sampling), and the prefix the client has is not sent.
        max_tokens = p.max_tokens
        if p.continue_prefix and max_tokens is not None:
            max_tokens += count_tokens(p.continue_prefix)
        ereqs = self._engine_requests(req, prompt_ids, image_tokens, digest, max_tokens, p.n,
                                      p.temperature, p.seed)
        head = {"id": f"chatcmpl-{req.request_id}", "object": "chat.completion",
                "created": int(time.time()), "model": p.model,
                "system_fingerprint": f"fp_{self.engine.name}"}
        if p.stream:
            await self._stream(send, req, ereqs, head, p, chat=True)
            return
        tracks = [LogprobTrack() for _ in ereqs] if p.logprobs else None
        results = await self._run_all(req, ereqs, p.stop, tracks)
        if p.continue_prefix:
            results = [(text[len(p.continue_prefix):], finish, t) for text, finish, t in results]
        choices = [_chat_choice(i, text, finish, p, req.request_id)
                   for i, (text, finish, _) in enumerate(results)]
        if p.tool_calls:  # n_tool_calls: the same writer over the answer's tokens
            for choice, writer, (text, _, _) in zip(choices, _call_writers(p, ereqs, req.request_id),
                                                    results, strict=True):
                for token in tokenize(text):
                    writer.feed(token.lower() if token.isalnum() else None)
                writer.finish()
                choice["message"]["tool_calls"] = writer.calls()
        if tracks is not None:
            for choice, ereq, track, (text, _, _) in zip(choices, ereqs, tracks, results, strict=True):
                choice["logprobs"] = _chat_choice_logprobs(choice, ereq, track, text, p)
        usage = _usage(ereqs, results)
        await self._json(send, req, {**head, "choices": choices, "usage": usage})

    async def _completions(self, send: Send, req: _Req, body: dict[str, Any]) -> None:
        p = parse_completion(body, self.engine.context_window)
        self._check_model(p.model)
        limits = self.config.limits
        if len(p.prompts) * p.n > limits.max_sequences:
            raise InvalidRequest(
                f"{len(p.prompts)} prompts x n={p.n} is {len(p.prompts) * p.n} sequences; at most "
                f"{limits.max_sequences} per request", "prompt", "too_many_sequences")
        ereqs: list[EngineRequest] = []
        left = limits.max_request_tokens
        for prompt in p.prompts:
            if isinstance(prompt, str):
                ids = await self._prompt_ids(prompt, left, "prompt")
            elif len(prompt) > left:  # token ids: the context window is checked below
                raise _too_many_tokens(self.engine.context_window, left,
                                       limits.max_request_tokens, "prompt")
            else:
                ids = prompt
            left -= len(ids)
            ereqs += self._engine_requests(req, ids, 0, "", p.max_tokens, p.n, p.temperature,
                                           p.seed, first_index=len(ereqs))
        head = {"id": f"cmpl-{req.request_id}", "object": "text_completion",
                "created": int(time.time()), "model": p.model,
                "system_fingerprint": f"fp_{self.engine.name}"}
        if p.stream:
            await self._stream(send, req, ereqs, head, p, chat=False)
            return
        tracks = [LogprobTrack() for _ in ereqs] if p.logprobs is not None else None
        results = await self._run_all(req, ereqs, p.stop, tracks)
        choices = []
        for i, (text, finish, _) in enumerate(results):
            prefix = _prompt_text(p.prompts[i // p.n]) if p.echo else ""
            logprobs = None
            if tracks is not None and p.logprobs is not None:
                ereq = ereqs[i]
                echoed = (prompt_key(ereq.prompt_token_ids), text_tokens(prefix)) if p.echo else None
                logprobs = completion_logprobs(choice_key(ereq), tracks[i].release(len(text)),
                                               p.logprobs, len(prefix), echoed)
            choices.append({"index": i, "text": prefix + text, "logprobs": logprobs,
                            "finish_reason": finish})
        await self._json(send, req, {**head, "choices": choices, "usage": _usage(ereqs, results)})

    async def _responses(self, send: Send, req: _Req, body: dict[str, Any]) -> None:
        await responses.handle_create(self, self.responses, self.background, send, req, body)

    async def _embeddings(self, send: Send, req: _Req, body: dict[str, Any]) -> None:
        p = parse_embedding(body)
        self._check_model(p.model, embedding=True)
        dims = p.dimensions if body.get("dimensions") is not None else EMBEDDING_MODELS[p.model]
        limits = self.config.limits
        if len(p.inputs) > limits.max_embedding_inputs:
            raise InvalidRequest(f"'input' has {len(p.inputs)} items; at most "
                                 f"{limits.max_embedding_inputs} inputs per request", "input",
                                 "too_many_inputs")
        values = len(p.inputs) * dims
        if values > MAX_EMBEDDING_VALUES:
            raise InvalidRequest(f"{len(p.inputs)} inputs x {dims} dimensions is {values} values; "
                                 f"at most {MAX_EMBEDDING_VALUES} per request", "dimensions",
                                 "too_many_values")
        data, tokens = await self._offload(embedding_data, p.inputs, dims, p.encoding_format,
                                           limits.max_embedding_input_tokens,
                                           limits.max_request_tokens)
        await self._json(send, req, {"object": "list", "data": data, "model": p.model,
                                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
                         offload=values >= OFFLOAD_EMBEDDING_VALUES)

    async def _run_one(self, req: _Req, ereq: EngineRequest, stops: tuple[str, ...],
                       track: LogprobTrack | None = None) -> tuple[str, str, RequestTiming | None]:
        """Run one choice to its end: (text, finish_reason, timing). ``track`` (logprobs were
        asked for) is given every generated id."""
        parts: list[str] = []
        finish, timing = "length", None
        async with self._text_steps(req, self.engine.submit(ereq), TextStream(stops)) as steps:
            async for step in steps:
                parts.append(step.text)
                if track is not None:
                    track.add(step.ids)
                if step.finish is not None:
                    finish, timing = step.finish, step.timing
        req.add_engine_timing(timing)
        return "".join(parts), finish, timing

    @contextlib.asynccontextmanager
    async def _text_steps(self, req: _Req, events: AsyncIterator[TokenEvent],
                          text: TextStream) -> AsyncIterator[AsyncIterator[Step]]:
        """One engine request's events (from ``engine.submit``, called before any header is
        sent so admission errors are real statuses) as text steps, paced by the request's
        faults; the engine's stream is closed when the block ends. (A context, not one more
        generator around the steps: that would be a hop per token.)"""
        paced = _paced(events, req.fault)
        steps = text_steps(paced, text)
        try:
            yield steps
        finally:
            await close_quietly(steps)
            await close_quietly(paced)
            await close_quietly(events)

    async def _run_all(self, req: _Req, ereqs: list[EngineRequest], stops: tuple[str, ...],
                       tracks: list[LogprobTrack] | None = None) -> list[tuple[str, str, RequestTiming | None]]:
        if len(ereqs) == 1:
            return [await self._run_one(req, ereqs[0], stops, tracks[0] if tracks else None)]
        return list(await asyncio.gather(*(
            self._run_one(req, e, stops, tracks[i] if tracks else None) for i, e in enumerate(ereqs))))

    async def _stream(self, send: Send, req: _Req, ereqs: list[EngineRequest],
                      head: dict[str, Any], p: ChatParams | CompletionParams, chat: bool) -> None:
        fault = req.fault
        writer = wire.stream_writer(req.accept)
        head = {**head, "object": "chat.completion.chunk" if chat else "text_completion"}
        # Submit before sending headers so admission errors (429, 503) are real statuses.
        iters = [self.engine.submit(e) for e in ereqs]
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", writer.content_type.encode()), (b"cache-control", b"no-cache")]})
            if fault is not None and fault.reset:
                raise Abort("injected reset")
            deliver = Delivery(send, fault, writer.comment(b"ping"))

            async def emit(chunk: dict[str, Any]) -> None:
                await deliver(writer.chunk({**head, **chunk}))

            results = await self._stream_choices(req, iters, p, chat, emit, ereqs)
            if p.include_usage:
                await emit({"choices": [], "usage": _usage(ereqs, results)})
            trailer = writer.comment(b"server-timing " + req.header_value()) if req.send_timing else b""
            await send({"type": "http.response.body", "body": trailer + writer.done(),
                        "more_body": False})
        except Cut:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            for it in iters:
                await close_quietly(it)

    async def _stream_choices(self, req: _Req, iters: list[AsyncIterator[TokenEvent]],
                              p: ChatParams | CompletionParams, chat: bool,
                              emit: Callable[[dict[str, Any]], Any],
                              ereqs: list[EngineRequest] | None = None) -> list[tuple[str, str, RequestTiming | None]]:
        """Relay the choices' tokens as chunks; ``ereqs`` (the choices' requests) give the keys
        of their logprobs when ``p`` asks for them."""
        texts = [TextStream(p.stop, getattr(p, "continue_prefix", "")) for _ in iters]
        top = _logprobs_top(p)
        logprobs = (_StreamLogprobs([choice_key(e) for e in ereqs], top, chat)
                    if top is not None and ereqs is not None else None)
        words: list[list[int]] = [[] for _ in iters]
        results: list[tuple[str, str, RequestTiming | None]] = [("", "length", None)] * len(iters)
        tool = p.tool if isinstance(p, ChatParams) else None
        document = p if isinstance(p, ChatParams) and p.json_schema is not None and tool is None else None
        writers = (_call_writers(p, ereqs, req.request_id)
                   if isinstance(p, ChatParams) and p.tool_calls and ereqs is not None else None)
        if chat:
            for i in range(len(iters)):
                await emit({"choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                         "logprobs": None, "finish_reason": None}]})
        merged = _merge([_paced(it, req.fault) for it in iters])
        try:
            await self._relay(req, merged, texts, words, results, tool, chat, emit, logprobs, document,
                              writers)
        finally:
            await merged.aclose()  # type: ignore[attr-defined]
        return results

    async def _relay(self, req: _Req, merged: AsyncIterator[tuple[int, TokenEvent]],
                     texts: list[TextStream], words: list[list[int]],
                     results: list[tuple[str, str, RequestTiming | None]], tool: ToolChoice | None,
                     chat: bool, emit: Callable[[dict[str, Any]], Any],
                     logprobs: _StreamLogprobs | None = None, document: ChatParams | None = None,
                     writers: list[ToolCallWriter] | None = None) -> None:
        """``document``: the request asked for a response_format document, streamed once its
        choice is generated (its strings are drawn from the generated words, as in the
        non-streamed answer), in chunks of a few tokens. ``writers`` (``n_tool_calls``): each
        choice's tool calls, written as its tokens come (toolcalls.py)."""
        held = [""] * len(texts) if document is not None else None
        async for i, ev in merged:
            if results[i][2] is not None or texts[i].stopped:
                continue
            delta = texts[i].feed(ev.token_ids)
            words[i] += ev.token_ids
            if logprobs is not None:
                logprobs.tracks[i].add(ev.token_ids)
            finish: str | None = "stop" if texts[i].stopped else ev.finish_reason
            if finish is not None:
                delta += texts[i].flush()
                req.add_engine_timing(ev.timing)
                # Stopped by a stop sequence: the engine's own timing never comes (we close
                # the request early); usage still counts the tokens generated so far.
                results[i] = ("", finish, ev.timing or RequestTiming(completion_tokens=len(words[i])))
            if writers is not None:
                for fragment in _writer_feed(writers[i], ev.token_ids, finish is not None):
                    await emit(_tool_fragment(i, fragment))
            elif held is not None:
                held[i] += delta
            elif delta and tool is None:
                chunk = _stream_choice(i, delta, None, chat)
                if logprobs is not None:
                    chunk["choices"][0]["logprobs"] = logprobs.release(i, len(delta))
                await emit(chunk)
            if finish is not None:
                if tool is not None:
                    if writers is None:
                        await emit(_tool_delta(i, tool, words[i], req.request_id))
                    finish = "tool_calls"
                if held is not None and document is not None:
                    finish = await self._emit_document(i, held[i], document, emit, logprobs)
                await emit(_stream_choice(i, "", finish, chat))
                if all(r[2] is not None for r in results):
                    return  # every choice is done (some by a stop sequence): free the engine


    @staticmethod
    async def _emit_document(i: int, text: str, p: ChatParams, emit: Callable[[dict[str, Any]], Any],
                             logprobs: _StreamLogprobs | None) -> str:
        """A streamed choice's response_format document, four tokens a chunk; its finish reason."""
        choice = _json_choice(i, text, p)
        tokens = text_tokens(choice["message"]["content"])
        for at in range(0, len(tokens), 4):
            group = tokens[at:at + 4]
            chunk = _stream_choice(i, "".join(t[2] for t in group), None, True)
            if logprobs is not None:
                chunk["choices"][0]["logprobs"] = chat_logprobs(logprobs.keys[i], group, logprobs.top)
            await emit(chunk)
        return str(choice["finish_reason"])


# -- pure helpers ------------------------------------------------------------------------
def _retry_after(seconds: float) -> bytes:
    # Retry-After takes whole seconds (RFC 9110 §10.2.3); never 0 for a real wait.
    return str(max(1, round(seconds)) if seconds > 0 else 0).encode()


def _too_many_tokens(window: int, cap: int, request_limit: int, param: str) -> InvalidRequest:
    if cap >= window:
        return InvalidRequest(f"This model's maximum context length is {window} tokens; the "
                              f"prompt has more than {window} tokens.", param,
                              "context_length_exceeded")
    return InvalidRequest(f"the request has more than {request_limit} prompt tokens; at most "
                          f"{request_limit} per request", param, "too_many_tokens")


def _no_model(model: str) -> str:
    return f"The model `{model}` does not exist or you do not have access to it."


def _decode_image(url: str, detail: str, media_type: str | None = None) -> tuple[int, str]:
    result = process_image(decode_data_url(url), detail, media_type)
    return result.tokens, result.digest


def _prompt_text(prompt: str | tuple[int, ...]) -> str:
    from .tokenizer import decode
    return prompt if isinstance(prompt, str) else decode(prompt)


def _usage(ereqs: list[EngineRequest], results: list[tuple[str, str, RequestTiming | None]]) -> dict[str, Any]:
    # Prompt tokens count once per distinct prompt (OpenAI bills n choices one prompt).
    seen: dict[tuple[int, ...], tuple[int, int]] = {}
    completion = 0
    for ereq, (_, _, timing) in zip(ereqs, results, strict=True):
        prompt = len(ereq.prompt_token_ids) + ereq.image_tokens
        cached = timing.cached_prompt_tokens if timing else 0
        seen.setdefault(ereq.prompt_token_ids, (prompt, cached))
        completion += timing.completion_tokens if timing else 0
    prompt_tokens = sum(p for p, _ in seen.values())
    cached_tokens = sum(c for _, c in seen.values())
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": cached_tokens}}


def _tool_call(name: str, text_words: list[str], request_id: str, index: int,
               p_schema: dict[str, Any]) -> dict[str, Any]:
    args = orjson.dumps(tool_arguments(p_schema, text_words)).decode()
    call_id = "call_" + hashlib.blake2b(f"{request_id}-{index}".encode(), digest_size=8).hexdigest()
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def _chat_choice(i: int, text: str, finish: str, p: ChatParams, request_id: str) -> dict[str, Any]:
    if p.tool is not None:
        words = [w for w in tokenize(text) if w.isalnum()]
        call = _tool_call(p.tool.name, words, request_id, i, p.tool.parameters)
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"index": i, "message": message, "logprobs": None, "finish_reason": "tool_calls"}
    if p.json_schema is not None:  # response_format: a document that follows the schema
        return _json_choice(i, text, p)
    return {"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
            "logprobs": None, "finish_reason": finish}


def _json_choice(i: int, text: str, p: ChatParams) -> dict[str, Any]:
    """As a guided-decoding server answers: JSON that parses and conforms to the schema
    (its strings drawn from the generated words), cut at ``max_tokens`` with finish_reason
    ``length`` when the document needs more."""
    from .tokenizer import count_tokens

    assert p.json_schema is not None
    words = [w for w in tokenize(text) if w.isalnum()]
    doc = orjson.dumps(tool_arguments(p.json_schema, words)).decode()
    finish = "stop"
    if p.max_tokens is not None and count_tokens(doc) > p.max_tokens:
        doc, finish = doc[: max(1, len(doc) // 2)], "length"
    return {"index": i, "message": {"role": "assistant", "content": doc, "refusal": None},
            "logprobs": None, "finish_reason": finish}


def _logprobs_top(p: ChatParams | CompletionParams) -> int | None:
    """Alternatives per token ``p`` asks for, or None when it asks for no logprobs."""
    if isinstance(p, ChatParams):
        return p.top_logprobs if p.logprobs else None
    return p.logprobs


def _chat_choice_logprobs(choice: dict[str, Any], ereq: EngineRequest, track: LogprobTrack,
                          text: str, p: ChatParams) -> dict[str, Any]:
    """A chat choice's ``logprobs``: one entry per token of its ``content`` (none for a tool
    call; a response_format document's own tokens)."""
    content = choice["message"]["content"]
    if content is None:
        return {"content": None, "refusal": None}
    tokens = text_tokens(content) if p.json_schema is not None else track.release(len(text))
    return chat_logprobs(choice_key(ereq), tokens, p.top_logprobs)


class _StreamLogprobs:
    """The logprobs of a stream's choices: each chunk carries those of the tokens it completes."""

    __slots__ = ("chat", "keys", "top", "tracks")

    def __init__(self, keys: list[int], top: int, chat: bool) -> None:
        self.keys, self.top, self.chat = keys, top, chat
        self.tracks = [LogprobTrack() for _ in keys]

    def release(self, i: int, chars: int) -> dict[str, Any]:
        tokens = self.tracks[i].release(chars)
        if self.chat:
            return chat_logprobs(self.keys[i], tokens, self.top)
        return completion_logprobs(self.keys[i], tokens, self.top)


def _stream_choice(i: int, delta: str, finish: str | None, chat: bool) -> dict[str, Any]:
    if chat:
        d = {"content": delta} if delta else {}
        return {"choices": [{"index": i, "delta": d, "logprobs": None, "finish_reason": finish}]}
    return {"choices": [{"index": i, "text": delta, "logprobs": None, "finish_reason": finish}]}


def _call_writers(p: ChatParams, ereqs: list[EngineRequest], request_id: str) -> list[ToolCallWriter]:
    """Each choice's ``n_tool_calls`` writer; the calls' ids hash the answer's sample key when
    the answer is deterministic (temperature 0 or a seed: the same conversation, the same ids),
    else the request id and the choice."""
    specs = list(p.tool_calls)
    out = []
    for i, ereq in enumerate(ereqs):
        key = sample_key(ereq)
        out.append(ToolCallWriter(specs, ereq.max_tokens, f"{key:x}" if key is not None else f"{request_id}-{i}"))
    return out


def _writer_feed(writer: ToolCallWriter, ids: tuple[int, ...], last: bool) -> list[dict[str, Any]]:
    """The fragments one engine event's tokens write (each token's word, if it is one; lower
    case, as the non-streamed answer's words, which come from the decoded text)."""
    from .tokenizer import decode

    out: list[dict[str, Any]] = []
    for tid in ids:
        word = decode((tid,)).strip()
        out += writer.feed(word.lower() if word.isalnum() else None)
    if last:
        out += writer.finish()
    return out


def _tool_fragment(i: int, fragment: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": i, "delta": {"tool_calls": [fragment]}, "logprobs": None,
                         "finish_reason": None}]}


def _tool_delta(i: int, tool: ToolChoice, ids: list[int], request_id: str) -> dict[str, Any]:
    from .tokenizer import decode
    words = [w for w in tokenize(decode(ids)) if w.isalnum()]
    call = _tool_call(tool.name, words, request_id, i, tool.parameters)
    return {"choices": [{"index": i, "delta": {"tool_calls": [{"index": 0, **call}]},
                         "logprobs": None, "finish_reason": None}]}


async def _paced(events: AsyncIterator[TokenEvent], fault: FaultSpec | None) -> AsyncIterator[TokenEvent]:
    """Apply ``slow_ms`` and ``straggler`` to an engine's event stream."""
    if fault is None or (not fault.slow_ms and fault.straggler <= 1):
        async for ev in events:
            yield ev
    elif fault.straggler <= 1:
        async for ev in events:
            await asyncio.sleep(fault.slow_ms / 1000)
            yield ev
    else:
        async for ev in _stretched(events, fault.straggler, fault.slow_ms / 1000):
            yield ev


async def _stretched(events: AsyncIterator[TokenEvent], k: float, slow_s: float) -> AsyncIterator[TokenEvent]:
    """Release each event at ``start + k * (its arrival - start)``: the request takes k times its
    engine time. Arrivals are stamped by a pump task, since the engine keeps stepping (and
    queueing events) while we hold them back."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue: asyncio.Queue[tuple[float, TokenEvent | BaseException | None]] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for ev in events:
                queue.put_nowait((loop.time(), ev))
            queue.put_nowait((loop.time(), None))
        except Exception as exc:
            queue.put_nowait((loop.time(), exc))

    task = asyncio.ensure_future(pump())
    extra = 0.0
    try:
        while True:
            at, item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            extra += slow_s
            delay = start + k * (at - start) + extra - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            yield item
    finally:
        await _cancel(task)


async def _cancel(*tasks: asyncio.Future[Any]) -> None:
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


async def _merge(iters: list[AsyncIterator[TokenEvent]]) -> AsyncIterator[tuple[int, TokenEvent]]:
    """Interleave several event streams as events arrive (the ``n`` choices of one request)."""
    if len(iters) == 1:
        async for ev in iters[0]:
            yield 0, ev
        return
    queue: asyncio.Queue[tuple[int, TokenEvent | BaseException | None]] = asyncio.Queue()

    async def pump(i: int, it: AsyncIterator[TokenEvent]) -> None:
        try:
            async for ev in it:
                await queue.put((i, ev))
            await queue.put((i, None))
        except BaseException as exc:
            await queue.put((i, exc))

    tasks = [asyncio.ensure_future(pump(i, it)) for i, it in enumerate(iters)]
    try:
        live = len(iters)
        while live:
            i, item = await queue.get()
            if item is None:
                live -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield i, item
    finally:
        await _cancel(*tasks)




