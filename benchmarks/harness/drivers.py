"""Request drivers: one request through one way of calling the API, returned as a record.

Three ways apps call LLM APIs, compared in the suite:

- ``fresh-connection``: a new ``httpx.AsyncClient`` (HTTP/1.1) per call, as scripts and
  serverless handlers often do; every call pays TCP + TLS handshakes over the network.
- ``openai``: the official client with its defaults (one pooled HTTP/1.1 client, 2 retries).
- ``llmclient``: llmclient's client (warm HTTP/2, orjson), with per-call options.

Each speaks the run's API (``ctx.api``, the suite's ``--api``): ``openai`` is Chat Completions
(``openai.AsyncOpenAI`` against ``llmclient.AsyncOpenAI``); ``anthropic`` is the Messages API
(``anthropic.AsyncAnthropic`` against ``llmclient.AsyncAnthropic``, the same driver names), so a
scenario written with these drivers runs for either face. A :class:`ChatRequest` becomes a
Messages body by :func:`messages_body` (system turns to ``system``; an option the Messages API
does not have is an error naming it, so a scenario that needs one says it does not apply).

Every request carries a W3C ``traceparent`` so a slow request can be found in the server's log;
llmclient makes its own and reports it as ``response.trace_id``.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .records import (
    ChatRequest,
    Driver,
    RequestRecord,
    new_trace_id,
    traceparent,
)

if TYPE_CHECKING:
    from ._scenario import Context

__all__ = [
    "DRIVERS",
    "anthropic_root",
    "classify_error",
    "llmclient_client",
    "make_driver",
    "message_usage",
    "messages_body",
    "official_client",
    "parse_server_timing",
]

DRIVERS = ("fresh-connection", "openai", "llmclient")
APIS = ("openai", "anthropic")
TIMEOUT_S = 120.0
# The Messages API's version header, as the official client sends it (anthropic 2.17.0).
ANTHROPIC_VERSION = "2023-06-01"
# Chat-request options the Messages API has under the same name, and one it spells differently.
_MESSAGES_OPTIONS = frozenset({"temperature", "top_p", "top_k", "metadata", "stop_sequences",
                               "tools", "tool_choice", "thinking", "service_tier"})
_MESSAGES_RENAMED = {"stop": "stop_sequences"}

_TIMING_ENTRY = re.compile(r"\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)((?:\s*;\s*[^,;]*)*)")


def parse_server_timing(value: str | None) -> dict[str, float]:
    """``Server-Timing`` (W3C Server Timing §3) -> {name: dur ms}; entries without dur skipped."""
    out: dict[str, float] = {}
    if not value:
        return out
    for entry in value.split(","):
        match = _TIMING_ENTRY.match(entry)
        if not match:
            continue
        for param in match.group(2).split(";"):
            key, _, raw = param.strip().partition("=")
            if key.strip().lower() == "dur":
                try:
                    out[match.group(1)] = float(raw.strip().strip('"'))
                except ValueError:
                    pass
    return out


def classify_error(exc: BaseException) -> str:
    """A failure's kind from its exception class names (works across httpx, openai, llmclient)."""
    names = " ".join(cls.__name__ for cls in type(exc).__mro__).lower()
    for needle, kind in (("timeout", "timeout"), ("incomplete", "truncated"),
                         ("truncat", "truncated"), ("connecterror", "connect"),
                         ("remoteprotocol", "reset"), ("readerror", "reset"),
                         ("reset", "reset"), ("connection", "connect"),
                         ("decode", "malformed"), ("jsondecode", "malformed")):
        if needle in names:
            return kind
    return "other"


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _body(request: ChatRequest, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": request.messages,
                            "max_tokens": request.max_tokens, **request.extra_body}
    if request.stream:
        body["stream"] = True
        body.setdefault("stream_options", {"include_usage": True})
    return body


