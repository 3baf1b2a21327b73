"""The Responses API of the reference server: ``POST /v1/responses`` (streamed and not, in the
foreground or in the background), ``GET``/``DELETE /v1/responses/{id}`` (``?stream=true&
starting_after=N`` resumes a background stream), ``POST /v1/responses/{id}/cancel``,
``GET /v1/responses/{id}/input_items``.

Minimal but in OpenAI's documented shapes (API reference, "Responses"): a ``response`` object
whose ``output`` is one assistant ``message`` holding one ``output_text`` part; streams are
typed SSE events (``event:`` + ``data:`` with ``type`` and ``sequence_number``), with no
``[DONE]``. Text comes from the same engine path chat completions use (the app's prompt
tokenizing, engine requests, stop handling and faults): the prompt is the chat prompt of the
conversation, ``"{role}: {content}\\n"`` per message, with ``instructions`` as a leading
``developer`` message and, with ``previous_response_id``, the earlier response's input and
output in front. Stored responses (``store``, default true) live in memory, the last
:data:`MAX_STORED` of them. Background runs and their event logs: ``background.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._http import Abort, Cut, Delivery, Receive, Send, cancel_on_disconnect, close_quietly
from ._validate import (
    ChatParams,
    InvalidRequest,
    _int_field,
    _is_int,
    _model,
    _temperature,
    prompt_cache_key,
)
from .background import BackgroundRun, BackgroundRuns, admit, resume_start
from .engine.base import EngineError
from .tokenizer import encode

__all__ = ["MAX_STORED", "ResponseParams", "ResponseStore", "StoredResponse", "Turn",
           "continuation_wait", "handle_create", "handle_stored", "parse_response_request",
           "previous_not_found", "previous_response"]

MAX_STORED = 1000
INPUT_ROLES = frozenset({"user", "assistant", "system", "developer"})
# OpenAI rejects max_output_tokens below 16 ("integer below minimum value").
MIN_OUTPUT_TOKENS = 16
MAX_LIST_LIMIT = 100
SSE_TYPE = b"text/event-stream; charset=utf-8"


@dataclass(frozen=True)
class ResponseParams:
    model: str
    # this request's input as message items: (role, text, part type as sent)
    messages: tuple[tuple[str, str], ...]
    instructions: str | None
    max_output_tokens: int | None
    temperature: float
    previous_response_id: str | None
    store: bool
    stream: bool
    metadata: dict[str, str] | None
    top_p: float | None
    seed: int | None = None
    background: bool = False
    prompt_cache_key: str | None = None  # OpenAI's routing hint, echoed


@dataclass
class StoredResponse:
    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    # the conversation so far (input and output, earlier responses' first) as prompt text
    transcript: str
    # its server time to the first token, the continuation wait left out (continuation.py)
    pregen_ms: float = 0.0
    # the transcript's token ids: kept only in a WebSocket connection's memory (ws_responses.py)
    transcript_ids: tuple[int, ...] | None = None


@dataclass
class ResponseStore:
    """The last ``limit`` stored responses, by id (oldest dropped first)."""

    limit: int = MAX_STORED
    _items: OrderedDict[str, StoredResponse] = field(default_factory=OrderedDict)

    def put(self, rid: str, item: StoredResponse) -> None:
        self._items[rid] = item
        self._items.move_to_end(rid)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def get(self, rid: str) -> StoredResponse | None:
        return self._items.get(rid)

    def delete(self, rid: str) -> bool:
        return self._items.pop(rid, None) is not None

    def __len__(self) -> int:
        return len(self._items)


# -- validation ----------------------------------------------------------------------------
def _content_text(content: Any, where: str, role: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"'{where}.content' must be a string or a list of content parts",
                             f"{where}.content")
    texts = []
    # An assistant message passed back (a response's output item) holds output_text parts.
    allowed = ("input_text", "output_text") if role == "assistant" else ("input_text",)
    for j, part in enumerate(content):
        pw = f"{where}.content[{j}]"
        if not isinstance(part, dict):
            raise InvalidRequest(f"'{pw}' must be an object", pw)
        if part.get("type") not in allowed:
            raise InvalidRequest(f"'{pw}.type' {part.get('type')!r} is not supported "
                                 f"({', '.join(allowed)})", f"{pw}.type")
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidRequest(f"'{pw}.text' must be a string", f"{pw}.text")
        texts.append(text)
    return " ".join(texts)


def _input(value: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str):
        return (("user", value),)
    if not isinstance(value, list) or not value:
        raise InvalidRequest("'input' must be a string or a non-empty list of input items", "input")
    out = []
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise InvalidRequest(f"'{where}' must be an object", where)
        if item.get("type", "message") != "message":
            raise InvalidRequest(f"'{where}.type' {item.get('type')!r} is not supported (message)",
                                 f"{where}.type")
        role = item.get("role")
        if role not in INPUT_ROLES:
            raise InvalidRequest(f"'{where}.role' must be one of {sorted(INPUT_ROLES)}, got {role!r}",
                                 f"{where}.role")
        out.append((role, _content_text(item.get("content"), where, role)))
    return tuple(out)


def _optional(body: dict[str, Any], name: str, kind: type, label: str) -> Any:
    value = body.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)):
        raise InvalidRequest(f"'{name}' must be {label}", name)
    return value


def parse_response_request(body: dict[str, Any], context_window: int) -> ResponseParams:
    model = _model(body)
    if body.get("input") is None:
        raise InvalidRequest("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    messages = _input(body.get("input"))
    instructions = _optional(body, "instructions", str, "a string")
    max_out = body.get("max_output_tokens")
    if max_out is not None and _is_int(max_out) and max_out < MIN_OUTPUT_TOKENS:
        raise InvalidRequest(f"Invalid 'max_output_tokens': integer below minimum value. Expected "
                             f"a value >= {MIN_OUTPUT_TOKENS}, but got {max_out} instead.",
                             "max_output_tokens", "integer_below_min_value")
    max_output_tokens = _int_field(body, "max_output_tokens", None, MIN_OUTPUT_TOKENS, context_window)
    previous = _optional(body, "previous_response_id", str, "a string")
    store = _optional(body, "store", bool, "a boolean")
    stream = _optional(body, "stream", bool, "a boolean")
    metadata = body.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(v, str) for v in metadata.values())):
        raise InvalidRequest("'metadata' must be an object of string values", "metadata")
    top_p = body.get("top_p")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                              or not 0 <= top_p <= 1):
        raise InvalidRequest("'top_p' must be a number between 0 and 1", "top_p")
    background = _optional(body, "background", bool, "a boolean")
    if background and store is False:
        raise InvalidRequest("Background responses must be stored: 'background' needs 'store' "
                             "true (or left out).", "background")
    seed = body.get("seed")  # not OpenAI's, but vLLM's and ours: same request + seed = same text
    if seed is not None and not _is_int(seed):
        raise InvalidRequest("'seed' must be an integer", "seed")
    return ResponseParams(model=model, messages=messages, instructions=instructions,
                          max_output_tokens=max_output_tokens, temperature=_temperature(body),
                          previous_response_id=previous, store=True if store is None else store,
                          stream=bool(stream), metadata=metadata,
                          top_p=None if top_p is None else float(top_p), seed=seed,
                          background=bool(background), prompt_cache_key=prompt_cache_key(body))


# -- objects ---------------------------------------------------------------------------------
def _not_found(rid: str) -> InvalidRequest:
    return InvalidRequest(f"Response with id '{rid}' not found.", None, "not_found", status=404)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [] if text is None else [_output_text(text)]}


def _usage(input_tokens: int, cached: int, output_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def _response(rid: str, created: int, p: ResponseParams, status: str,
              output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": rid, "object": "response", "created_at": created, "status": status,
        "background": p.background, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": p.instructions, "max_output_tokens": p.max_output_tokens,
        "max_tool_calls": None, "model": p.model, "output": output, "parallel_tool_calls": True,
        "previous_response_id": p.previous_response_id, "reasoning": {"effort": None, "summary": None},
        "service_tier": "default", "store": p.store, "temperature": p.temperature,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": [], "top_logprobs": 0, "top_p": 1.0 if p.top_p is None else p.top_p,
        "truncation": "disabled", "usage": usage, "user": None, "metadata": p.metadata or {},
        "prompt_cache_key": p.prompt_cache_key,
    }


def _input_items(p: ResponseParams) -> list[dict[str, Any]]:
    return [{"id": _new_id("msg"), "type": "message", "status": "completed", "role": role,
             "content": [{"type": "input_text", "text": text}]} for role, text in p.messages]


def _sse(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


# -- handlers (``app`` is the benchmarks.server.app.App) ---------------------------------------
def previous_response(store: ResponseStore, p: ResponseParams) -> StoredResponse | None:
    """The response ``p`` continues (None for a new conversation): 404 when it is not stored."""
    if p.previous_response_id is None:
        return None
    earlier = store.get(p.previous_response_id)
    if earlier is None:
        raise previous_not_found(p.previous_response_id)
    return earlier


def previous_not_found(rid: str) -> InvalidRequest:
    return InvalidRequest(f"Previous response with id '{rid}' not found.",
                          "previous_response_id", "previous_response_not_found", status=404)


async def continuation_wait(app: Any, req: Any, earlier: StoredResponse | None,
                            remembered: bool) -> None:
    """The cost model's reload of a chained turn (``continuation.py``): a turn whose earlier
    response is read back from the store waits for it (``reload`` in Server-Timing); one that
    continues from a WebSocket connection's memory does not, and says what it saved
    (``reload-saved``)."""
    if earlier is None:
        return
    wait = app.config.continuation.reload_ms(earlier.pregen_ms)
    if remembered:
        req.timings["reload"] = 0.0
        req.timings["reload-saved"] = wait
        return
    req.timings["reload"] = wait
    if wait > 0:
        await asyncio.sleep(wait / 1000)


async def handle_create(app: Any, store: ResponseStore, runs: BackgroundRuns, send: Send,
                        req: Any, body: dict[str, Any]) -> None:
    p = parse_response_request(body, app.engine.context_window)
    app._check_model(p.model)
    earlier = previous_response(store, p)
    await continuation_wait(app, req, earlier, remembered=False)
    turn = await Turn.start(app, req, p, earlier, store)
    rid, item_id, created, finish = turn.rid, turn.item_id, turn.created, turn.finish
    ereqs = turn.ereqs
    if p.background:
        runs.sweep(time.monotonic())
        if not admit(runs.live_bytes(), runs.max_bytes):
            raise InvalidRequest(f"Too many background responses in progress: their events hold "
                                 f"{runs.live_bytes()} bytes of the server's {runs.max_bytes}. "
                                 f"Retry later.", None, "background_capacity", status=503)
        gen = _Generation(app, req, ereqs, p, turn.prompt_text, rid, item_id, created, finish)
        queued = _response(rid, created, p, "queued", [], None)
        store.put(rid, StoredResponse(queued, turn.inputs, turn.history + turn.this_input))
        run = BackgroundRun(rid, queued, streamable=p.stream)
        runs.add(run)
        run.task = asyncio.ensure_future(_run_background(gen, run, runs, store))
        if p.stream:
            await _tail(send, req, run, 0)
        else:
            await app._json(send, req, queued)
        return
    if not p.stream:
        text, reason, timing = (await app._run_all(req, ereqs, ()))[0]
        await app._json(send, req, finish(text, reason, timing))
        return
    await _stream(send, req, turn.generation())


class Turn:
    """One response's making, before its engine runs: its prompt (the earlier conversation and
    this input), engine requests, ids, and ``finish``, which builds the final response object
    and keeps it (the server store when ``store``; ``keep``, a WebSocket connection's memory,
    whatever ``store`` says)."""

    def __init__(self) -> None:
        self.app: Any = None
        self.req: Any = None
        self.p: ResponseParams | None = None
        self.rid = self.item_id = self.prompt_text = self.history = self.this_input = ""
        self.created = 0
        self.inputs: list[dict[str, Any]] = []
        self.ereqs: list[Any] = []
        self.prompt_ids: tuple[int, ...] = ()
        self.history_ids: tuple[int, ...] = ()
        self.pre_ms = 0.0  # server time before the engine request, the continuation wait left out
        self.store: ResponseStore | None = None
        self.keep: Any = None

    @classmethod
    async def start(cls, app: Any, req: Any, p: ResponseParams, earlier: StoredResponse | None,
                    store: ResponseStore, keep: Any = None, remembered: bool = False) -> Turn:
        """``remembered``: ``earlier`` comes from a connection's memory, its tokens with it, so
        only this turn's new text is tokenized."""
        t = cls()
        t.app, t.req, t.p, t.store, t.keep = app, req, p, store, keep
        started = time.perf_counter()
        t.history = earlier.transcript if earlier is not None else ""
        t.this_input = "".join(f"{role}: {text}\n" for role, text in p.messages)
        lead = f"developer: {p.instructions}\n" if p.instructions else ""
        t.prompt_text = lead + t.history + t.this_input
        budget = app.config.limits.max_request_tokens
        history_ids = earlier.transcript_ids if remembered and earlier is not None else None
        if history_ids is None:
            t.prompt_ids = await app._prompt_ids(t.prompt_text, budget, "input")
            t.history_ids = ()
        else:
            # Tokens never span a newline and each part ends with one: the parts' tokens,
            # joined, are the whole prompt's.
            new_ids = await app._prompt_ids(lead + t.this_input, budget, "input")
            lead_n = len(await app._prompt_ids(lead, budget, "input")) if lead else 0
            t.prompt_ids = new_ids[:lead_n] + history_ids + new_ids[lead_n:]
            if len(t.prompt_ids) > min(app.engine.context_window, budget):
                await app._prompt_ids(t.prompt_text, budget, "input")  # raises, naming the limit
            t.history_ids = history_ids
        req.timings["tokenize"] = (time.perf_counter() - started) * 1000
        try:
            t.ereqs = app._engine_requests(req, t.prompt_ids, 0, "", p.max_output_tokens, 1,
                                           p.temperature, p.seed)
        except InvalidRequest as exc:  # the chat wording names max_tokens / messages
            raise InvalidRequest(exc.message, "max_output_tokens" if exc.param == "max_tokens"
                                 else "input", exc.code) from None
        t.rid, t.item_id, t.created = _new_id("resp"), _new_id("msg"), int(time.time())
        t.inputs = _input_items(p)
        t.pre_ms = (time.perf_counter() - req.t0) * 1000 - req.timings.get("reload", 0.0)
        return t

    def finish(self, text: str, reason: str, timing: Any) -> dict[str, Any]:
        p = self.p
        assert p is not None
        status = "incomplete" if reason == "length" else "completed"
        usage = _usage(len(self.prompt_ids), timing.cached_prompt_tokens if timing else 0,
                       timing.completion_tokens if timing else 0)
        response = _response(self.rid, self.created, p, status,
                             [_message(self.item_id, text, status)], usage)
        pregen = self.pre_ms + ((timing.queue_ms + timing.prefill_ms) if timing else 0.0)
        answer = f"assistant: {text}\n"
        if p.store:
            self.store.put(self.rid, StoredResponse(response, self.inputs,  # type: ignore[union-attr]
                                                    self.history + self.this_input + answer,
                                                    pregen))
        if self.keep is not None:
            # Only the new text is tokenized when the history's tokens came with it.
            ids = (self.history_ids + _ids(self.this_input + answer) if self.history_ids
                   else _ids(self.history + self.this_input + answer))
            self.keep(self.rid, StoredResponse(response, self.inputs,
                                               self.history + self.this_input + answer, pregen, ids))
        return response

    def generation(self) -> _Generation:
        assert self.p is not None
        return _Generation(self.app, self.req, self.ereqs, self.p, self.prompt_text, self.rid,
                           self.item_id, self.created, self.finish)


