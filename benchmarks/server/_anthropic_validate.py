"""Anthropic Messages API requests: JSON dicts in, typed parameters out, or an error in the
API's words (pure).

Follows the API reference as the official SDK documents it (``anthropic`` 2.17.0,
``types/message_create_params.py`` and ``message_count_tokens_params.py``; ``temperature``,
``top_p`` and ``top_k`` as the API reference documented them, 0-1 for the first two) and the
errors the API answers (docs.claude.com/en/api/errors): a 400 ``invalid_request_error`` whose
message starts with the field's path, ``messages.0.content.1.source: ...``, and unknown
top-level fields refused (``foo: Extra inputs are not permitted``), unlike the OpenAI routes.

What the prompt is (the engine sees one text, as the chat route builds it): ``tools`` first,
then ``system``, then the turns, in the order Anthropic's prompt cache reads a prefix
(docs.claude.com/en/docs/build-with-claude/prompt-caching: "tools, system, then messages"):
``"tools: <json>\\n"``, ``"system: <text>\\n"``, ``"{role}: <blocks joined by spaces>\\n"`` per
turn. Consecutive turns of one role are combined into one turn, as the API reference says
("Consecutive user or assistant turns in your request will be combined into a single turn"),
so they are not an error. Thinking blocks of earlier turns are not part of the prompt (the API
strips them from the context); their signatures are checked. A final assistant turn is a prefill:
the answer goes on from it (``prefill``), as the chat route's ``continue_final_message`` does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Any

import orjson

from ._validate import ImagePart, InvalidRequest, ToolChoice

__all__ = [
    "COUNT_FIELDS",
    "CREATE_FIELDS",
    "MessagesParams",
    "check_version",
    "parse_count_tokens",
    "parse_messages",
    "sign_thinking",
]

# Limits as the API states them (SDK 2.17.0 docstrings and docs.claude.com, read 2026-12).
MAX_MESSAGES = 100_000               # "There is a limit of 100,000 messages in a single request."
MIN_THINKING_BUDGET = 1024           # thinking.budget_tokens: "Must be >=1024 and less than max_tokens"
MAX_CACHE_BREAKPOINTS = 4            # prompt caching: "up to 4 cache breakpoints"
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024  # vision: 5 MB per image (of the base64 the API gets)
MAX_METADATA_USER_ID = 256
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")   # tool use docs: the name's pattern
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
CACHE_TTLS = ("5m", "1h")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# The share of max_tokens an adaptive-thinking answer thinks for (Claude decides; this server
# decides so, every time).
ADAPTIVE_THINKING_SHARE = 4
# A thinking block's signature: an HMAC of its text under this server's key. The API signs
# its thinking so that a block passed back can be checked; a fixed key lets every replica of
# the reference server check every other's (it authenticates nothing secret).
_SIGNING_KEY = b"llmclient-reference-server-thinking"

CREATE_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature", "top_p",
    "top_k", "metadata", "tools", "tool_choice", "thinking", "cache_control", "output_config",
    "service_tier", "speed", "inference_geo", "user_profile_id", "container", "diagnostics",
    "priority",  # vLLM's scheduling priority (--scheduling-policy priority), as on the chat route
})
COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking",
                          "cache_control", "output_config", "speed"})
# Accepted and validated, but this server has nothing they would change.
_UNSUPPORTED = {"container": "containers run server tools, which this server has none of",
                "diagnostics": "this server does not report prompt-cache diagnostics"}


@dataclass(frozen=True)
class MessagesParams:
    model: str
    max_tokens: int                  # 0: fill the prompt cache, generate nothing
    prompt_text: str
    images: tuple[ImagePart, ...]
    # prompt_text[:marked_chars] (and the first marked_images images) is the part up to the
    # last cache_control breakpoint: what a cache write covers. 0: no breakpoint.
    marked_chars: int = 0
    marked_images: int = 0
    cache_ttl: str = "5m"            # the last breakpoint's
    prefill: str = ""                # the final assistant turn's text: the answer goes on from it
    stop_sequences: tuple[str, ...] = ()
    temperature: float = 1.0
    stream: bool = False
    tool: ToolChoice | None = None   # tool_choice any/tool: the tool the answer calls
    thinking_budget: int | None = None
    thinking_shown: bool = True      # thinking.display "omitted": the text is left out
    json_schema: dict[str, Any] | None = None  # output_config.format


def check_version(value: str | None) -> str | None:
    """The error for an ``anthropic-version`` header, or None when it is usable. Any date is
    taken: the official client sends the version it was built for (2.17.0: ``2026-10-21``)."""
    if value is None:
        return "anthropic-version: header is required"
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return f"anthropic-version: {value!r} is not a valid version (a date, e.g. 2023-06-01)"
    return None


def sign_thinking(text: str) -> str:
    return base64.b64encode(hmac.new(_SIGNING_KEY, text.encode(), hashlib.blake2b).digest()[:48]).decode()


def parse_messages(body: dict[str, Any], context_window: int) -> MessagesParams:
    """A ``POST /v1/messages`` body."""
    return _parse(body, context_window, count=False)


def parse_count_tokens(body: dict[str, Any], context_window: int) -> MessagesParams:
    """A ``POST /v1/messages/count_tokens`` body (no ``max_tokens``, ``stream``, sampling)."""
    return _parse(body, context_window, count=True)


# -- helpers ---------------------------------------------------------------------------------
def _err(message: str, param: str | None = None) -> InvalidRequest:
    return InvalidRequest(message, param)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _err(f"{where}: Input should be a valid string", where)
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _err(f"{where}: Input should be a valid dictionary or object", where)
    return value


def _extra(obj: dict[str, Any], allowed: frozenset[str] | set[str], where: str) -> None:
    extra = next((k for k in obj if k not in allowed), None)
    if extra is not None:
        path = f"{where}.{extra}" if where else str(extra)
        raise _err(f"{path}: Extra inputs are not permitted", path)


def _required(obj: dict[str, Any], name: str, where: str = "") -> Any:
    path = f"{where}.{name}" if where else name
    if obj.get(name) is None:
        raise _err(f"{path}: Field required", path)
    return obj[name]


class _Prompt:
    """The prompt text as it is built, with the end of the last cache breakpoint."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.images: list[ImagePart] = []
        self.marked_chars = 0
        self.marked_images = 0
        self.ttl = "5m"
        self.breakpoints = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def mark(self, control: Any, where: str) -> None:
        if control is None:
            return
        c = _dict(control, where)
        _extra(c, {"type", "ttl"}, where)
        if c.get("type") != "ephemeral":
            raise _err(f"{where}.type: Input should be 'ephemeral'", f"{where}.type")
        ttl = c.get("ttl", "5m")
        if ttl not in CACHE_TTLS:
            raise _err(f"{where}.ttl: Input should be '5m' or '1h'", f"{where}.ttl")
        self.breakpoints += 1
        if self.breakpoints > MAX_CACHE_BREAKPOINTS:
            raise _err(f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                       f"provided. Found {self.breakpoints}.", where)
        self.marked_chars, self.marked_images, self.ttl = self.size, len(self.images), ttl

    def text(self) -> str:
        return "".join(self.parts)