def messages_body(request: ChatRequest, model: str) -> dict[str, Any]:
    """A :class:`ChatRequest` as a Messages API body: ``system`` turns joined into ``system``,
    the rest as ``messages``; ``stream_options`` has no Messages counterpart (usage always comes
    with ``message_delta``) and is dropped. Any other option the Messages API lacks (``seed``,
    ``n``, ``logprobs`` ...) is a ValueError naming it: the scenario does not apply. Pure."""
    system = [m["content"] for m in request.messages if m.get("role") == "system"]
    turns = [m for m in request.messages if m.get("role") != "system"]
    body: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": request.max_tokens}
    if system:
        if not all(isinstance(text, str) for text in system):
            raise ValueError("a system turn with content parts has no Messages API form here")
        body["system"] = "\n\n".join(system)
    for key, value in request.extra_body.items():
        if key == "stream_options":
            continue
        name = _MESSAGES_RENAMED.get(key, key)
        if name not in _MESSAGES_OPTIONS:
            raise ValueError(f"the Messages API has no {key!r} option")
        body[name] = [value] if name == "stop_sequences" and isinstance(value, str) else value
    if request.stream:
        body["stream"] = True
    return body


# Sampling options the Messages API takes but anthropic 2.17's ``messages.create`` has no keyword
# for (its signature dropped them): sent in ``extra_body``, as an app on that client does.
_BODY_ONLY = ("temperature", "top_p", "top_k")


def _create_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """``messages.create`` keywords for ``body``: the sampling options under ``extra_body``."""
    extra = {k: body[k] for k in _BODY_ONLY if k in body}
    kwargs = {k: v for k, v in body.items() if k not in extra}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def anthropic_root(url: str) -> str:
    """The Messages API's base URL as the official client takes it (it adds ``/v1/messages``):
    ``url`` without a trailing ``/v1``. Pure."""
    return url.rstrip("/").removesuffix("/v1")


def _message_text(event: Any) -> str | None:
    """A Messages stream event's text (``content_block_delta`` with a ``text_delta``)."""
    if getattr(event, "type", None) != "content_block_delta":
        return None
    delta = getattr(event, "delta", None)
    text = getattr(delta, "text", None)
    return text if isinstance(text, str) else None


def _message_event_tokens(event: Any, tokens: int | None) -> int | None:
    """Output tokens so far: ``message_delta``'s usage is cumulative."""
    if getattr(event, "type", None) == "message_delta":
        usage = getattr(event, "usage", None)
        value = getattr(usage, "output_tokens", None)
        if isinstance(value, int):
            return value
    return tokens


# Anthropic's usage fields of the prompt (docs.claude.com/en/docs/build-with-claude/prompt-caching,
# read 2026-12): input_tokens + cache_creation_input_tokens + cache_read_input_tokens = the prompt.
_PROMPT_USAGE = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def message_usage(event: Any, seen: dict[str, int]) -> dict[str, int]:
    """The prompt's usage fields of a Messages answer so far: a whole ``Message``'s ``usage``, a
    stream's ``message_start`` (its ``message.usage``) or ``message_delta`` (cumulative usage),
    folded into ``seen``; other events leave it as it is. Pure."""
    kind = getattr(event, "type", None)
    usage = getattr(event, "usage", None)
    if kind == "message_start":
        usage = getattr(getattr(event, "message", None), "usage", None)
    elif kind not in ("message", "message_delta"):
        return seen
    for name in _PROMPT_USAGE:
        value = getattr(usage, name, None)
        if isinstance(value, int):
            seen[name] = value
    return seen


class _Timer:
    """Collects what every driver measures the same way: TTFT, inter-token gaps, tokens."""

    def __init__(self, ctx: Context, variant: str, scheduled: float | None) -> None:
        self.ctx = ctx
        self.variant = variant
        self.sent = time.perf_counter()
        self.origin = scheduled if scheduled is not None else self.sent
        self.ttft_ms: float | None = None
        self.last_chunk: float | None = None
        self.itl: list[float] = []
        self.chunks = 0
        self.trace_id = new_trace_id()

    def content(self, text: str | None) -> None:
        if not text:
            return
        now = time.perf_counter()
        if self.ttft_ms is None:
            self.ttft_ms = (now - self.origin) * 1000.0
        elif self.last_chunk is not None:
            self.itl.append((now - self.last_chunk) * 1000.0)
        self.last_chunk = now
        self.chunks += 1

    def record(self, **fields: Any) -> RequestRecord:
        latency = (time.perf_counter() - self.origin) * 1000.0
        fields.setdefault("output_tokens", self.chunks or None)
        return RequestRecord(variant=self.variant, trace_id=self.trace_id,
                             start_s=self.origin - self.ctx.epoch, latency_ms=latency,
                             ttft_ms=self.ttft_ms, itl_ms=self.itl,
                             schedule_lag_ms=(self.sent - self.origin) * 1000.0, **fields)

    def failure(self, exc: BaseException) -> RequestRecord:
        status = _status_of(exc)
        kind = None if status is not None else classify_error(exc)
        from llmclient._redact import redact_text

        return self.record(status=status, error_kind=kind or "http_error", output_tokens=None,
                           extra={"error": redact_text(f"{type(exc).__name__}: {exc}")[:300]})