def _ids(text: str) -> tuple[int, ...]:
    return tuple(encode(text))


class _Generation:
    """One response's generation: its engine requests and how its events are made."""

    def __init__(self, app: Any, req: Any, ereqs: list[Any], p: ResponseParams, prompt_text: str,
                 rid: str, item_id: str, created: int, finish: Any) -> None:
        self.app, self.req, self.p, self.prompt_text = app, req, p, prompt_text
        self.rid, self.item_id, self.created, self.finish = rid, item_id, created, finish
        self.iters = [app.engine.submit(e) for e in ereqs]  # admission errors (429, 503) now

    async def events(self, put: Any, first_status: str = "in_progress") -> None:
        """Every event of the response, ``response.created`` to its final event, through
        ``put(kind, **fields)``; the engine's streams are closed at the end."""
        p, rid, created = self.p, self.rid, self.created
        where = {"item_id": self.item_id, "output_index": 0, "content_index": 0}
        parts: list[str] = []

        async def emit(chunk: dict[str, Any]) -> None:  # the chat path's chunks, as Responses events
            delta = chunk["choices"][0]["delta"].get("content")
            if delta:
                parts.append(delta)
                await put("response.output_text.delta", **where, delta=delta, logprobs=[])

        try:
            await put("response.created", response=_response(rid, created, p, first_status, [], None))
            await put("response.in_progress", response=_response(rid, created, p, "in_progress", [], None))
            await put("response.output_item.added", output_index=0,
                      item=_message(self.item_id, None, "in_progress"))
            await put("response.content_part.added", **where, part=_output_text(""))
            chat = ChatParams(model=p.model, prompt_text=self.prompt_text, images=(),
                              max_tokens=p.max_output_tokens, n=1, temperature=p.temperature,
                              seed=p.seed, stop=(), stream=True, include_usage=False, tool=None,
                              tool_required=False)
            results = await self.app._stream_choices(self.req, self.iters, chat, True, emit)
            text = "".join(parts)
            _, reason, timing = results[0]
            response = self.finish(text, reason, timing)
            item = response["output"][0]
            await put("response.output_text.done", **where, text=text, logprobs=[])
            await put("response.content_part.done", **where, part=_output_text(text))
            await put("response.output_item.done", output_index=0, item=item)
            await put("response.completed" if response["status"] == "completed"
                      else "response.incomplete", response=response)
        finally:
            for it in self.iters:
                await close_quietly(it)


