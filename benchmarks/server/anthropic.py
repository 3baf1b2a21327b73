"""The Messages API of the reference server, as Anthropic documents it: ``POST /v1/messages``
(whole, and streamed as its event grammar), ``POST /v1/messages/count_tokens``, and
``GET /v1/models[/{id}]`` in Anthropic's shape when the request carries ``anthropic-version``.

Sources (read 2026-12): the API reference as the official SDK carries it (``anthropic`` 2.17.0:
``types/``, ``lib/streaming/_messages.py``'s accumulator, ``_streaming.py``'s SSE reading),
docs.claude.com/en/api/errors (error shapes, ``request-id``), /en/api/rate-limits (headers),
/en/docs/build-with-claude/streaming (the event flow), /prompt-caching (usage fields) and
/extended-thinking (thinking blocks, ``budget_tokens``).

One engine path with the chat route: the app's prompt tokenizing (``App._prompt_ids``), images
(``App._image_parts``, Anthropic's vision rule), engine requests (``App._engine_requests``), its
text steps with stop sequences and faults (``App._text_steps``), its body reading, rate limits,
fault statuses and engine errors (``App._post``), which answer in Anthropic's error shape here.

A stream (SSE, every event named by an ``event:`` line, as the official client requires)::

    message_start   {"message": {..., "content": [], "stop_reason": null, "usage": {...}}}
    content_block_start {"index": i, "content_block": {thinking | text | tool_use, empty}}
    ping            (once, after the first block starts)
    content_block_delta {"index": i, "delta": thinking_delta | signature_delta | text_delta
                                              | input_json_delta}     (per engine step)
    content_block_stop {"index": i}            (then the next block, if any)
    message_delta   {"delta": {"stop_reason", "stop_sequence"}, "usage": {cumulative}}
    message_stop
    error           (instead, when the engine fails mid-answer: overloaded_error, api_error)

``message_start`` goes out with the engine's first token, when the prefix cache's share of the
prompt is known (``TokenEvent.cached_prompt_tokens``), so its usage is the answer's, as the
API's is. Usage: ``cache_read_input_tokens`` is what the engine's prefix cache served (this
server caches prefixes without being asked, as vLLM does); ``cache_creation_input_tokens`` is
the part up to the last ``cache_control`` breakpoint that was not read (written now);
``input_tokens`` the rest. A thinking answer is two engine requests: the thinking (at most
``budget_tokens``), then the text, whose prompt is the first's prompt and thinking.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson

from ._anthropic_validate import (
    MessagesParams,
    check_version,
    parse_count_tokens,
    parse_messages,
    sign_thinking,
)
from ._http import Abort, Cut, Delivery, Receive, Scope, Send, header
from ._textstream import TextStream, tool_arguments
from ._validate import InvalidRequest
from .engine.base import EngineError, EngineOverloaded, TokenEvent
from .ratelimit import Verdict, anthropic_headers
from .tokenizer import count_tokens, decode, tokenize

__all__ = ["ANTHROPIC", "CLAUDE_MODELS", "OPENAI", "Face", "error_body", "face_of", "ratelimit_headers",
           "request_id"]

ANTHROPIC, OPENAI = "anthropic", "openai"
# Claude model ids served besides the chat models (those of the SDK's ``types/model.py``), so
# code written for Anthropic runs unchanged; --served-model-name replaces them, as on chat.
CLAUDE_MODELS = ("claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-6")
# The API's ``error.type`` per status (docs.claude.com/en/api/errors, "HTTP errors"): other 4xx
# are invalid_request_error, other 5xx api_error.
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
MAX_IMAGES = 100                     # vision: "up to 100 images" per API request
MODELS_PAGE_DEFAULT, MODELS_PAGE_MAX = 20, 1000   # models.list: "Defaults to 20. Ranges from 1 to 1000."
SSE_TYPE = b"text/event-stream; charset=utf-8"
PING = b'event: ping\ndata: {"type":"ping"}\n\n'
JSON_CHUNK_CHARS = 16                # a tool call's or a document's JSON, streamed this many chars a delta
CREATED_AT = "2023-11-14T22:13:20Z"  # app.CREATED as RFC 3339: model lists stay byte-stable


def face_of(scope: Scope) -> str:
    """Which API a request speaks: the Messages routes always Anthropic's; the models routes
    Anthropic's when the request carries ``anthropic-version`` (the official client always
    does), OpenAI's otherwise."""
    path = scope.get("path", "")
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        return ANTHROPIC
    if (path == "/v1/models" or path.startswith("/v1/models/")) and header(scope, b"anthropic-version"):
        return ANTHROPIC
    return OPENAI


