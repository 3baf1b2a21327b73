"""Snippets about the HTTP layer the official client exposes: ``with_streaming_response`` (sync
and async context managers), ``with_raw_response``'s attributes, and a caller's
``http_client`` (its headers, params, auth and hooks)."""

from __future__ import annotations

from typing import Any

import httpx

from .harness import Env, snippet

MESSAGES = [{"role": "user", "content": "Say something about the sea."}]


@snippet
def streaming_response_parse(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    with client.chat.completions.with_streaming_response.create(
            model=env.model, messages=MESSAGES, max_tokens=6, seed=41) as response:
        head = [response.status_code, response.headers.get("content-type"), response.http_request.method,
                str(response.url).endswith("/chat/completions"), response.method, response.is_closed]
        completion = response.parse()
    return [head, completion.model_dump(), response.is_closed]


@snippet
def streaming_response_iter_lines_of_a_stream(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    with client.chat.completions.with_streaming_response.create(
            model=env.model, messages=MESSAGES, max_tokens=5, seed=42, stream=True) as response:
        lines = list(response.iter_lines())
    # Each line holds ids and timestamps: compare their kinds and the end of the stream.
    return [response.status_code, [line[:6] for line in lines], lines[-1] if lines else None]


@snippet
def streaming_response_parse_a_stream(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    with client.chat.completions.with_streaming_response.create(
            model=env.model, messages=MESSAGES, max_tokens=5, seed=43, stream=True) as response:
        stream = response.parse()
        return [chunk.choices[0].delta.content for chunk in stream if chunk.choices]


@snippet
def streaming_response_bytes_text_json(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    out: list[Any] = []
    emb = {"model": "text-embedding-3-small", "input": "hi", "encoding_format": "float"}
    with client.embeddings.with_streaming_response.create(**emb) as response:
        body = b"".join(response.iter_bytes())
        out.append([len(body) > 0, response.is_closed])
        try:
            response.json()  # streamed, then read whole: the official error
        except Exception as exc:
            out.append(type(exc).__name__)
    with client.embeddings.with_streaming_response.create(**emb) as response:
        out.append([response.read() == response.read(), response.json()["object"], response.text()[:1],
                    len(b"".join(response.iter_bytes(16))) > 0])
    with client.models.with_streaming_response.list() as response:
        out.append(["".join(response.iter_text())[:1], response.status_code])
    return out


@snippet
def streaming_response_error_status(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    try:
        with client.models.with_streaming_response.retrieve("no-such-model") as response:
            return response.status_code
    except sdk.NotFoundError as exc:
        return [type(exc).__name__, exc.status_code]


@snippet
async def streaming_response_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    async with client.chat.completions.with_streaming_response.create(
            model=env.model, messages=MESSAGES, max_tokens=6, seed=44) as response:
        head = [response.status_code, response.headers.get("content-type"), response.http_request.method]
        completion = await response.parse()
        text = await response.text()
    async with client.chat.completions.with_streaming_response.create(
            model=env.model, messages=MESSAGES, max_tokens=5, seed=45, stream=True) as streamed:
        lines = [line[:6] async for line in streamed.iter_lines()]
    return [head, completion.model_dump(), text[:1], lines, streamed.is_closed]


@snippet
def raw_response_request_side(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    raw = client.chat.completions.with_raw_response.create(model=env.model, messages=MESSAGES, max_tokens=4,
                                                           seed=46)
    return [raw.http_request.method, str(raw.url).endswith("/v1/chat/completions"), raw.method,
            raw.retries_taken, isinstance(raw.elapsed.total_seconds(), float), raw.elapsed.total_seconds() >= 0,
            raw.http_request.headers["authorization"], raw.is_closed, raw.parse().model_dump()]


@snippet
async def raw_response_request_side_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    raw = await client.embeddings.with_raw_response.create(model="text-embedding-3-small", input="x")
    return [raw.http_request.method, raw.url.path, raw.retries_taken, raw.status_code,
            len(raw.parse().data)]


def _http_client_kwargs(seen: list[str]) -> dict[str, Any]:
    return {"headers": {"x-from-http-client": "yes", "x-team": "client"}, "params": {"tenant": "t9"},
            "auth": httpx.BasicAuth("u", "p"),
            "event_hooks": {"request": [lambda r: seen.append("request " + r.url.path)]}}


@snippet
def http_client_headers_params_auth_hooks(sdk: Any, env: Env) -> Any:
    seen: list[str] = []
    http = httpx.Client(**_http_client_kwargs(seen))
    client = sdk.OpenAI(http_client=http, default_headers={"x-team": "sdk"}, default_query={"q": "1"})
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=48)
    models = [m.id for m in client.models.list()]
    return [r.model_dump(), models, seen]


@snippet
async def http_client_headers_params_async(sdk: Any, env: Env) -> Any:
    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append("request " + request.url.path)

    kwargs = _http_client_kwargs(seen)
    kwargs["event_hooks"] = {"request": [hook]}
    async with httpx.AsyncClient(**kwargs) as http:
        client = sdk.AsyncOpenAI(http_client=http)
        stream = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=4,
                                                      seed=49, stream=True)
        chunks = [c.model_dump() async for c in stream]
    return [chunks, seen]


@snippet
def httpx2_client_from_the_official_package(sdk: Any, env: Env) -> Any:
    # openai.DefaultHttpxClient is an httpx2 client (openai 3.x): the README's proxy recipe.
    import httpx2
    import openai

    seen: list[str] = []
    http = openai.DefaultHttpxClient(headers={"x-from-http-client": "2"}, params={"tenant": "h2x"},
                                     event_hooks={"response": [lambda r: seen.append(str(r.status_code))]})
    client = sdk.OpenAI(http_client=http, max_retries=0)
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=50)
    stream = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=50,
                                            stream=True)
    chunks = [c.model_dump() for c in stream]
    try:
        client.models.retrieve("no-such-model")
    except sdk.NotFoundError as exc:
        error = [type(exc).__name__, exc.status_code]
    return [isinstance(http, httpx2.Client), r.model_dump(), chunks, error, seen]


@snippet
async def httpx2_async_client(sdk: Any, env: Env) -> Any:
    import httpx2

    async with httpx2.AsyncClient(headers={"x-from-http-client": "a2"}, params={"tenant": "a"},
                                  auth=httpx2.BasicAuth("u2", "p2")) as http:
        client = sdk.AsyncOpenAI(http_client=http)
        r = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=51)
        stream = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3,
                                                      seed=51, stream=True)
        chunks = [c.model_dump() async for c in stream]
    return [r.model_dump(), chunks]


@snippet
def http_client_timeout_is_the_default(sdk: Any, env: Env) -> Any:
    # The official rule: a caller's client's own (non-default) timeout is the client's timeout.
    client = sdk.OpenAI(http_client=httpx.Client(timeout=httpx.Timeout(12.0, connect=3.0)))
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=2, seed=52)
    timeout = client.timeout
    return [timeout.read, timeout.connect, r.choices[0].finish_reason]
