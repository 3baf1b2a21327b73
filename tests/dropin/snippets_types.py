"""Snippets that use the response objects as the official pydantic types: isinstance checks,
model_* methods, nesting in an application's own models, the ``types`` module layout."""

from __future__ import annotations

import importlib
import json
from typing import Any

import openai
import pydantic

from .harness import Env, snippet

MESSAGES = [{"role": "user", "content": "Name a colour."}]


def _types(sdk: Any, path: str) -> Any:
    return importlib.import_module(f"{sdk.__name__}.types{path}")


@snippet
def types_isinstance(sdk: Any, env: Env) -> Any:
    from_types = _types(sdk, ".chat")
    r = sdk.OpenAI().chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=21)
    choice_cls = _types(sdk, ".chat.chat_completion").Choice
    return [isinstance(r, pydantic.BaseModel), isinstance(r, openai.types.chat.ChatCompletion),
            isinstance(r, from_types.ChatCompletion), isinstance(r.choices[0], choice_cls),
            isinstance(r.choices[0].message, openai.types.chat.ChatCompletionMessage),
            isinstance(r.usage, openai.types.CompletionUsage), type(r).__name__]


@snippet
def types_model_methods(sdk: Any, env: Env) -> Any:
    r = sdk.OpenAI().chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=22)
    copy = r.model_copy(update={"model": "renamed"})
    again = type(r).model_validate_json(r.model_dump_json())
    from_dict = type(r).model_validate(r.model_dump())
    return [copy.model, r.model, again == r, from_dict == r, sorted(r.model_fields_set),
            r.model_extra, r.choices[0].message.model_extra, r.model_dump(exclude_unset=True),
            r.model_dump(exclude_none=True), json.loads(r.to_json()), r.to_dict(mode="json")]


@snippet
def types_nested_in_app_model(sdk: Any, env: Env) -> Any:
    class Turn(pydantic.BaseModel):
        prompt: str
        response: openai.types.chat.ChatCompletion

    r = sdk.OpenAI().chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=23)
    turn = Turn(prompt="colour", response=r)
    back = Turn.model_validate_json(turn.model_dump_json())
    return [json.loads(turn.model_dump_json()), back.response.choices[0].message.content]


@snippet
def types_json_dumps_of_dump(sdk: Any, env: Env) -> Any:
    r = sdk.OpenAI().chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=24)
    return [json.loads(json.dumps(r.model_dump())), json.loads(json.dumps(r.choices[0].message.to_dict()))]


@snippet
def types_stream_chunks(sdk: Any, env: Env) -> Any:
    stream = sdk.OpenAI().chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=25,
                                                  stream=True)
    chunks = list(stream)
    return [all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks),
            [sorted(c.model_fields_set) for c in chunks], [c.choices[0].delta.model_dump() for c in chunks]]


@snippet
async def types_async_objects(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    r = await client.chat.completions.create(model=env.model, messages=MESSAGES, max_tokens=3, seed=26)
    e = await client.embeddings.create(model="text-embedding-3-small", input="hi")
    m = await client.models.retrieve(env.model)
    return [isinstance(r, openai.types.chat.ChatCompletion), isinstance(e, openai.types.CreateEmbeddingResponse),
            isinstance(e.data[0], openai.types.Embedding), isinstance(m, openai.types.Model),
            e.model_dump(exclude={"data"}), m.model_dump()]


@snippet
def types_completion_and_page(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    c = client.completions.create(model=env.model, prompt="Blue", max_tokens=3, seed=27)
    page = client.models.list()
    return [isinstance(c, openai.types.Completion), [type(m).__name__ for m in page][:2],
            all(isinstance(m, openai.types.Model) for m in page), len(page.data), page.object]


@snippet
def types_message_param_annotations(sdk: Any, env: Env) -> Any:
    chat_types = _types(sdk, ".chat")
    messages: list[Any] = [chat_types.ChatCompletionSystemMessageParam(role="system", content="Be brief."),
                           chat_types.ChatCompletionUserMessageParam(role="user", content="Hi")]
    r = sdk.OpenAI().chat.completions.create(model=env.model, messages=messages, max_tokens=3, seed=28)
    return r.choices[0].message.model_dump()


@snippet
def types_response_passed_back_whole(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    history: list[Any] = list(MESSAGES)
    for _ in range(3):
        r = client.chat.completions.create(model=env.model, messages=history, max_tokens=3, seed=29)
        history.append(r.choices[0].message)
        history.append({"role": "user", "content": "another"})
    return [m if isinstance(m, dict) else m.model_dump() for m in history]