def request_id(rid: str) -> str:
    """Anthropic's ``request-id``: the server's own request id (``x-request-id``, the log's
    ``request_id=``) behind the API's ``req_`` prefix, so one grep finds both."""
    return f"req_{rid}"


def error_body(status: int, message: str, rid: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id(rid)}


def ratelimit_headers(verdict: Verdict) -> list[tuple[bytes, bytes]]:
    return anthropic_headers(verdict)


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **data}) + b"\n\n"


def _sse_error(kind: str, message: str) -> bytes:
    return _sse("error", {"error": {"type": kind, "message": message}})


def _tool_use_id(rid: str, index: int) -> str:
    return "toolu_" + hashlib.blake2b(f"{rid}-{index}".encode(), digest_size=12).hexdigest()


def _display_name(model_id: str) -> str:
    words: list[str] = []
    version: list[str] = []
    for part in model_id.split("-"):
        (version if part.isdigit() else words).append(part if part.isdigit() else part.capitalize())
    return " ".join(words + ([".".join(version)] if version else []))


def _chunks(text: str) -> list[str]:
    return [text[i:i + JSON_CHUNK_CHARS] for i in range(0, len(text), JSON_CHUNK_CHARS)] or [""]


# -- usage (pure) ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Prompt:
    """A request's prompt as the engine gets it, and what a cache write would cover."""

    ids: tuple[int, ...]
    image_tokens: int
    digest: str
    marked: int | None    # tokens up to the last cache_control breakpoint; None: no breakpoint
    ttl: str

    @property
    def tokens(self) -> int:
        return len(self.ids) + self.image_tokens


def usage(prompt: Prompt, cached: int, output_tokens: int) -> dict[str, Any]:
    """Anthropic's usage: input_tokens + cache_creation + cache_read = the prompt's tokens."""
    read = min(cached, prompt.tokens)
    written = max(0, (prompt.marked or 0) - read)
    return {"input_tokens": prompt.tokens - read - written, "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": written if prompt.ttl == "5m" else 0,
                               "ephemeral_1h_input_tokens": written if prompt.ttl == "1h" else 0},
            "output_tokens": output_tokens, "service_tier": "standard"}


# -- what an answer is made of -----------------------------------------------------------------
@dataclass(frozen=True)
class _Start:
    cached: int
    generated: int
    block: dict[str, Any] | None  # the first content block, empty, or None (max_tokens 0)


@dataclass(frozen=True)
class _Delta:
    kind: str  # "thinking" or "text"
    text: str


@dataclass(frozen=True)
class _ThinkingDone:
    thinking: str
    signature: str


@dataclass(frozen=True)
class _ToolCall:
    tool_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class _Done:
    stop_reason: str
    stop_sequence: str | None
    output_tokens: int
    cached: int


_Part = _Start | _Delta | _ThinkingDone | _ToolCall | _Done


