"""Snippets from the official README and the cookbook: chat, streaming, tool loops, errors,
client settings. Each takes the SDK module (``openai`` or ``llmclient``) and returns plain data."""

from __future__ import annotations

import json
from typing import Any

from .harness import Env, snippet

MESSAGES = [{"role": "user", "content": "Say something about the sea."}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                         "days": {"type": "integer"}},
                       "required": ["city", "days"], "additionalProperties": False},
    },
}
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}


@snippet
def readme_chat(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    completion = client.chat.completions.create(
        model=env.model,
        messages=[{"role": "developer", "content": "Talk like a pirate."},
                  {"role": "user", "content": "How do I check if a Python object is an instance of a class?"}],
        max_tokens=16, temperature=0,
    )
    return [completion.choices[0].message.content, completion.model_dump(), completion.to_dict()]


@snippet
async def readme_chat_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    completion = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=12, seed=1)
    return completion.model_dump()


@snippet
def readme_streaming(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    stream = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=10, seed=2,
                                            stream=True)
    return [chunk.model_dump() for chunk in stream]


@snippet
async def readme_streaming_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    stream = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=10, seed=2,
                                                  stream=True, stream_options={"include_usage": True})
    return [chunk.model_dump() async for chunk in stream]


def _tool_loop(client: Any, env: Env, as_dict: bool) -> Any:
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    response = client.chat.completions.create(model=env.model, messages=messages, tools=[WEATHER_TOOL],
                                              tool_choice=FORCE_WEATHER, max_tokens=8, seed=3)
    message = response.choices[0].message
    if as_dict:  # the cookbook's other form: a dict holding the response's tool_calls objects
        messages.append({"role": "assistant", "content": message.content, "tool_calls": message.tool_calls})
    else:
        messages.append(message)
    for call in message.tool_calls:
        args = json.loads(call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": json.dumps({"city": args["city"], "temp_c": 21})})
    final = client.chat.completions.create(model=env.model, messages=messages, max_tokens=8, seed=3)
    # The answer's text depends on the tool call's id (random per request): compare its shape.
    return [sorted(args), bool(final.choices[0].message.content), final.choices[0].finish_reason]


@snippet
def cookbook_tool_loop(sdk: Any, env: Env) -> Any:
    return _tool_loop(sdk.OpenAI(), env, as_dict=False)


@snippet
def cookbook_tool_loop_dict(sdk: Any, env: Env) -> Any:
    return _tool_loop(sdk.OpenAI(), env, as_dict=True)


@snippet
async def cookbook_tool_loop_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    response = await client.chat.completions.create(model=env.model, messages=messages, tools=[WEATHER_TOOL],
                                                    tool_choice="required", max_tokens=8, seed=4)
    messages.append(response.choices[0].message)
    for call in response.choices[0].message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    final = await client.chat.completions.create(model=env.model, messages=messages, max_tokens=8, seed=4)
    return [final.choices[0].finish_reason, final.usage.completion_tokens]


@snippet
def message_dump_passed_back(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    first = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=6, seed=5)
    history = [*MESSAGES, first.choices[0].message.model_dump(exclude_none=True),
               {"role": "user", "content": "And more?"}]
    return client.chat.completions.create(model=env.model, messages=history, max_tokens=6, seed=5).model_dump()


@snippet
def messages_as_generator(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.chat.completions.create(model=env.model, messages=(m for m in MESSAGES), max_tokens=5, seed=6)
    return r.choices[0].message.content


@snippet
def readme_errors_not_found(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    try:
        client.chat.completions.create(model="no-such-model", messages=MESSAGES)
    except sdk.APIConnectionError:
        return "connection"
    except sdk.NotFoundError as e:
        return ["not found", e.status_code, type(e.body).__name__]
    except sdk.APIStatusError as e:
        return ["status", e.status_code]
    return "no error"


@snippet
def readme_errors_bad_request(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    try:
        client.chat.completions.create(model=env.model, messages=[{"role": "nobody", "content": "x"}])
    except sdk.BadRequestError as e:
        return ["bad request", e.status_code, e.param, e.type, isinstance(e, sdk.APIError)]
    return "no error"


@snippet
async def readme_errors_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI(max_retries=0)
    try:
        await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=-3)
    except sdk.APIStatusError as e:
        return [type(e).__name__, e.status_code]
    return "no error"


@snippet
def readme_connection_error(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(base_url="http://127.0.0.1:9/v1", max_retries=0)
    try:
        client.chat.completions.create(model=env.model, messages=MESSAGES)
    except sdk.APIConnectionError as e:
        return ["connection", isinstance(e, sdk.APIError), isinstance(e, sdk.APITimeoutError)]
    return "no error"


@snippet
def readme_not_given_and_omit(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=5, seed=7,
                                       temperature=sdk.NOT_GIVEN, top_p=sdk.not_given, stop=sdk.omit,
                                       extra_headers={"x-custom": "1"})
    return [r.choices[0].message.content, bool(sdk.NOT_GIVEN), bool(sdk.omit)]


@snippet
def readme_with_options(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(default_headers={"x-team": "a"}, default_query={"tag": "q1"})
    r = client.with_options(max_retries=5, timeout=20.0).chat.completions.create(
        model=env.model, messages=MESSAGES, max_tokens=4, seed=8)
    other = client.with_options(default_headers={"x-extra": "b"})
    r2 = other.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=4, seed=8,
                                       extra_query={"more": "1"}, extra_body={"user": "u1"})
    return [r.model_dump(), r2.model_dump(), client.default_headers["x-team"],
            other.default_headers["x-extra"], client.max_retries]


@snippet
def readme_is_closed(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    before = client.is_closed()
    with sdk.OpenAI() as c2:
        c2.models.list()
    client.close()
    return [before, client.is_closed()]


@snippet
def readme_default_httpx_client(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(http_client=sdk.DefaultHttpxClient())
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=4, seed=9)
    return r.model_dump()


@snippet
async def readme_default_async_httpx_client(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI(http_client=sdk.DefaultAsyncHttpxClient())
    r = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=4, seed=9)
    return r.model_dump()


@snippet
def readme_module_client(sdk: Any, env: Env) -> Any:
    env.patch(sdk, "api_key", "sk-module")
    env.patch(sdk, "base_url", env.base_url + "/")
    r = sdk.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=4, seed=10)
    models = [m.id for m in sdk.models.list()]
    return [r.model_dump(), models]


@snippet
def azure_api_key(sdk: Any, env: Env) -> Any:
    client = sdk.AzureOpenAI(azure_endpoint=env.origin, api_version="2024-10-21", api_key="az-key",
                             max_retries=0)
    try:
        client.chat.completions.create(model="my-deployment", messages=MESSAGES)
    except sdk.NotFoundError as e:
        return ["not found", e.status_code]
    return "no error"


@snippet
def azure_deployment_and_token(sdk: Any, env: Env) -> Any:
    client = sdk.AzureOpenAI(azure_endpoint=env.origin + "/", azure_deployment="dep1",
                             api_version="2024-10-21", azure_ad_token="aad-token", max_retries=0)
    try:
        client.embeddings.create(model="text-embedding-3-small", input="hi")
    except sdk.NotFoundError as e:
        return ["not found", e.status_code]
    return "no error"


@snippet
async def azure_async_token_provider(sdk: Any, env: Env) -> Any:
    tokens = iter(["t1", "t2"])

    async def provider() -> str:
        return next(tokens)

    client = sdk.AsyncAzureOpenAI(azure_endpoint=env.origin, api_version="2024-10-21",
                                  azure_ad_token_provider=provider, max_retries=0)
    out = []
    for _ in range(2):
        try:
            await client.chat.completions.create(model="dep2", messages=MESSAGES)
        except sdk.NotFoundError as e:
            out.append(e.status_code)
    return out


@snippet
def azure_missing_settings(sdk: Any, env: Env) -> Any:
    out = []
    for kwargs in ({"api_version": "v", "azure_endpoint": env.origin},
                   {"api_key": "k", "azure_endpoint": env.origin},
                   {"api_key": "k", "api_version": "v"},
                   {"api_key": "k", "api_version": "v", "azure_endpoint": env.origin, "base_url": env.base_url}):
        try:
            sdk.AzureOpenAI(**kwargs)
            out.append("ok")
        except Exception as e:
            out.append([type(e).__name__, str(e)])
    return out


@snippet
def legacy_completions(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.completions.create(model=env.model, prompt="Once upon a time", max_tokens=6, seed=11)
    stream = client.completions.create(model=env.model, prompt="Once upon a time", max_tokens=6, seed=11,
                                       stream=True)
    return [r.model_dump(), [c.model_dump() for c in stream]]


@snippet
def embeddings(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.embeddings.create(model="text-embedding-3-small", input=["hello", "world"])
    f = client.embeddings.create(model="text-embedding-3-small", input="hello", encoding_format="float")
    return [len(r.data), [round(x, 5) for x in r.data[0].embedding[:8]], r.usage.model_dump(),
            [round(x, 5) for x in f.data[0].embedding[:8]]]


@snippet
async def models_list_and_retrieve_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    ids = [m.id async for m in client.models.list()]
    page = await client.models.list()
    one = await client.models.retrieve(env.model)
    return [ids, [m.id for m in page.data], one.model_dump()]


@snippet
async def models_page_async_is_an_async_page(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    page = await client.models.list()
    return [type(page).__name__, [m.id async for m in page], page.has_next_page()]


@snippet
def n_choices_and_stop(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.chat.completions.create(model=env.model, messages=MESSAGES, n=2, max_tokens=6, seed=12,
                                       stop=["\n"], user="abc")
    return r.model_dump()


@snippet
def raw_response(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    raw = client.chat.completions.with_raw_response.create(model=env.model, messages=MESSAGES, max_tokens=4,
                                                           seed=13)
    completion = raw.parse()
    return [raw.headers.get("content-type"), raw.status_code, completion.model_dump()]


@snippet
def finish_reason_errors_exist(sdk: Any, env: Env) -> Any:
    e = sdk.ContentFilterFinishReasonError()
    return [issubclass(sdk.LengthFinishReasonError, sdk.OpenAIError), str(e),
            issubclass(sdk.APITimeoutError, sdk.APIConnectionError)]