# -- the request -----------------------------------------------------------------------------
def _parse(body: dict[str, Any], window: int, count: bool) -> MessagesParams:
    if not isinstance(body, dict):
        raise _err("The request body must be a JSON object")
    _extra(body, COUNT_FIELDS if count else CREATE_FIELDS, "")
    for name, why in _UNSUPPORTED.items():
        if body.get(name) is not None:
            raise _err(f"{name}: not supported by this server ({why})", name)
    model = _str(_required(body, "model"), "model")
    if not model:
        raise _err("model: String should have at least 1 character", "model")
    max_tokens = 0 if count else _max_tokens(body, window, model)
    messages = _required(body, "messages")
    if not isinstance(messages, list):
        raise _err("messages: Input should be a valid list", "messages")
    if not messages:
        raise _err("messages: at least one message is required", "messages")
    if len(messages) > MAX_MESSAGES:
        raise _err(f"messages: too many messages: {len(messages)} > {MAX_MESSAGES}", "messages")
    prompt = _Prompt()
    tools = _tools(body.get("tools"), prompt)
    _system(body.get("system"), prompt)
    turns = _turns(messages)
    prefill = _conversation(turns, prompt)
    if body.get("cache_control") is not None:  # the last cacheable block: the whole prompt
        prompt.mark(body["cache_control"], "cache_control")
    tool = _tool_choice(body.get("tool_choice"), tools)
    budget, shown = _thinking(body.get("thinking"), max_tokens, count)
    json_schema = _output_config(body.get("output_config"))
    temperature = 1.0 if count else _sampling(body, budget is not None)
    if budget is not None and tool is not None:
        raise _err("Thinking may not be enabled when tool_choice forces tool use.", "thinking")
    if budget is not None and prefill:
        raise _err("messages: a final assistant message cannot be continued when thinking is "
                   "enabled (the answer would have to begin with a thinking block)", "messages")
    if not count:
        _optional_fields(body)
    return MessagesParams(
        model=model, max_tokens=max_tokens, prompt_text=prompt.text(), images=tuple(prompt.images),
        marked_chars=prompt.marked_chars, marked_images=prompt.marked_images, cache_ttl=prompt.ttl,
        prefill=prefill, stop_sequences=() if count else _stop_sequences(body.get("stop_sequences")),
        temperature=temperature, stream=False if count else _stream(body.get("stream")),
        tool=tool, thinking_budget=budget, thinking_shown=shown, json_schema=json_schema)