class Face:
    """The Anthropic routes of an :class:`~benchmarks.server.app.App` (``app``)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        served = app.chat_models
        self.models: tuple[str, ...] = served if app.config.served_names else (*served, *CLAUDE_MODELS)

    # -- routing ---------------------------------------------------------------------------
    async def dispatch(self, scope: Scope, receive: Receive, send: Send, req: Any) -> None:
        app, method, path = self.app, scope["method"], scope["path"]
        req.accept = None  # JSON and SSE only: the Messages API has no other wire
        routes: dict[str, tuple[str, Any]] = {"/v1/messages": ("POST", self.messages),
                                              "/v1/messages/count_tokens": ("POST", self.count_tokens),
                                              "/v1/models": ("GET", self.list_models)}
        want, handler = routes.get(path, ("GET", self.get_model) if path.startswith("/v1/models/") else (None, None))
        if handler is None:
            await app._error(send, req, 404, f"{method} {path}: not found")
            return
        if method != want:
            await app._error(send, req, 405, f"{method} {path}: method not allowed (use {want})")
            return
        problem = self._auth_error(scope)
        if problem is not None:
            await app._error(send, req, 401, problem)
            return
        problem = check_version(header(scope, b"anthropic-version"))
        if problem is not None:
            await app._error(send, req, 400, problem)
            return
        if method == "GET":
            try:
                await handler(send, req, scope)
            except InvalidRequest as exc:
                await app._error(send, req, exc.status, exc.message)
            return
        await app._post(handler, scope, receive, send, req)

    def _auth_error(self, scope: Scope) -> str | None:
        """As the API: ``x-api-key`` (or ``Authorization: Bearer``, what the official client's
        ``auth_token`` sends) must carry the key, where the server has one (``--api-key``)."""
        key = self.app.config.api_key
        if key is None:
            return None
        given, bearer = header(scope, b"x-api-key"), header(scope, b"authorization")
        if given is None and bearer is None:
            return "x-api-key header is required"
        if hmac.compare_digest((given or "").encode(), key.encode()) or \
                hmac.compare_digest((bearer or "").encode(), f"Bearer {key}".encode()):
            return None
        return "invalid x-api-key"

    def _check_model(self, model: str) -> None:
        if model not in self.models:
            raise InvalidRequest(f"model: {model}", "model", "not_found", status=404)

    # -- models ------------------------------------------------------------------------------
    def _model_info(self, model_id: str) -> dict[str, Any]:
        window = self.app.engine.context_window
        return {"type": "model", "id": model_id, "display_name": _display_name(model_id),
                "created_at": CREATED_AT, "max_input_tokens": window, "max_tokens": window,
                "lifecycle": "active"}

    async def list_models(self, send: Send, req: Any, scope: Scope) -> None:
        query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        await self.app._json(send, req, models_page(self.models, query, self._model_info))

    async def get_model(self, send: Send, req: Any, scope: Scope) -> None:
        model_id = scope["path"][len("/v1/models/"):]
        self._check_model(model_id)
        await self.app._json(send, req, self._model_info(model_id))

    # -- messages ----------------------------------------------------------------------------
    async def count_tokens(self, send: Send, req: Any, body: dict[str, Any]) -> None:
        p = parse_count_tokens(body, self.app.engine.context_window)
        self._check_model(p.model)
        prompt = await self._prompt(req, p)
        await self.app._json(send, req, {"input_tokens": prompt.tokens})

    async def _prompt(self, req: Any, p: MessagesParams) -> Prompt:
        app = self.app
        if len(p.images) > MAX_IMAGES:
            raise InvalidRequest(f"messages: too many images: {len(p.images)} > {MAX_IMAGES}", "messages")
        window = app.engine.context_window
        try:
            ids = await app._prompt_ids(p.prompt_text, app.config.limits.max_request_tokens, "messages")
        except InvalidRequest as exc:
            cap = min(window, app.config.limits.max_request_tokens)
            raise InvalidRequest(f"prompt is too long: more than {cap} tokens > {cap} maximum"
                                 + ("" if cap == window else " (the server's --max-request-tokens)"),
                                 "messages") from exc
        per_image, digest = await app._image_parts(req, p.images)
        marked = None
        if p.marked_chars or p.marked_images:
            marked = count_tokens(p.prompt_text[:p.marked_chars]) + sum(per_image[:p.marked_images])
        prompt = Prompt(ids, sum(per_image), digest, marked, p.cache_ttl)
        if prompt.tokens >= window:
            raise InvalidRequest(f"prompt is too long: {prompt.tokens} tokens > {window - 1} maximum",
                                 "messages")
        return prompt

    async def messages(self, send: Send, req: Any, body: dict[str, Any]) -> None:
        app = self.app
        p = parse_messages(body, app.engine.context_window)
        self._check_model(p.model)
        prompt = await self._prompt(req, p)
        first_max = _first_request_tokens(p)
        window = app.engine.context_window
        if prompt.tokens + max(p.max_tokens, first_max) > window:
            raise InvalidRequest(
                f"input length and `max_tokens` exceed context limit: {prompt.tokens} + "
                f"{max(p.max_tokens, first_max)} > {window}, decrease input length or `max_tokens` "
                f"and try again", "max_tokens")
        ereq = app._engine_requests(req, prompt.ids, prompt.image_tokens, prompt.digest, first_max, 1,
                                    p.temperature, None)[0]
        events = app.engine.submit(ereq)  # admission errors (overload, loading) are statuses now
        answer = _Answer(app, req, p, prompt, f"msg_{uuid.uuid4().hex}")
        if p.stream:
            await _stream(send, req, answer, events)
        else:
            await app._json(send, req, await answer.message(events))


def _first_request_tokens(p: MessagesParams) -> int:
    """The first engine request's generation cap: the thinking (budget, and never all of
    ``max_tokens``), or the answer (plus a prefill, which the engine writes again from its start,
    as the chat route's continue_final_message does; at least 1: ``max_tokens`` 0 still runs the
    prefill, which fills the prefix cache, and its token is dropped)."""
    if p.thinking_budget is not None:
        return max(1, min(p.thinking_budget, p.max_tokens - 1))
    return max(1, p.max_tokens + (count_tokens(p.prefill) if p.prefill else 0))


def models_page(models: tuple[str, ...], query: dict[str, str], info: Any) -> dict[str, Any]:
    """A page of the model list (``limit``, ``after_id`` or ``before_id``), in Anthropic's
    shape: ``data``, ``first_id``, ``last_id``, ``has_more``."""
    raw = query.get("limit", str(MODELS_PAGE_DEFAULT))
    if not raw.isdigit() or not 1 <= int(raw) <= MODELS_PAGE_MAX:
        raise InvalidRequest(f"limit: Input should be an integer from 1 to {MODELS_PAGE_MAX}", "limit")
    limit = int(raw)
    after, before = query.get("after_id"), query.get("before_id")
    for name, value in (("after_id", after), ("before_id", before)):
        if value is not None and value not in models:
            raise InvalidRequest(f"{name}: no model with id {value!r}", name)
    if before is not None:
        end = models.index(before)
        ids, more = models[max(0, end - limit):end], end - limit > 0
    else:
        start = models.index(after) + 1 if after is not None else 0
        ids, more = models[start:start + limit], start + limit < len(models)
    return {"data": [info(m) for m in ids], "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None, "has_more": more}


class _Answer:
    """One answer's generation as parts (:data:`_Part`), read by the whole and the streamed
    renderings alike."""

    def __init__(self, app: Any, req: Any, p: MessagesParams, prompt: Prompt, message_id: str) -> None:
        self.app, self.req, self.p, self.prompt, self.id = app, req, p, prompt, message_id

    def head(self) -> dict[str, Any]:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.p.model,
                "content": [], "stop_reason": None, "stop_sequence": None}

    async def parts(self, events: AsyncIterator[TokenEvent]) -> AsyncIterator[_Part]:
        p, app, req = self.p, self.app, self.req
        state = _State()
        if p.thinking_budget is not None:
            thinking_ids: list[int] = []
            text = TextStream(())
            async with app._text_steps(req, events, text) as steps:
                async for step in steps:
                    start = state.start(step, {"type": "thinking", "thinking": "", "signature": ""})
                    if start is not None:
                        yield start
                    thinking_ids += step.ids
                    state.thinking.append(step.text)
                    if step.text and p.thinking_shown:
                        yield _Delta("thinking", step.text)
                    if step.finish is not None:
                        state.finish(step)
            thought = "".join(state.thinking) if p.thinking_shown else ""
            yield _ThinkingDone(thought, sign_thinking(thought))
            ids = self.prompt.ids + tuple(thinking_ids)
            ereq = app._engine_requests(req, ids, self.prompt.image_tokens, self.prompt.digest,
                                        p.max_tokens - state.generated, 1, p.temperature, None, 1)[0]
            events = app.engine.submit(ereq)
        tool, schema = p.tool, p.json_schema
        block: dict[str, Any] | None = {"type": "text", "text": ""}
        if p.max_tokens == 0:
            block = None  # nothing is generated: no block
        elif tool is not None:
            block = {"type": "tool_use", "id": _tool_use_id(req.request_id, 0), "name": tool.name, "input": {}}
        text = TextStream(p.stop_sequences, p.prefill)
        words: list[int] = []
        async with app._text_steps(req, events, text) as steps:
            async for step in steps:
                start = state.start(step, block)
                if start is not None:
                    yield start
                words += step.ids
                if step.text and block is not None and tool is None and schema is None:
                    yield _Delta("text", step.text)
                if step.finish is not None:
                    state.finish(step)
        output = state.generated - (count_tokens(p.prefill) if p.prefill else 0)
        if p.max_tokens == 0:
            yield _Done("max_tokens", None, 0, state.cached)
            return
        if tool is not None and block is not None:
            arguments = tool_arguments(tool.parameters, _words(words))
            yield _ToolCall(block["id"], tool.name, arguments)
            yield _Done("tool_use", None, max(0, output), state.cached)
            return
        reason, matched = ("stop_sequence", text.matched) if text.matched else \
            ("max_tokens" if state.reason == "length" else "end_turn", None)
        if schema is not None:  # as the chat route's response_format: whole unless it cannot fit
            doc = orjson.dumps(tool_arguments(schema, _words(words))).decode()
            reason, matched = "end_turn", None
            if count_tokens(doc) > p.max_tokens:  # as a guided-decoding server: cut at max_tokens
                doc, reason = doc[: max(1, len(doc) // 2)], "max_tokens"
            for piece in _chunks(doc):
                yield _Delta("text", piece)
        yield _Done(reason, matched, max(0, output), state.cached)

    async def message(self, events: AsyncIterator[TokenEvent]) -> dict[str, Any]:
        """The whole answer: a ``message`` object."""
        content: list[dict[str, Any]] = []
        done: _Done | None = None
        async for part in self.parts(events):
            if isinstance(part, _Start):
                if part.block is not None and part.block["type"] != "tool_use":
                    content.append(dict(part.block))
            elif isinstance(part, _Delta):
                if not content or content[-1]["type"] != part.kind:  # the text after thinking
                    content.append({"type": "text", "text": ""})
                content[-1][part.kind] += part.text
            elif isinstance(part, _ThinkingDone):
                content[-1].update(thinking=part.thinking, signature=part.signature)
            elif isinstance(part, _ToolCall):
                content.append({"type": "tool_use", "id": part.tool_id, "name": part.name,
                                "input": part.arguments})
            else:
                done = part
        assert done is not None
        return {**self.head(), "content": content, "stop_reason": done.stop_reason,
                "stop_sequence": done.stop_sequence,
                "usage": usage(self.prompt, done.cached, done.output_tokens)}


class _State:
    """What the parts have said so far: started, tokens generated, the cache's share."""

    def __init__(self) -> None:
        self.started: _Start | None = None
        self.generated = 0
        self.cached = 0
        self.reason = "length"
        self.thinking: list[str] = []

    def start(self, step: Any, block: dict[str, Any] | None) -> _Start | None:
        """The answer's start on its first step (None on the others)."""
        if self.started is not None:
            return None
        self.cached = step.cached if step.cached is not None else (
            step.timing.cached_prompt_tokens if step.timing is not None else 0)
        self.started = _Start(self.cached, len(step.ids), block)
        return self.started

    def finish(self, step: Any) -> None:
        self.reason = step.finish
        self.generated += step.timing.completion_tokens if step.timing is not None else 0