async def _stream(send: Send, req: Any, gen: _Generation) -> None:
    """A foreground stream: generated while its client reads it, stopped when it leaves."""
    deliver = Delivery(send, req.fault)
    seq = 0

    async def put(kind: str, **fields: Any) -> None:
        nonlocal seq
        data = _sse({"type": kind, "sequence_number": seq, **fields})
        seq += 1
        await deliver(data)

    try:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", SSE_TYPE), (b"cache-control", b"no-cache")]})
        if req.fault is not None and req.fault.reset:
            raise Abort("injected reset")
        await gen.events(put)
        trailer = req.timing_comment()
        await send({"type": "http.response.body", "body": trailer, "more_body": False})
    except Cut:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        for it in gen.iters:
            await close_quietly(it)


async def _run_background(gen: _Generation, run: BackgroundRun, runs: BackgroundRuns,
                          store: ResponseStore) -> None:
    """A background run: its events go to the run's log, whoever reads them (or nobody)."""

    async def put(kind: str, **fields: Any) -> None:
        if "response" in fields:
            run.response = fields["response"]
        run.append(_sse({"type": kind, "sequence_number": len(run.log), **fields}))

    try:
        await gen.events(put, first_status="queued")
    except asyncio.CancelledError:
        pass  # cancelled (POST .../cancel) or deleted: the canceller set the status
    except EngineError as exc:
        failed = {**run.response, "status": "failed",
                  "error": {"code": "server_error", "message": str(exc)}}
        await put("response.failed", response=failed)
        stored = store.get(run.rid)
        if stored is not None:
            stored.response = failed
    except Exception:
        logging.getLogger("benchmarks.server.app").exception("background response %s failed", run.rid)
        failed = {**run.response, "status": "failed",
                  "error": {"code": "server_error", "message": "internal server error"}}
        await put("response.failed", response=failed)
        stored = store.get(run.rid)
        if stored is not None:
            stored.response = failed
    finally:
        run.finish(time.monotonic())
        runs.sweep(time.monotonic())