def _max_tokens(body: dict[str, Any], window: int, model: str) -> int:
    value = _required(body, "max_tokens")
    if not _is_int(value):
        raise _err("max_tokens: Input should be a valid integer", "max_tokens")
    if value < 0:
        raise _err("max_tokens: Input should be greater than or equal to 0", "max_tokens")
    if value > window:
        raise _err(f"max_tokens: {value} > {window}, which is the maximum allowed number of output "
                   f"tokens for {model}", "max_tokens")
    return int(value)


def _sampling(body: dict[str, Any], thinking: bool) -> float:
    temperature = body.get("temperature")
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if not _is_num(value):
            raise _err(f"{name}: Input should be a valid number", name)
        if not 0 <= value <= 1:
            bound = "greater than or equal to 0" if value < 0 else "less than or equal to 1"
            raise _err(f"{name}: Input should be {bound}", name)
    top_k = body.get("top_k")
    if top_k is not None and (not _is_int(top_k) or top_k < 0):
        raise _err("top_k: Input should be a non-negative integer", "top_k")
    doc = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
    if thinking and temperature is not None and temperature != 1:
        raise _err(f"`temperature` may only be set to 1 when thinking is enabled. Please consult "
                   f"our documentation at {doc}", "temperature")
    if thinking and top_k is not None:
        raise _err(f"`top_k` must be unset when thinking is enabled. Please consult our "
                   f"documentation at {doc}", "top_k")
    return 1.0 if temperature is None else float(temperature)


def _stream(value: Any) -> bool:
    if value is not None and not isinstance(value, bool):
        raise _err("stream: Input should be a valid boolean", "stream")
    return bool(value)


