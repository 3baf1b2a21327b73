"""Snippets for the endpoints llmclient does not accelerate and passes to the official client
(``llmclient.api.passthrough``): Responses, moderations, files, batches, images, audio, vector
stores, ``client.get/post``. The reference server answers some of them (the rest with a 404):
either way the result or error and the request on the wire must be the official client's."""

from __future__ import annotations

import io
from typing import Any

from .harness import Env, snippet

MESSAGES = [{"role": "user", "content": "Say something about the sea."}]


def _error(exc: Exception) -> list[Any]:
    return [type(exc).__name__, getattr(exc, "status_code", None)]


@snippet
def passthrough_errors_are_the_sdks_classes(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    out = []
    for fn in (lambda: client.files.retrieve("file-abc123"),
               lambda: client.moderations.create(input="I want to hug a cat", model="omni-moderation-latest"),
               lambda: client.batches.retrieve("batch_abc"),
               lambda: client.vector_stores.create(name="docs")):
        try:
            fn()
        except sdk.NotFoundError as exc:  # the imported SDK's own class catches it
            out.append(["caught", *_error(exc), isinstance(exc, sdk.APIStatusError),
                        exc.response.status_code])
    return out


@snippet
async def passthrough_errors_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI(max_retries=0)
    out = []
    for make in (lambda: client.moderations.create(input=["a", "b"]),
                 lambda: client.images.generate(model="gpt-image-1", prompt="a red kite", size="1024x1024"),
                 lambda: client.files.delete("file-1")):
        try:
            await make()
        except sdk.APIStatusError as exc:
            out.append(_error(exc))
    return out


@snippet
def files_upload_multipart(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    try:
        client.files.create(file=("notes.jsonl", io.BytesIO(b'{"a": 1}\n'), "application/jsonl"),
                            purpose="batch")
    except sdk.APIStatusError as exc:
        return _error(exc)
    return "no error"


@snippet
async def audio_speech_streaming_response_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI(max_retries=0)
    try:
        async with client.audio.speech.with_streaming_response.create(
                model="gpt-4o-mini-tts", voice="coral", input="Today is a wonderful day") as response:
            return await response.read()
    except sdk.NotFoundError as exc:
        return _error(exc)


@snippet
def client_get_and_post(sdk: Any, env: Env) -> Any:
    # The official README's "undocumented endpoints": client.get / client.post with cast_to.
    client = sdk.OpenAI()
    models = client.get("/models", cast_to=object)
    completion = client.post("/chat/completions", cast_to=object,
                             body={"model": env.model, "messages": MESSAGES, "max_tokens": 5, "seed": 31})
    return [models, completion]


@snippet
async def client_post_async_with_official_type(sdk: Any, env: Env) -> Any:
    import openai

    client = sdk.AsyncOpenAI()
    completion = await client.post("/chat/completions", cast_to=openai.types.chat.ChatCompletion,
                                   body={"model": env.model, "messages": MESSAGES, "max_tokens": 5, "seed": 32})
    return [type(completion).__name__, completion.model_dump()]


@snippet
def module_level_passthrough(sdk: Any, env: Env) -> Any:
    env.patch(sdk, "api_key", "sk-module")
    env.patch(sdk, "base_url", env.base_url + "/")  # the official module client joins it as given
    env.patch(sdk, "max_retries", 0)
    try:
        sdk.moderations.create(input="hello")
    except sdk.NotFoundError as exc:
        return _error(exc)
    return "no error"


@snippet
def azure_passthrough(sdk: Any, env: Env) -> Any:
    client = sdk.AzureOpenAI(azure_endpoint=env.origin, api_version="2024-10-21", api_key="az-key",
                             azure_deployment="dep", max_retries=0)
    try:
        client.images.generate(model="dall-e-3", prompt="a kite")
    except sdk.NotFoundError as exc:
        return _error(exc)
    return "no error"


@snippet
def settings_reach_passed_calls(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(organization="org-1", project="proj-1", default_headers={"x-team": "blue"},
                        default_query={"tenant": "t1"}, max_retries=0)
    other = client.with_options(default_headers={"x-extra": "1"})
    out = []
    for c in (client, other):
        try:
            c.moderations.create(input="x", extra_query={"q": "1"}, extra_headers={"x-call": "y"})
        except sdk.APIStatusError as exc:
            out.append(_error(exc))
    return out


@snippet
def responses_api_without_server_support(sdk: Any, env: Env) -> Any:
    # A server without /v1/responses (a base URL whose prefix the reference server does not
    # serve): the same error, from the same request.
    client = sdk.OpenAI(base_url=env.origin + "/no-responses/v1", max_retries=0)
    try:
        client.responses.create(model=env.model, input="Tell me a three sentence bedtime story.",
                                instructions="Be brief.", max_output_tokens=16)
    except sdk.APIStatusError as exc:
        return _error(exc)
    return "no error"


@snippet
def beta_assistants_passed_through(sdk: Any, env: Env) -> Any:
    import warnings

    client = sdk.OpenAI(max_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            client.beta.assistants.create(model=env.model, name="Math Tutor",
                                          instructions="You are a personal math tutor.")
        except sdk.NotFoundError as exc:
            return _error(exc)
    return "no error"