async def _tail(send: Send, req: Any, run: BackgroundRun, start: int) -> None:
    """Stream a background run's events from index ``start`` of its log, then follow it live
    until it ends. The stream's faults act on this delivery only: the run goes on."""
    deliver = Delivery(send, req.fault)
    try:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", SSE_TYPE), (b"cache-control", b"no-cache")]})
        if req.fault is not None and req.fault.reset:
            raise Abort("injected reset")
        at = start
        while True:
            log = run.log
            while at < len(log):
                await deliver(log[at])
                at += 1
            if run.done or run.dropped:
                break
            await run.changed()
        trailer = req.timing_comment()
        await send({"type": "http.response.body", "body": trailer, "more_body": False})
    except Cut:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def handle_stored(app: Any, store: ResponseStore, runs: BackgroundRuns, send: Send,
                        receive: Receive, req: Any, method: str, rest: str, query: str) -> None:
    """``rest``: the path after ``/v1/responses/``: ``{id}``, ``{id}/input_items`` (GET) or
    ``{id}/cancel`` (POST)."""
    rid, _, sub = rest.partition("/")
    route = (method, sub)
    if not rid or route not in (("GET", ""), ("DELETE", ""), ("GET", "input_items"), ("POST", "cancel")):
        await app._error(send, req, 404, f"{method} /v1/responses/{rest} is not a route of this server")
        return
    runs.sweep(time.monotonic())
    stored = store.get(rid)
    run = runs.get(rid)
    try:
        if stored is None:
            raise _not_found(rid)
        if route == ("DELETE", ""):
            store.delete(rid)
            runs.forget(rid)
            await app._json(send, req, {"id": rid, "object": "response", "deleted": True})
        elif route == ("GET", "input_items"):
            await app._json(send, req, _page(stored.input_items, query))
        elif route == ("POST", "cancel"):
            await app._json(send, req, _cancel(stored, run))
        else:
            args = _query(query)
            if args.get("stream") == "true":
                start = resume_start(_starting_after(args))
                run = _resumable(rid, stored, run)
                watcher = asyncio.ensure_future(cancel_on_disconnect(receive, asyncio.current_task()))
                try:
                    await _tail(send, req, run, start)
                finally:
                    watcher.cancel()
            else:
                await app._json(send, req, run.response if run is not None else stored.response)
    except InvalidRequest as exc:
        await app._error(send, req, exc.status, exc.message, exc.param, exc.code)


