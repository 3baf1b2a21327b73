"""Request validation: JSON dicts in, typed parameters out, or an error naming the field.

Pure. Follows OpenAI's API reference for which fields exist and their ranges; unknown fields
are ignored (as vLLM does) so that newer clients keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .logprobs import MAX_COMPLETION_LOGPROBS, MAX_TOP_LOGPROBS

MAX_TOOL_CALLS = 16  # this server's cap on ``n_tool_calls`` (toolcalls.py; OpenAI documents none)

__all__ = [
    "ChatParams",
    "CompletionParams",
    "EmbeddingParams",
    "ImagePart",
    "InvalidRequest",
    "ToolChoice",
    "parse_chat",
    "parse_completion",
    "parse_embedding",
    "prompt_cache_key",
    "request_priority",
]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
MAX_N = 128
MAX_STOP = 4
MAX_EMBED_DIMS = 8192
DEFAULT_EMBED_DIMS = 1536  # text-embedding-3-small's default size


class InvalidRequest(ValueError):
    """A 4xx the client caused; ``param`` names the offending field (OpenAI error shape)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None,
                 status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


@dataclass(frozen=True)
class ImagePart:
    url: str
    detail: str
    where: str  # "messages[0].content[1]", for error messages
    media_type: str | None = None  # declared by the request (Anthropic's base64 source)
    param: str | None = None  # the field an error names (default: ``{where}.image_url``)


@dataclass(frozen=True)
class ToolChoice:
    name: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ChatParams:
    model: str
    prompt_text: str
    images: tuple[ImagePart, ...]
    max_tokens: int | None
    n: int
    temperature: float
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    tool: ToolChoice | None
    tool_required: bool
    # response_format: the JSON Schema the answer follows (json_object: any object), or None
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = 0  # alternatives per token (with logprobs)
    # continue_final_message (vLLM): the last, assistant message is the answer's beginning; the
    # answer goes on from it (the prompt is the messages before it)
    continue_prefix: str = ""
    # n_tool_calls (this server's extension, toolcalls.py): the calls the answer writes one after
    # the other, token by token; empty: the one call of ``tool`` (written whole at the end)
    tool_calls: tuple[ToolChoice, ...] = ()


# What a json_object answer looks like (any JSON object is allowed; this one is small).
JSON_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}}}