def _words(ids: list[int]) -> list[str]:
    return [w for w in tokenize(decode(ids)) if w.isalnum()]


# -- the stream ------------------------------------------------------------------------------
async def _stream(send: Send, req: Any, answer: _Answer, events: AsyncIterator[TokenEvent]) -> None:
    fault = req.fault
    deliver = Delivery(send, fault, PING, _sse_error("overloaded_error", "Overloaded"))
    index = -1
    open_block: str | None = None
    try:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", SSE_TYPE), (b"cache-control", b"no-cache")]})
        if fault is not None and fault.reset:
            raise Abort("injected reset")
        try:
            async for part in answer.parts(events):
                if isinstance(part, _Start):
                    usage_now = usage(answer.prompt, part.cached, part.generated)
                    await deliver(_sse("message_start", {"message": {**answer.head(), "usage": usage_now}}))
                    if part.block is not None:
                        index, open_block = index + 1, part.block["type"]
                        await deliver(_sse("content_block_start", {"index": index, "content_block": part.block}))
                    await deliver(PING)
                elif isinstance(part, _Delta):
                    if open_block != part.kind:
                        if open_block is not None:
                            await deliver(_sse("content_block_stop", {"index": index}))
                        index, open_block = index + 1, part.kind
                        await deliver(_sse("content_block_start", {
                            "index": index, "content_block": {"type": "text", "text": ""}}))
                    delta = {"type": f"{part.kind}_delta", part.kind: part.text}
                    await deliver(_sse("content_block_delta", {"index": index, "delta": delta}))
                elif isinstance(part, _ThinkingDone):
                    delta = {"type": "signature_delta", "signature": part.signature}
                    await deliver(_sse("content_block_delta", {"index": index, "delta": delta}))
                    await deliver(_sse("content_block_stop", {"index": index}))
                    open_block = None
                elif isinstance(part, _ToolCall):
                    for piece in ["", *_chunks(orjson.dumps(part.arguments).decode())]:
                        delta = {"type": "input_json_delta", "partial_json": piece}
                        await deliver(_sse("content_block_delta", {"index": index, "delta": delta}))
                else:
                    if open_block is not None:
                        await deliver(_sse("content_block_stop", {"index": index}))
                    final = usage(answer.prompt, part.cached, part.output_tokens)
                    final = {k: v for k, v in final.items() if k not in ("cache_creation", "service_tier")}
                    await deliver(_sse("message_delta", {
                        "delta": {"stop_reason": part.stop_reason, "stop_sequence": part.stop_sequence},
                        "usage": final}))
                    await deliver(_sse("message_stop", {}))
        except EngineError as exc:  # the headers are gone: the API's mid-stream error event
            kind = "overloaded_error" if isinstance(exc, EngineOverloaded) else "api_error"
            await send({"type": "http.response.body", "body": _sse_error(kind, str(exc)), "more_body": True})
        await send({"type": "http.response.body", "body": req.timing_comment(), "more_body": False})
    except Cut:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