def _cancel(stored: StoredResponse, run: BackgroundRun | None) -> dict[str, Any]:
    """Cancel a background response: idempotent on a cancelled one; a finished one is an error."""
    if not stored.response.get("background"):
        raise InvalidRequest("Only responses created with background=true can be cancelled.",
                             None, "not_background")
    current = run.response if run is not None else stored.response
    status = current.get("status")
    if status == "cancelled":
        return current
    if status in ("completed", "incomplete", "failed") or run is None:
        raise InvalidRequest(f"Cannot cancel a response that is already {status}.", None,
                             "response_already_finished")
    cancelled = {**current, "status": "cancelled"}
    run.response = cancelled
    stored.response = cancelled
    if run.task is not None:
        run.task.cancel()
    return cancelled


def _resumable(rid: str, stored: StoredResponse, run: BackgroundRun | None) -> BackgroundRun:
    if not stored.response.get("background"):
        raise InvalidRequest(f"Response '{rid}' was not created with background=true: only a "
                             f"background response can be streamed again.", "stream")
    if run is not None and not run.streamable:
        raise InvalidRequest(f"Response '{rid}' was created without stream=true: only a response "
                             f"created with stream=true can be streamed again.", "stream")
    if run is None or run.dropped:
        raise InvalidRequest(f"The events of response '{rid}' are no longer available (kept "
                             f"while it runs and for a while after).", None, "events_expired",
                             status=404)
    return run