def _stop_sequences(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _err("stop_sequences: Input should be a valid list", "stop_sequences")
    for i, s in enumerate(value):
        _str(s, f"stop_sequences.{i}")
        if not s.strip():
            raise _err("stop_sequences: each stop sequence must contain non-whitespace",
                       f"stop_sequences.{i}")
    return tuple(value)


def _optional_fields(body: dict[str, Any]) -> None:
    metadata = body.get("metadata")
    if metadata is not None:
        _extra(_dict(metadata, "metadata"), {"user_id"}, "metadata")
        user = metadata.get("user_id")
        if user is not None and (not isinstance(user, str) or len(user) > MAX_METADATA_USER_ID):
            raise _err(f"metadata.user_id: Input should be a string of at most "
                       f"{MAX_METADATA_USER_ID} characters", "metadata.user_id")
    for name, allowed in (("service_tier", ("auto", "standard_only")), ("speed", ("standard", "fast"))):
        value = body.get(name)
        if value is not None and value not in allowed:
            raise _err(f"{name}: Input should be {' or '.join(repr(a) for a in allowed)}", name)
    for name in ("inference_geo", "user_profile_id"):
        if body.get(name) is not None:
            _str(body[name], name)
    if body.get("priority") is not None and not _is_int(body["priority"]):
        raise _err("priority: Input should be a valid integer", "priority")


def _output_config(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    cfg = _dict(value, "output_config")
    _extra(cfg, {"effort", "format"}, "output_config")
    effort = cfg.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise _err(f"output_config.effort: Input should be one of {', '.join(EFFORTS)}",
                   "output_config.effort")
    fmt = cfg.get("format")
    if fmt is None:
        return None
    fmt = _dict(fmt, "output_config.format")
    if fmt.get("type") != "json_schema":
        raise _err("output_config.format.type: Input should be 'json_schema'", "output_config.format.type")
    return _dict(_required(fmt, "schema", "output_config.format"), "output_config.format.schema")


def _thinking(value: Any, max_tokens: int, count: bool) -> tuple[int | None, bool]:
    """(thinking budget in tokens or None, whether its text is shown)."""
    if value is None:
        return None, True
    cfg = _dict(value, "thinking")
    kind = cfg.get("type")
    if kind == "disabled":
        _extra(cfg, {"type"}, "thinking.disabled")
        return None, True
    if kind not in ("enabled", "adaptive"):
        raise _err("thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'", "thinking.type")
    where = f"thinking.{kind}"
    _extra(cfg, {"type", "display", "budget_tokens"} if kind == "enabled" else {"type", "display"}, where)
    display = cfg.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise _err(f"{where}.display: Input should be 'summarized' or 'omitted'", f"{where}.display")
    shown = display != "omitted"
    if kind == "adaptive":
        return (None if count else max(1, max_tokens // ADAPTIVE_THINKING_SHARE)), shown
    budget = _required(cfg, "budget_tokens", where)
    if not _is_int(budget):
        raise _err(f"{where}.budget_tokens: Input should be a valid integer", f"{where}.budget_tokens")
    if budget < MIN_THINKING_BUDGET:
        raise _err(f"{where}.budget_tokens: Input should be greater than or equal to "
                   f"{MIN_THINKING_BUDGET}", f"{where}.budget_tokens")
    if not count and max_tokens <= budget:
        raise _err("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                   "documentation at https://docs.claude.com/en/docs/build-with-claude/"
                   "extended-thinking#max-tokens-and-context-window-size", "max_tokens")
    return int(budget), shown


def _tools(value: Any, prompt: _Prompt) -> dict[str, dict[str, Any]]:
    """Tool name -> input schema; their definitions go first in the prompt."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise _err("tools: Input should be a valid list", "tools")
    by_name: dict[str, dict[str, Any]] = {}
    shown = []
    for i, raw in enumerate(value):
        where = f"tools.{i}"
        tool = _dict(raw, where)
        kind = tool.get("type")
        if kind not in (None, "custom"):
            raise _err(f"{where}: tool type {kind!r} is not supported by this server (it runs no "
                       f"server tools; custom tools only)", f"{where}.type")
        _extra(tool, {"type", "name", "description", "input_schema", "cache_control", "strict",
                      "input_examples", "eager_input_streaming", "allowed_callers", "defer_loading"}, where)
        name = _str(_required(tool, "name", where), f"{where}.name")
        if not TOOL_NAME.match(name):
            raise _err(f"{where}.name: String should match pattern '{TOOL_NAME.pattern}'", f"{where}.name")
        schema = _dict(_required(tool, "input_schema", where), f"{where}.input_schema")
        if schema.get("type") != "object":
            raise _err(f"{where}.input_schema.type: Input should be 'object'", f"{where}.input_schema.type")
        if tool.get("description") is not None:
            _str(tool["description"], f"{where}.description")
        if name in by_name:
            raise _err("tools: Tool names must be unique.", "tools")
        by_name[name] = schema
        shown.append({k: tool[k] for k in ("name", "description", "input_schema") if k in tool})
        prompt.add("tools: " + orjson.dumps(shown[-1]).decode() + "\n")
        prompt.mark(tool.get("cache_control"), f"{where}.cache_control")
    return by_name


def _tool_choice(value: Any, tools: dict[str, dict[str, Any]]) -> ToolChoice | None:
    if value is None:
        return None
    choice = _dict(value, "tool_choice")
    kind = choice.get("type")
    if kind not in ("auto", "any", "tool", "none"):
        raise _err("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", "tool_choice.type")
    allowed = {"type", "disable_parallel_tool_use"} | ({"name"} if kind == "tool" else set())
    _extra(choice, allowed if kind != "none" else {"type"}, f"tool_choice.{kind}")
    parallel = choice.get("disable_parallel_tool_use")
    if parallel is not None and not isinstance(parallel, bool):
        raise _err(f"tool_choice.{kind}.disable_parallel_tool_use: Input should be a valid boolean",
                   f"tool_choice.{kind}.disable_parallel_tool_use")
    if kind in ("auto", "none"):
        return None
    if not tools:
        raise _err(f"tool_choice: tool_choice.type {kind!r} needs 'tools'", "tool_choice")
    if kind == "any":
        name = next(iter(tools))
        return ToolChoice(name, tools[name])
    name = _str(_required(choice, "name", "tool_choice.tool"), "tool_choice.tool.name")
    if name not in tools:
        raise _err(f"tool_choice.tool.name: tool {name!r} is not one of 'tools'", "tool_choice.tool.name")
    return ToolChoice(name, tools[name])


def _system(value: Any, prompt: _Prompt) -> None:
    if value is None:
        return
    if isinstance(value, str):
        if value:
            prompt.add(f"system: {value}\n")
        return
    if not isinstance(value, list):
        raise _err("system: Input should be a valid string or a list of text blocks", "system")
    prompt.add("system: ")
    for i, raw in enumerate(value):
        where = f"system.{i}"
        block = _dict(raw, where)
        if block.get("type") != "text":
            raise _err(f"{where}.type: Input should be 'text'", f"{where}.type")
        _extra(block, {"type", "text", "cache_control", "citations"}, where)
        text = _str(_required(block, "text", where), f"{where}.text")
        if not text:
            raise _err("system: text content blocks must be non-empty", f"{where}.text")
        prompt.add(("" if i == 0 else " ") + text)
        prompt.mark(block.get("cache_control"), f"{where}.cache_control")
    prompt.add("\n")


@dataclass
class _Turn:
    role: str
    blocks: list[tuple[int, int | None, dict[str, Any]]]  # (message index, block index or None, block)


def _turns(messages: list[Any]) -> list[_Turn]:
    """The messages as turns: checked roles and contents, consecutive same-role ones combined."""
    turns: list[_Turn] = []
    last = len(messages) - 1
    for i, raw in enumerate(messages):
        where = f"messages.{i}"
        msg = _dict(raw, where)
        _extra(msg, {"role", "content"}, where)
        role = msg.get("role")
        if role not in ("user", "assistant"):
            raise _err(f"{where}.role: Input should be 'user' or 'assistant'", f"{where}.role")
        if "content" not in msg:
            raise _err(f"{where}.content: Field required", f"{where}.content")
        content = msg["content"]
        if isinstance(content, str):
            blocks: list[tuple[int, int | None, dict[str, Any]]] = (
                [(i, None, {"type": "text", "text": content})] if content else [])
        elif isinstance(content, list):
            blocks = [(i, j, _dict(b, f"{where}.content.{j}")) for j, b in enumerate(content)]
        else:
            raise _err(f"{where}.content: Input should be a valid string or a list of content blocks",
                       f"{where}.content")
        if not blocks and not (i == last and role == "assistant"):
            raise _err(f"{where}: all messages must have non-empty content except for the optional "
                       f"final assistant message", where)
        if turns and turns[-1].role == role:
            turns[-1].blocks += blocks
        else:
            turns.append(_Turn(role, blocks))
    return turns


def _conversation(turns: list[_Turn], prompt: _Prompt) -> str:
    """Add the turns to the prompt; the prefill (a final assistant turn's text), or ""."""
    prefill = ""
    final = turns[-1] if turns[-1].role == "assistant" else None
    pending: dict[str, int] = {}  # tool_use ids of the previous assistant turn -> its message index
    for n, turn in enumerate(turns):
        if turn.role == "user":
            answered = _check_results(turn, pending)
            missing = [t for t in pending if t not in answered]
            if missing:
                raise _tool_use_unanswered(pending[missing[0]], missing)
            pending = {}
        texts: list[str] = []
        if turn is not final:
            prompt.add(f"{turn.role}: ")
        for i, j, block in turn.blocks:
            where = f"messages.{i}.content" + ("" if j is None else f".{j}")
            text = _block_text(block, where, turn.role, prompt if turn is not final else None)
            if block.get("type") == "tool_use":
                pending[str(block["id"])] = i
            if text is None:
                continue
            if turn is final:
                texts.append(text)
            else:
                prompt.add(("" if not texts else " ") + text)
                texts.append(text)
            if turn is not final:
                prompt.mark(block.get("cache_control"), f"{where}.cache_control")
        if turn is not final:
            prompt.add("\n")
        elif n == len(turns) - 1:
            prefill = " ".join(texts)
    if pending:
        raise _tool_use_unanswered(next(iter(pending.values())), list(pending))
    if prefill != prefill.rstrip():
        raise _err("messages: final assistant content cannot end with trailing whitespace", "messages")
    return prefill


def _tool_use_unanswered(index: int, ids: list[str]) -> InvalidRequest:
    return _err(f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
                f"corresponding `tool_result` block in the next message.", f"messages.{index}")


def _check_results(turn: _Turn, pending: dict[str, int]) -> set[str]:
    answered = set()
    for i, j, block in turn.blocks:
        if block.get("type") != "tool_result":
            continue
        tid = block.get("tool_use_id")
        if tid not in pending:
            raise _err(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                       f"blocks: {tid}. Each `tool_result` block must have a corresponding "
                       f"`tool_use` block in the previous message.", f"messages.{i}.content.{j}")
        answered.add(str(tid))
    return answered


_BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control", "transformations"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
_ROLE_BLOCKS = {"user": ("text", "image", "tool_result"),
                "assistant": ("text", "tool_use", "thinking", "redacted_thinking")}


def _block_text(block: dict[str, Any], where: str, role: str, prompt: _Prompt | None) -> str | None:
    """A block's prompt text (None: adds none); images go to ``prompt`` (None: a prefill)."""
    kind = block.get("type")
    if kind not in _BLOCK_FIELDS:
        raise _err(f"{where}.type: content block type {kind!r} is not supported by this server "
                   f"(text, image, tool_use, tool_result, thinking, redacted_thinking)", f"{where}.type")
    if kind not in _ROLE_BLOCKS[role]:
        raise _err(f"{where}.type: {kind!r} blocks are not allowed in {role} messages", f"{where}.type")
    _extra(block, _BLOCK_FIELDS[kind], where)
    if kind == "text":
        text = _str(_required(block, "text", where), f"{where}.text")
        if not text:
            raise _err("messages: text content blocks must be non-empty", f"{where}.text")
        return text
    if kind == "image":
        if prompt is None:
            raise _err(f"{where}: an image cannot be part of a prefill", where)
        prompt.images.append(_image(block, where))
        return None
    if kind == "tool_use":
        tid = _str(_required(block, "id", where), f"{where}.id")
        if not TOOL_USE_ID.match(tid):
            raise _err(f"{where}.id: String should match pattern '{TOOL_USE_ID.pattern}'", f"{where}.id")
        name = _str(_required(block, "name", where), f"{where}.name")
        args = _dict(block.get("input", {}), f"{where}.input")
        return orjson.dumps({"tool_use": name, "input": args}).decode()
    if kind == "tool_result":
        _str(_required(block, "tool_use_id", where), f"{where}.tool_use_id")
        if block.get("is_error") is not None and not isinstance(block["is_error"], bool):
            raise _err(f"{where}.is_error: Input should be a valid boolean", f"{where}.is_error")
        return "tool_result: " + _result_text(block.get("content", ""), where, prompt)
    if kind == "thinking":
        text = _str(_required(block, "thinking", where), f"{where}.thinking")
        signature = _str(_required(block, "signature", where), f"{where}.signature")
        if not hmac.compare_digest(signature, sign_thinking(text)):
            raise _err(f"{where}: Invalid `signature` in `thinking` block", f"{where}.signature")
        return None  # earlier turns' thinking is not part of the context
    _str(_required(block, "data", where), f"{where}.data")
    return None


def _result_text(content: Any, where: str, prompt: _Prompt | None) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _err(f"{where}.content: Input should be a valid string or a list of blocks", f"{where}.content")
    texts = []
    for k, raw in enumerate(content):
        inner = _dict(raw, f"{where}.content.{k}")
        kind = inner.get("type")
        if kind not in ("text", "image"):
            raise _err(f"{where}.content.{k}.type: Input should be 'text' or 'image'", f"{where}.content.{k}.type")
        text = _block_text(inner, f"{where}.content.{k}", "user", prompt)
        if text is not None:
            texts.append(text)
    return " ".join(texts)


def _image(block: dict[str, Any], where: str) -> ImagePart:
    source = _dict(_required(block, "source", where), f"{where}.source")
    kind = source.get("type")
    here = f"{where}.source"
    if kind == "base64":
        _extra(source, {"type", "media_type", "data"}, f"{here}.base64")
        media = source.get("media_type")
        if media not in IMAGE_MEDIA_TYPES:
            raise _err(f"{here}.base64.media_type: Input should be 'image/jpeg', 'image/png', "
                       f"'image/gif' or 'image/webp'", f"{here}.base64.media_type")
        data = _str(_required(source, "data", f"{here}.base64"), f"{here}.base64.data")
        if len(data) > MAX_IMAGE_BASE64_BYTES:
            raise _err(f"{here}.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
                       f"{MAX_IMAGE_BASE64_BYTES} bytes", f"{here}.base64.data")
        return ImagePart(f"data:{media};base64,{data}", "anthropic", where, media, here)
    if kind == "url":
        _extra(source, {"type", "url"}, f"{here}.url")
        url = _str(_required(source, "url", f"{here}.url"), f"{here}.url.url")
        if not url.startswith("data:"):
            raise _err(f"{here}.url: image URLs are not fetched by this server (it has no network "
                       f"access); send the image as a base64 source (or a data: URL)", f"{here}.url")
        return ImagePart(url, "anthropic", where, None, here)
    if kind == "file":
        raise _err(f"{here}: file sources need the Files API, which this server does not serve; "
                   f"send the image as a base64 source", here)
    raise _err(f"{here}.type: Input should be 'base64', 'url' or 'file'", f"{here}.type")