def _chunk_text(chunk: Mapping[str, Any]) -> str | None:
    choices = chunk.get("choices") or []
    if not choices:
        return None
    delta = choices[0].get("delta") or {}
    content = delta.get("content")
    return content if isinstance(content, str) else None


async def _sse_events(lines: AsyncIterator[str],
                      trailer: dict[str, float]) -> AsyncIterator[dict[str, Any]]:
    """Decode an OpenAI SSE stream (WHATWG HTML §9.2 event stream); raises on truncation.
    The reference server sends its Server-Timing as a ``: server-timing ...`` comment line
    before ``[DONE]`` (headers are long gone by then); it lands in ``trailer``."""
    done = False
    async for line in lines:
        if line.startswith(": server-timing"):
            trailer.update(parse_server_timing(line.removeprefix(": server-timing")))
            continue
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        yield json.loads(data)
    if not done:
        raise _TruncatedStream("stream ended without [DONE]")


class _TruncatedStream(Exception):
    pass


def _fresh_connection(ctx: Context, variant: str) -> Driver:
    import httpx

    url = ctx.base_url.rstrip("/") + "/chat/completions"

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        stamps: dict[str, float] = {}

        async def trace(name: str, info: Mapping[str, Any]) -> None:
            stamps[name] = time.perf_counter()

        headers = {"authorization": f"Bearer {ctx.api_key}",
                   "traceparent": traceparent(timer.trace_id), **request.headers}
        body = json.dumps(_body(request, ctx.model)).encode()
        try:
            async with (
                httpx.AsyncClient(http2=False, verify=ctx.verify, timeout=TIMEOUT_S) as client,
                client.stream("POST", url, content=body, headers=headers,
                              extensions={"trace": trace}) as response,
            ):
                    usage: dict[str, Any] = {}
                    server_timing = parse_server_timing(response.headers.get("server-timing"))
                    if response.status_code >= 400:
                        await response.aread()
                        return timer.record(status=response.status_code,
                                            error_kind="http_error", output_tokens=None,
                                            bytes_sent=len(body))
                    if request.stream:
                        async for event in _sse_events(response.aiter_lines(), server_timing):
                            timer.content(_chunk_text(event))
                            usage = event.get("usage") or usage
                        received = response.num_bytes_downloaded
                    else:
                        raw = await response.aread()
                        received = len(raw)
                        usage = json.loads(raw).get("usage") or {}
            breakdown = _phase_breakdown(stamps)
            breakdown.update({f"server.{k}": v for k, v in server_timing.items()})
            return timer.record(status=response.status_code, bytes_sent=len(body),
                                bytes_received=received, breakdown=breakdown,
                                output_tokens=usage.get("completion_tokens") or timer.chunks or None,
                                prompt_tokens=usage.get("prompt_tokens"))
        except Exception as exc:
            return timer.failure(exc)

    return send