def _query(query: str) -> dict[str, str]:
    from urllib.parse import parse_qs

    return {k: v[-1] for k, v in parse_qs(query).items()}


def _starting_after(args: dict[str, str]) -> int | None:
    raw = args.get("starting_after")
    if raw is None:
        return None
    if not raw.isdigit():
        raise InvalidRequest(f"'starting_after' must be a non-negative integer (a sequence "
                             f"number), got {raw!r}", "starting_after")
    return int(raw)


def _page(items: list[dict[str, Any]], query: str) -> dict[str, Any]:
    """A cursor page of input items: ``limit`` (1-100, default 20), ``order`` (asc or desc,
    the default), ``after`` (an item id)."""
    args = _query(query)
    order = args.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("'order' must be asc or desc", "order")
    raw = args.get("limit", "20")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIST_LIMIT:
        raise InvalidRequest(f"'limit' must be an integer between 1 and {MAX_LIST_LIMIT}", "limit")
    ordered = items if order == "asc" else items[::-1]
    after = args.get("after")
    if after is not None:
        ids = [i["id"] for i in ordered]
        if after not in ids:
            raise InvalidRequest(f"'after': no input item with id '{after}'", "after")
        ordered = ordered[ids.index(after) + 1:]
    data = ordered[: int(raw)]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": len(ordered) > len(data)}
