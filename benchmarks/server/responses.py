"""The Responses API of the reference server: ``POST /v1/responses`` (streamed and not),
``GET``/``DELETE /v1/responses/{id}``, ``GET /v1/responses/{id}/input_items``.

Minimal but in OpenAI's documented shapes (API reference, "Responses"): a ``response`` object
whose ``output`` is one assistant ``message`` holding one ``output_text`` part; streams are
typed SSE events (``event:`` + ``data:`` with ``type`` and ``sequence_number``), with no
``[DONE]``. Text comes from the same engine path chat completions use (the app's prompt
tokenizing, engine requests, stop handling and faults): the prompt is the chat prompt of the
conversation, ``"{role}: {content}\\n"`` per message, with ``instructions`` as a leading
``developer`` message and, with ``previous_response_id``, the earlier response's input and
output in front. Stored responses (``store``, default true) live in memory, the last
:data:`MAX_STORED` of them.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._http import Abort, Cut, Send, close_quietly
from ._validate import ChatParams, InvalidRequest, _int_field, _is_int, _model, _temperature

__all__ = ["MAX_STORED", "ResponseParams", "ResponseStore", "handle_create", "handle_stored",
           "parse_response_request"]

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


@dataclass
class StoredResponse:
    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    # the conversation so far (input and output, earlier responses' first) as prompt text
    transcript: str


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
    seed = body.get("seed")  # not OpenAI's, but vLLM's and ours: same request + seed = same text
    if seed is not None and not _is_int(seed):
        raise InvalidRequest("'seed' must be an integer", "seed")
    return ResponseParams(model=model, messages=messages, instructions=instructions,
                          max_output_tokens=max_output_tokens, temperature=_temperature(body),
                          previous_response_id=previous, store=True if store is None else store,
                          stream=bool(stream), metadata=metadata,
                          top_p=None if top_p is None else float(top_p), seed=seed)


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
        "background": False, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": p.instructions, "max_output_tokens": p.max_output_tokens,
        "max_tool_calls": None, "model": p.model, "output": output, "parallel_tool_calls": True,
        "previous_response_id": p.previous_response_id, "reasoning": {"effort": None, "summary": None},
        "service_tier": "default", "store": p.store, "temperature": p.temperature,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": [], "top_logprobs": 0, "top_p": 1.0 if p.top_p is None else p.top_p,
        "truncation": "disabled", "usage": usage, "user": None, "metadata": p.metadata or {},
    }


def _input_items(p: ResponseParams) -> list[dict[str, Any]]:
    return [{"id": _new_id("msg"), "type": "message", "status": "completed", "role": role,
             "content": [{"type": "input_text", "text": text}]} for role, text in p.messages]


def _sse(event: dict[str, Any]) -> bytes:
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


# -- handlers (``app`` is the benchmarks.server.app.App) ---------------------------------------
async def handle_create(app: Any, store: ResponseStore, send: Send, req: Any,
                        body: dict[str, Any]) -> None:
    p = parse_response_request(body, app.engine.context_window)
    app._check_model(p.model)
    history = ""
    if p.previous_response_id is not None:
        earlier = store.get(p.previous_response_id)
        if earlier is None:
            raise InvalidRequest(f"Previous response with id '{p.previous_response_id}' not found.",
                                 "previous_response_id", "previous_response_not_found", status=404)
        history = earlier.transcript
    this_input = "".join(f"{role}: {text}\n" for role, text in p.messages)
    lead = f"developer: {p.instructions}\n" if p.instructions else ""
    prompt_text = lead + history + this_input
    prompt_ids = await app._prompt_ids(prompt_text, app.config.limits.max_request_tokens, "input")
    try:
        ereqs = app._engine_requests(req, prompt_ids, 0, "", p.max_output_tokens, 1,
                                     p.temperature, p.seed)
    except InvalidRequest as exc:  # the chat wording names max_tokens / messages
        raise InvalidRequest(exc.message, "max_output_tokens" if exc.param == "max_tokens" else "input",
                             exc.code) from None
    rid, item_id, created = _new_id("resp"), _new_id("msg"), int(time.time())
    inputs = _input_items(p)

    def finish(text: str, reason: str, timing: Any) -> dict[str, Any]:
        status = "incomplete" if reason == "length" else "completed"
        usage = _usage(len(prompt_ids), timing.cached_prompt_tokens if timing else 0,
                       timing.completion_tokens if timing else 0)
        response = _response(rid, created, p, status, [_message(item_id, text, status)], usage)
        if p.store:
            store.put(rid, StoredResponse(response, inputs,
                                          history + this_input + f"assistant: {text}\n"))
        return response

    if not p.stream:
        text, reason, timing = (await app._run_all(req, ereqs, ()))[0]
        await app._json(send, req, finish(text, reason, timing))
        return
    await _stream(app, send, req, ereqs, p, prompt_text, rid, item_id, created, finish)


async def _stream(app: Any, send: Send, req: Any, ereqs: list[Any], p: ResponseParams,
                  prompt_text: str, rid: str, item_id: str, created: int, finish: Any) -> None:
    fault = req.fault
    iters = [app.engine.submit(e) for e in ereqs]  # admission errors (429, 503) before headers
    seq = 0
    sent = 0

    async def event(kind: str, **fields: Any) -> None:
        nonlocal seq, sent
        if fault is not None and fault.cut_after is not None and sent >= fault.cut_after:
            raise Cut
        data = _sse({"type": kind, "sequence_number": seq, **fields})
        if fault is not None and fault.malformed_sse and sent == 1:
            data = data[: len(data) // 2] + b"\n\n"
        seq += 1
        sent += 1
        await send({"type": "http.response.body", "body": data, "more_body": True})

    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    parts: list[str] = []

    async def emit(chunk: dict[str, Any]) -> None:  # the chat path's chunks, as Responses events
        delta = chunk["choices"][0]["delta"].get("content")
        if delta:
            parts.append(delta)
            await event("response.output_text.delta", **where, delta=delta, logprobs=[])

    try:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", SSE_TYPE), (b"cache-control", b"no-cache")]})
        if fault is not None and fault.reset:
            raise Abort("injected reset")
        started = _response(rid, created, p, "in_progress", [], None)
        await event("response.created", response=started)
        await event("response.in_progress", response=started)
        await event("response.output_item.added", output_index=0,
                    item=_message(item_id, None, "in_progress"))
        await event("response.content_part.added", **where, part=_output_text(""))
        chat = ChatParams(model=p.model, prompt_text=prompt_text, images=(),
                          max_tokens=p.max_output_tokens, n=1, temperature=p.temperature,
                          seed=p.seed, stop=(), stream=True, include_usage=False, tool=None,
                          tool_required=False)
        results = await app._stream_choices(req, iters, chat, True, emit)
        text = "".join(parts)
        _, reason, timing = results[0]
        response = finish(text, reason, timing)
        item = response["output"][0]
        await event("response.output_text.done", **where, text=text, logprobs=[])
        await event("response.content_part.done", **where, part=_output_text(text))
        await event("response.output_item.done", output_index=0, item=item)
        await event("response.completed" if response["status"] == "completed"
                    else "response.incomplete", response=response)
        trailer = b": server-timing " + req.header_value() + b"\n\n"
        await send({"type": "http.response.body", "body": trailer, "more_body": False})
    except Cut:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        for it in iters:
            await close_quietly(it)


async def handle_stored(app: Any, store: ResponseStore, send: Send, req: Any, method: str,
                     rest: str, query: str) -> None:
    """``rest``: the path after ``/v1/responses/``: ``{id}`` or ``{id}/input_items``."""
    rid, _, sub = rest.partition("/")
    if not rid or (sub and (sub != "input_items" or method != "GET")) or method not in ("GET", "DELETE"):
        await app._error(send, req, 404, f"{method} /v1/responses/{rest} is not a route of this server")
        return
    stored = store.get(rid)
    if stored is None:
        exc = _not_found(rid)
        await app._error(send, req, exc.status, exc.message, exc.param, exc.code)
        return
    if method == "DELETE":
        store.delete(rid)
        await app._json(send, req, {"id": rid, "object": "response", "deleted": True})
    elif sub:
        try:
            page = _page(stored.input_items, query)
        except InvalidRequest as exc:
            await app._error(send, req, exc.status, exc.message, exc.param, exc.code)
            return
        await app._json(send, req, page)
    else:
        await app._json(send, req, stored.response)


def _page(items: list[dict[str, Any]], query: str) -> dict[str, Any]:
    """A cursor page of input items: ``limit`` (1-100, default 20), ``order`` (asc or desc,
    the default), ``after`` (an item id)."""
    from urllib.parse import parse_qs

    args = {k: v[-1] for k, v in parse_qs(query).items()}
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