def _response_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a ``response_format`` asks for (as a guided-decoding server reads it)."""
    fmt = body.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return JSON_OBJECT_SCHEMA
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise InvalidRequest("'response_format.json_schema.name' must be a string",
                                 "response_format.json_schema.name")
        if schema is not None and not isinstance(schema, dict):
            raise InvalidRequest("'response_format.json_schema.schema' must be an object",
                                 "response_format.json_schema.schema")
        return schema or JSON_OBJECT_SCHEMA
    raise InvalidRequest("'response_format.type' must be text, json_object or json_schema",
                         "response_format.type")


@dataclass(frozen=True)
class CompletionParams:
    model: str
    prompts: tuple[str | tuple[int, ...], ...]
    max_tokens: int
    n: int
    temperature: float
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    echo: bool
    logprobs: int | None = None  # alternatives per token; None: no logprobs


@dataclass(frozen=True)
class EmbeddingParams:
    model: str
    inputs: tuple[str | tuple[int, ...], ...]
    encoding_format: str
    dimensions: int


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("'model' is required and must be a non-empty string", "model")
    return model


def _int_field(body: dict[str, Any], name: str, default: int | None, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if not _is_int(value):
        raise InvalidRequest(f"'{name}' must be an integer, got {type(value).__name__}", name)
    if not lo <= value <= hi:
        raise InvalidRequest(f"'{name}' must be between {lo} and {hi}, got {value}", name)
    return int(value)


def _max_tokens(body: dict[str, Any], context_window: int) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        if body.get(name) is not None:
            return _int_field(body, name, None, 1, context_window)
    return None


def _temperature(body: dict[str, Any]) -> float:
    value = body.get("temperature")
    if value is None:
        return 1.0
    if not _is_num(value) or not 0 <= value <= 2:
        raise InvalidRequest(f"'temperature' must be a number between 0 and 2, got {value!r}",
                             "temperature")
    return float(value)


def _seed(body: dict[str, Any]) -> int | None:
    value = body.get("seed")
    if value is not None and not _is_int(value):
        raise InvalidRequest(f"'seed' must be an integer, got {type(value).__name__}", "seed")
    return value


def _stop(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise InvalidRequest("'stop' must be a non-empty string or a list of them", "stop")
    if len(stops) > MAX_STOP:
        raise InvalidRequest(f"'stop' takes at most {MAX_STOP} sequences", "stop")
    return tuple(stops)


def _chat_logprobs(body: dict[str, Any]) -> tuple[bool, int]:
    """(``logprobs``, ``top_logprobs``) of a chat request."""
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise InvalidRequest(f"'logprobs' must be a boolean, got {type(logprobs).__name__}",
                             "logprobs")
    top = _int_field(body, "top_logprobs", None, 0, MAX_TOP_LOGPROBS)
    if top is not None and not logprobs:
        raise InvalidRequest("'top_logprobs' is only allowed when 'logprobs' is true",
                             "top_logprobs")
    return bool(logprobs), top or 0


def _stream(body: dict[str, Any]) -> tuple[bool, bool]:
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequest("'stream' must be a boolean", "stream")
    options = body.get("stream_options")
    if options is None:
        return bool(stream), False
    if not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true",
                             "stream_options")
    if not isinstance(options, dict):
        raise InvalidRequest("'stream_options' must be an object", "stream_options")
    include = options.get("include_usage", False)
    if not isinstance(include, bool):
        raise InvalidRequest("'stream_options.include_usage' must be a boolean",
                             "stream_options.include_usage")
    return True, include


def _part_text(part: Any, where: str, images: list[ImagePart]) -> str:
    if not isinstance(part, dict):
        raise InvalidRequest(f"'{where}' must be an object", where)
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidRequest(f"'{where}.text' must be a string", f"{where}.text")
        return text
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str):
            raise InvalidRequest(f"'{where}.image_url.url' must be a string",
                                 f"{where}.image_url.url")
        detail = image.get("detail") or "auto"  # type: ignore[union-attr]
        if detail not in ("auto", "low", "high"):
            raise InvalidRequest(f"'{where}.image_url.detail' must be auto, low or high",
                                 f"{where}.image_url.detail")
        images.append(ImagePart(url, detail, where))
        return ""
    raise InvalidRequest(f"'{where}.type' {kind!r} is not supported (text, image_url)",
                         f"{where}.type")


def _message_text(msg: Any, i: int, images: list[ImagePart]) -> str:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise InvalidRequest(f"'{where}' must be an object", where)
    role = msg.get("role")
    if role not in ROLES:
        raise InvalidRequest(f"'{where}.role' must be one of {sorted(ROLES)}, got {role!r}",
                             f"{where}.role")
    content = msg.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(_part_text(p, f"{where}.content[{j}]", images) for j, p in enumerate(content))
    elif content is None and (role == "assistant" and msg.get("tool_calls")):
        text = orjson.dumps(msg["tool_calls"]).decode()
    else:
        raise InvalidRequest(f"'{where}.content' must be a string or a list of parts",
                             f"{where}.content")
    return f"{role}: {text}\n"


def _tools(body: dict[str, Any]) -> tuple[ToolChoice | None, bool, str, tuple[ToolChoice, ...]]:
    """The forced tool (if tool_choice forces one), whether it was 'required', prompt text, and
    the calls ``n_tool_calls`` asks for (toolcalls.py: a named function N times, or with
    'required' the offered tools in order, round and round)."""
    tools = body.get("tools")
    choice = body.get("tool_choice")
    count = _tool_call_count(body)
    if tools is None:
        if choice not in (None, "none", "auto"):
            raise InvalidRequest("'tool_choice' needs 'tools'", "tool_choice")
        if count is not None:
            raise InvalidRequest("'n_tool_calls' needs 'tools' and a 'tool_choice' that forces a call "
                                 "('required' or a named function)", "n_tool_calls")
        return None, False, "", ()
    if not isinstance(tools, list) or not tools:
        raise InvalidRequest("'tools' must be a non-empty list", "tools")
    by_name: dict[str, dict[str, Any]] = {}
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"'tools[{i}].function.name' must be a string",
                                 f"tools[{i}].function.name")
        params = fn.get("parameters") or {}  # type: ignore[union-attr]
        if not isinstance(params, dict):
            raise InvalidRequest(f"'tools[{i}].function.parameters' must be an object",
                                 f"tools[{i}].function.parameters")
        by_name[name] = params
    text = "tools: " + orjson.dumps(tools).decode() + "\n"
    planned = _planned_calls(body)
    if planned is not None:
        if count is not None or choice not in (None, "auto"):
            raise InvalidRequest("'tool_call_plan' is for 'tool_choice' auto, without 'n_tool_calls'",
                                 "tool_call_plan")
        if planned == 0:  # the plan is done: the answer is text
            return None, False, text, ()
        choice, count = "required", planned  # the plan's turn: as n_tool_calls with "required"
    if choice in (None, "none", "auto"):
        if count is not None:
            raise InvalidRequest("'n_tool_calls' needs a 'tool_choice' that forces a call ('required' "
                                 f"or a named function), got {choice!r}", "n_tool_calls")
        return None, False, text, ()
    if choice == "required":
        name = next(iter(by_name))
        names = list(by_name)
        calls = tuple(ToolChoice(names[k % len(names)], by_name[names[k % len(names)]])
                      for k in range(count or 0))
        return ToolChoice(name, by_name[name]), True, text, calls
    fn = choice.get("function") if isinstance(choice, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if name not in by_name:
        raise InvalidRequest("'tool_choice' must be none, auto, required or name a function in "
                             "'tools'", "tool_choice")
    forced = ToolChoice(name, by_name[name])
    return forced, False, text, (forced,) * (count or 0)


def _planned_calls(body: dict[str, Any]) -> int | None:
    """``tool_call_plan`` (this server's extension, a scripted agent's model): a list of whole
    numbers 1-16, the calls of each tool turn in order. The turn is told by the conversation:
    with ``t`` assistant messages carrying ``tool_calls`` already, the answer writes ``plan[t]``
    calls (as ``n_tool_calls`` with ``"required"`` does), and once the plan is done, text (0).
    None without the field. So a framework that sends one set of settings every turn (an agents
    SDK's ``ModelSettings(extra_body=...)``) gets a drawn number of calls per turn."""
    plan = body.get("tool_call_plan")
    if plan is None:
        return None
    if not isinstance(plan, list) or not all(_is_int(v) and 1 <= v <= MAX_TOOL_CALLS for v in plan):
        raise InvalidRequest(f"'tool_call_plan' must be a list of whole numbers from 1 to {MAX_TOOL_CALLS}, "
                             f"got {plan!r}", "tool_call_plan")
    done = sum(1 for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "assistant"
               and m.get("tool_calls"))
    return int(plan[done]) if done < len(plan) else 0


def _tool_call_count(body: dict[str, Any]) -> int | None:
    """``n_tool_calls``: a whole number 1-16, not with ``parallel_tool_calls: false`` above 1."""
    value = body.get("n_tool_calls")
    if value is None:
        return None
    if not _is_int(value) or not 1 <= value <= MAX_TOOL_CALLS:
        raise InvalidRequest(f"'n_tool_calls' must be a whole number from 1 to {MAX_TOOL_CALLS}, got "
                             f"{value!r}", "n_tool_calls")
    if value > 1 and body.get("parallel_tool_calls") is False:
        raise InvalidRequest(f"'n_tool_calls' {value} asks for several calls, and 'parallel_tool_calls' "
                             "false for at most one", "n_tool_calls")
    return int(value)


def request_priority(body: Any, policy: str, header_low: bool) -> int:
    """The request's priority for the engine, lower first, as vLLM's ``--scheduling-policy``
    treats it: the body's ``priority`` (an integer, default 0). Under ``fcfs`` a non-zero one is a
    400 with vLLM's wording (vLLM's ``add_request``: "Got priority {p} but Priority scheduling is
    not enabled.") and every request is 0. Under ``priority`` a request without the field that
    carries ``x-llm-priority: low`` (llmclient's batch calls and prefetches) is 1."""
    value = body.get("priority") if isinstance(body, dict) else None
    if value is not None and not _is_int(value):
        raise InvalidRequest(f"priority must be an integer, got {value!r}", "priority")
    if policy != "priority":
        if value:
            raise InvalidRequest(f"Got priority {value} but Priority scheduling is not enabled.", "priority")
        return 0
    if value is not None:
        return int(value)
    return 1 if header_low else 0


def prompt_cache_key(body: dict[str, Any]) -> str | None:
    """OpenAI's routing hint: a string (this single process has one prefix cache, so it only
    validates it; the responses object echoes it)."""
    key = body.get("prompt_cache_key")
    if key is not None and not isinstance(key, str):
        raise InvalidRequest("'prompt_cache_key' must be a string", "prompt_cache_key")
    return key


def parse_chat(body: dict[str, Any], context_window: int) -> ChatParams:
    model = _model(body)
    prompt_cache_key(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty list", "messages")
    images: list[ImagePart] = []
    prefix = _continue_prefix(body, messages)
    if prefix:
        messages = messages[:-1]
    text = "".join(_message_text(m, i, images) for i, m in enumerate(messages))
    tool, required, tool_text, tool_calls = _tools(body)
    stream, include_usage = _stream(body)
    logprobs, top_logprobs = _chat_logprobs(body)
    if prefix and (tool is not None or logprobs or _response_format(body) is not None):
        raise InvalidRequest("'continue_final_message' continues plain text: not with a forced "
                             "tool, 'response_format' or 'logprobs'", "continue_final_message")
    return ChatParams(
        model=model, prompt_text=tool_text + text, images=tuple(images),
        max_tokens=_max_tokens(body, context_window), n=_int_field(body, "n", 1, 1, MAX_N) or 1,
        temperature=_temperature(body), seed=_seed(body), stop=_stop(body), stream=stream,
        include_usage=include_usage, tool=tool, tool_required=required,
        json_schema=_response_format(body), logprobs=logprobs, top_logprobs=top_logprobs,
        continue_prefix=prefix, tool_calls=tool_calls,
    )


def _continue_prefix(body: dict[str, Any], messages: list[Any]) -> str:
    """The assistant prefix a ``continue_final_message`` request goes on from ("" without one).
    As vLLM checks (its chat-template options): not with ``add_generation_prompt`` (its default
    is true, so it must be set false), the last message must be the assistant's, with text."""
    cont = body.get("continue_final_message", False)
    gen = body.get("add_generation_prompt", True)
    for name, value in (("continue_final_message", cont), ("add_generation_prompt", gen)):
        if not isinstance(value, bool):
            raise InvalidRequest(f"'{name}' must be a boolean, got {value!r}", name)
    if not cont:
        return ""
    if gen:
        raise InvalidRequest("'continue_final_message' and 'add_generation_prompt' cannot both be "
                             "true: set add_generation_prompt to false", "add_generation_prompt")
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or not isinstance(
            last.get("content"), str) or not last["content"]:
        raise InvalidRequest("'continue_final_message' needs the last message to be the "
                             "assistant's, with its text as a string", f"messages[{len(messages) - 1}]")
    if body.get("n") not in (None, 1):
        raise InvalidRequest("'continue_final_message' continues one answer: 'n' must be 1", "n")
    return str(last["content"])


def _inputs(value: Any, name: str) -> tuple[str | tuple[int, ...], ...]:
    """str | list[str] | list[int] | list[list[int]], as OpenAI accepts for prompt/input."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return tuple(value)
        if all(_is_int(v) and v >= 0 for v in value):
            return (tuple(value),)
        if all(isinstance(v, list) and v and all(_is_int(t) and t >= 0 for t in v) for v in value):
            return tuple(tuple(v) for v in value)
    raise InvalidRequest(f"'{name}' must be a string, a list of strings or token ids", name)


def parse_completion(body: dict[str, Any], context_window: int) -> CompletionParams:
    model = _model(body)
    prompts = _inputs(body.get("prompt"), "prompt")
    stream, include_usage = _stream(body)
    echo = body.get("echo", False)
    if not isinstance(echo, bool):
        raise InvalidRequest("'echo' must be a boolean", "echo")
    return CompletionParams(
        model=model, prompts=prompts,
        # OpenAI's legacy completions default max_tokens to 16 (API reference).
        max_tokens=_int_field(body, "max_tokens", 16, 1, context_window) or 16,
        n=_int_field(body, "n", 1, 1, MAX_N) or 1, temperature=_temperature(body),
        seed=_seed(body), stop=_stop(body), stream=stream, include_usage=include_usage, echo=echo,
        logprobs=_int_field(body, "logprobs", None, 0, MAX_COMPLETION_LOGPROBS),
    )


def parse_embedding(body: dict[str, Any]) -> EmbeddingParams:
    model = _model(body)
    inputs = _inputs(body.get("input"), "input")
    fmt = body.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise InvalidRequest("'encoding_format' must be float or base64", "encoding_format")
    dims = _int_field(body, "dimensions", DEFAULT_EMBED_DIMS, 1, MAX_EMBED_DIMS)
    return EmbeddingParams(model, inputs, fmt, dims or DEFAULT_EMBED_DIMS)