async def _messages_sse(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Decode a Messages API stream (every event named by an ``event:`` line, its JSON on
    ``data:``); ends at ``message_stop``, raises on an ``error`` event or a cut before it."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:].strip())
        kind = event.get("type")
        if kind == "error":
            error = event.get("error") or {}
            raise _TruncatedStream(f"error event: {error.get('type')}: {error.get('message')}")
        yield event
        if kind == "message_stop":
            return
    raise _TruncatedStream("stream ended without message_stop")


def _fresh_messages(ctx: Context, variant: str) -> Driver:
    """``fresh-connection`` on the Messages API: a new HTTP/1.1 client per call."""
    import httpx

    url = anthropic_root(ctx.base_url) + "/v1/messages"

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        stamps: dict[str, float] = {}

        async def trace(name: str, info: Mapping[str, Any]) -> None:
            stamps[name] = time.perf_counter()

        headers = {"x-api-key": ctx.api_key, "anthropic-version": ANTHROPIC_VERSION,
                   "traceparent": traceparent(timer.trace_id), **request.headers}
        body = json.dumps(messages_body(request, ctx.model)).encode()
        try:
            async with (
                httpx.AsyncClient(http2=False, verify=ctx.verify, timeout=TIMEOUT_S) as client,
                client.stream("POST", url, content=body, headers=headers,
                              extensions={"trace": trace}) as response,
            ):
                server_timing = parse_server_timing(response.headers.get("server-timing"))
                if response.status_code >= 400:
                    await response.aread()
                    return timer.record(status=response.status_code, error_kind="http_error",
                                        output_tokens=None, bytes_sent=len(body))
                tokens: int | None = None
                prompt: int | None = None
                if request.stream:
                    async for event in _messages_sse(response.aiter_lines()):
                        delta = event.get("delta") or {}
                        if event.get("type") == "content_block_delta":
                            timer.content(delta.get("text"))
                        elif event.get("type") == "message_delta":
                            tokens = (event.get("usage") or {}).get("output_tokens", tokens)
                        elif event.get("type") == "message_start":
                            prompt = ((event.get("message") or {}).get("usage") or {}).get("input_tokens")
                    received = response.num_bytes_downloaded
                else:
                    raw = await response.aread()
                    received = len(raw)
                    usage = json.loads(raw).get("usage") or {}
                    tokens, prompt = usage.get("output_tokens"), usage.get("input_tokens")
            breakdown = _phase_breakdown(stamps)
            breakdown.update({f"server.{k}": v for k, v in server_timing.items()})
            return timer.record(status=response.status_code, bytes_sent=len(body),
                                bytes_received=received, breakdown=breakdown,
                                output_tokens=tokens or timer.chunks or None, prompt_tokens=prompt)
        except Exception as exc:
            return timer.failure(exc)

    return send


def _phase_breakdown(stamps: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, prefix in (("connect", "connection.connect_tcp"), ("tls", "connection.start_tls")):
        start, end = stamps.get(f"{prefix}.started"), stamps.get(f"{prefix}.complete")
        if start is not None and end is not None:
            out[label] = (end - start) * 1000.0
    return out


def _openai(ctx: Context, variant: str) -> Driver:
    _require("openai", "the official client is missing: pip install 'llmclient[bench]'")
    client = _lazy_client(ctx, lambda: official_client("openai", ctx.base_url, ctx.api_key, ctx.verify))

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        headers = {"traceparent": traceparent(timer.trace_id), **request.headers}
        body = _body(request, ctx.model)
        body.pop("model")
        try:
            if request.stream:
                stream = await client().chat.completions.create(
                    model=ctx.model, extra_headers=headers, **body)
                tokens = None
                async for chunk in stream:
                    if chunk.choices:
                        timer.content(chunk.choices[0].delta.content)
                    if chunk.usage:
                        tokens = chunk.usage.completion_tokens
                return timer.record(status=200, output_tokens=tokens or timer.chunks or None)
            raw = await client().chat.completions.with_raw_response.create(
                model=ctx.model, extra_headers=headers, **body)
            completion = raw.parse()
            usage = completion.usage
            return timer.record(
                status=raw.status_code,
                output_tokens=usage.completion_tokens if usage else None,
                prompt_tokens=usage.prompt_tokens if usage else None,
                breakdown={f"server.{k}": v for k, v in
                           parse_server_timing(raw.headers.get("server-timing")).items()})
        except Exception as exc:
            return timer.failure(exc)

    return send


def _require(package: str, hint: str) -> None:
    """A clear error naming what to install when ``package`` is missing (at the driver's making)."""
    try:
        importlib.import_module(package)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(hint) from exc


def official_client(api: str, base_url: str, api_key: str, verify: str | bool = True, /, *,
                    sync: bool = False, event_hooks: Mapping[str, list[Any]] | None = None,
                    **options: Any) -> Any:
    """The official client of ``api`` as an app makes it: ``openai.(Async)OpenAI`` or
    ``anthropic.(Async)Anthropic`` (given ``base_url`` as the suite has it, ending in ``/v1``: the
    Messages API's root for the latter), its defaults but ``options`` (``timeout``,
    ``max_retries`` ...). Only the CA bundle differs from the defaults where ``verify`` names the
    reference server's own CA; ``event_hooks`` (httpx's: a hook counting attempts or 429s) go on
    the package's own ``Default*HttpxClient``, so the pool stays the default one. The one builder every driver, scenario and
    worker uses, so the baseline is the same client everywhere."""
    if api not in APIS:
        raise ValueError(f"unknown API {api!r}; known: {', '.join(APIS)}")
    module = importlib.import_module(api)  # the official package is named as its API here
    if verify is not True or event_hooks:
        default = getattr(module, "DefaultHttpxClient" if sync else "DefaultAsyncHttpxClient")
        options["http_client"] = default(**({} if verify is True else {"verify": verify}),
                                         **({"event_hooks": event_hooks} if event_hooks else {}))
    name = {"openai": "OpenAI", "anthropic": "Anthropic"}[api]
    url = anthropic_root(base_url) if api == "anthropic" else base_url
    return getattr(module, name if sync else f"Async{name}")(base_url=url, api_key=api_key, **options)


def llmclient_client(api: str, base_url: str, api_key: str, verify: str | bool = True, /, *,
                     sync: bool = False, **options: Any) -> Any:
    """llmclient's face for ``api`` (``(Async)OpenAI`` or ``(Async)Anthropic``) with its
    constructor ``options`` (``pacing``, ``stream_idle_timeout``, a ``base_url`` of its own such as
    ``Replicas(...)`` ..., which replaces ``base_url``); ``base_url`` as the suite has it (the Messages API's root for
    anthropic). Imported by name: llmclient is optional for the harness (the suite reports it
    "not available" when it is missing) and typed loosely here on purpose."""
    if api not in APIS:
        raise ValueError(f"unknown API {api!r}; known: {', '.join(APIS)}")
    name = {"openai": "OpenAI", "anthropic": "Anthropic"}[api]
    kwargs: dict[str, Any] = {"base_url": anthropic_root(base_url) if api == "anthropic" else base_url,
                              "api_key": api_key, **options}
    if verify is not True:
        kwargs.setdefault("verify", verify)
    return getattr(importlib.import_module("llmclient"), name if sync else f"Async{name}")(**kwargs)


def _lazy_client(ctx: Context, build: Callable[[], Any]) -> Callable[[], Any]:
    """A driver's client, built on its first request (an import and a pool nobody uses cost
    nothing) and closed with the suite (``ctx.closers``)."""
    made: list[Any] = []

    def client() -> Any:
        if not made:
            made.append(build())
            ctx.closers.append(getattr(made[0], "close", None) or made[0].aclose)
        return made[0]

    return client


def _anthropic(ctx: Context, variant: str) -> Driver:
    """The official ``anthropic.AsyncAnthropic`` with its defaults (the Messages face's baseline)."""
    _require("anthropic", "the official anthropic client is missing: pip install anthropic")
    client = _lazy_client(ctx, lambda: official_client("anthropic", ctx.base_url, ctx.api_key, ctx.verify))

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        headers = {"traceparent": traceparent(timer.trace_id), **request.headers}
        try:
            body = _create_kwargs(messages_body(request, ctx.model))
            seen: dict[str, int] = {}
            if request.stream:
                stream = await client().messages.create(extra_headers=headers, **body)
                tokens = None
                async for event in stream:
                    timer.content(_message_text(event))
                    tokens = _message_event_tokens(event, tokens)
                    message_usage(event, seen)
                return timer.record(status=200, output_tokens=tokens or timer.chunks or None,
                                    prompt_tokens=seen.get("input_tokens"), extra=dict(seen))
            raw = await client().messages.with_raw_response.create(extra_headers=headers, **body)
            message = await raw.parse()  # the async client's parse is a coroutine
            usage = message.usage
            return timer.record(
                status=raw.status_code, output_tokens=usage.output_tokens, prompt_tokens=usage.input_tokens,
                extra=message_usage(message, seen),
                breakdown={f"server.{k}": v for k, v in
                           parse_server_timing(raw.headers.get("server-timing")).items()})
        except Exception as exc:
            return timer.failure(exc)

    return send


def _llmclient_anthropic(ctx: Context, variant: str, **options: Any) -> Driver:
    """``llmclient.AsyncAnthropic``, with per-call options (``cache=True`` ...)."""
    client_options = options.pop("client_options", {})

    client = _lazy_client(ctx, lambda: llmclient_client("anthropic", ctx.base_url, ctx.api_key, ctx.verify,
                                                        **client_options))

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        try:
            body = _create_kwargs(messages_body(request, ctx.model))
            response = await client().messages.create(extra_headers=dict(request.headers), **body, **options)
            tokens = None
            seen: dict[str, int] = {}
            if request.stream:
                async for event in response:
                    timer.content(_message_text(event))
                    tokens = _message_event_tokens(event, tokens)
                    message_usage(event, seen)
            else:
                tokens = getattr(getattr(response, "usage", None), "output_tokens", None)
                message_usage(response, seen)
            timer.trace_id = getattr(response, "trace_id", None) or timer.trace_id
            fields = _from_call_record(getattr(response, "timings", None))
            fields["extra"] = {**fields.get("extra", {}), **seen}
            return timer.record(status=200, output_tokens=tokens or timer.chunks or None,
                                prompt_tokens=seen.get("input_tokens"), **fields)
        except Exception as exc:
            trace_id = getattr(exc, "trace_id", None)
            if trace_id:
                timer.trace_id = trace_id
            return timer.failure(exc)

    return send


def _llmclient(ctx: Context, variant: str, **options: Any) -> Driver:
    client_options = options.pop("client_options", {})

    client = _lazy_client(ctx, lambda: llmclient_client("openai", ctx.base_url, ctx.api_key, ctx.verify,
                                                        **client_options))

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        timer = _Timer(ctx, variant, scheduled)
        body = _body(request, ctx.model)
        body.pop("model")
        try:
            response = await client().chat.completions.create(
                model=ctx.model, extra_headers=dict(request.headers), **body, **options)
            tokens = None
            if request.stream:
                async for chunk in response:
                    if chunk.choices:
                        timer.content(chunk.choices[0].delta.content)
                    if getattr(chunk, "usage", None):
                        tokens = chunk.usage.completion_tokens
            else:
                usage = getattr(response, "usage", None)
                tokens = usage.completion_tokens if usage else None
            timer.trace_id = getattr(response, "trace_id", None) or timer.trace_id
            timings = getattr(response, "timings", None)
            return timer.record(status=200, output_tokens=tokens or timer.chunks or None,
                                **_from_call_record(timings))
        except Exception as exc:
            trace_id = getattr(exc, "trace_id", None)
            if trace_id:
                timer.trace_id = trace_id
            return timer.failure(exc)

    return send


def _from_call_record(timings: Any) -> dict[str, Any]:
    """Record fields from llmclient's CallRecord (``response.timings``), when it has one."""
    if timings is None:
        return {}
    breakdown: dict[str, float] = {}
    for name, attr in (("client_queue", "queued_ms"), ("connect", "connect_ms"),
                       ("tls", "tls_ms"), ("image_prep", "image_prep_ms")):
        value = getattr(timings, attr, None)
        if value is not None:
            breakdown[name] = float(value)
    for key, value in (getattr(timings, "server_timing", None) or {}).items():
        breakdown[f"server.{key}"] = float(value)
    extra = {key: getattr(timings, key, None) for key in
             ("http_version", "connection_reused", "retries", "cache", "prefetch_joined",
              "wire", "image_bytes_saved", "hedged", "hedge_won", "replica",
              "request_sent_ms", "first_byte_ms", "first_token_ms")}  # the report's waterfall
    return {"breakdown": breakdown, "bytes_sent": getattr(timings, "bytes_sent", None),
            "bytes_received": getattr(timings, "bytes_received", None),
            "extra": {k: v for k, v in extra.items() if v is not None}}


def make_driver(kind: str, ctx: Context, **options: Any) -> Driver:
    variant = options.pop("variant", kind)
    if ctx.api == "anthropic":
        if kind == "fresh-connection":
            return _fresh_messages(ctx, variant)
        if kind == "openai":  # "the official client": anthropic's on this API
            return _anthropic(ctx, variant)
        if kind == "llmclient":
            return _llmclient_anthropic(ctx, variant, **options)
        raise ValueError(f"unknown driver {kind!r}; known: {', '.join(DRIVERS)}")
    if kind == "fresh-connection":
        return _fresh_connection(ctx, variant)
    if kind == "openai":
        return _openai(ctx, variant)
    if kind == "llmclient":
        return _llmclient(ctx, variant, **options)
    raise ValueError(f"unknown driver {kind!r}; known: {', '.join(DRIVERS)}")
