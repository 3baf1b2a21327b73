"""Snippets for the Responses API (the official README's first example, the streaming events and
helper, stored responses), run against the reference server's ``/v1/responses``. llmclient
passes ``client.responses`` to the official client: results, errors and the wire must match."""

from __future__ import annotations

from typing import Any

from .harness import Env, snippet

PIRATE = "You are a coding assistant that talks like a pirate."
QUESTION = "How do I check if a Python object is an instance of a class?"


def _error(exc: Exception) -> list[Any]:
    return [type(exc).__name__, getattr(exc, "status_code", None), getattr(exc, "body", None)]


@snippet
def responses_readme_create(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    response = client.responses.create(model=env.model, instructions=PIRATE, input=QUESTION,
                                       temperature=0, max_output_tokens=16)
    return [response.output_text, response.status, response.model_dump()]


@snippet
async def responses_create_async_message_items(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    response = await client.responses.create(
        model=env.model, temperature=0, max_output_tokens=32,
        input=[{"role": "developer", "content": "Talk like a pirate."},
               {"role": "user", "content": [{"type": "input_text", "text": "Are semicolons optional?"}]}])
    return [response.output_text, response.to_dict()]


@snippet
def responses_previous_response_id_chain(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    first = client.responses.create(model=env.model, input="Tell me a joke.", temperature=0,
                                    max_output_tokens=16)
    second = client.responses.create(model=env.model, previous_response_id=first.id, temperature=0,
                                     input=[{"role": "user", "content": "Explain why it is funny."}],
                                     max_output_tokens=16)
    # The earlier turn is part of the prompt: more input tokens than the new message alone.
    return [second.previous_response_id == first.id, second.usage.input_tokens > first.usage.input_tokens,
            second.output_text, second.model_dump()]


@snippet
async def responses_previous_response_id_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    first = await client.responses.create(model=env.model, input="Name a colour.", temperature=0,
                                          max_output_tokens=16)
    second = await client.responses.create(model=env.model, previous_response_id=first.id,
                                           input="And another one?", temperature=0, max_output_tokens=16)
    return [first.output_text, second.output_text, second.usage.model_dump()]


@snippet
def responses_stream_true(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    stream = client.responses.create(model=env.model, input="Say something about the sea.",
                                     temperature=0, max_output_tokens=16, stream=True)
    return [event.model_dump() for event in stream]


@snippet
async def responses_stream_true_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    stream = await client.responses.create(model=env.model, input="Say something about the sea.",
                                           temperature=0, stream=True)
    events = [event async for event in stream]
    return [[e.type for e in events], events[-1].model_dump()]


@snippet
def responses_stream_helper(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    deltas = []
    with client.responses.stream(model=env.model, input="Write a haiku about rivers.",
                                 instructions="Be brief.", temperature=0) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append([event.delta, event.snapshot])
        final = stream.get_final_response()
    return [deltas, final.output_text, type(final).__name__, final.model_dump()]


@snippet
async def responses_stream_helper_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    async with client.responses.stream(model=env.model, input="Write a haiku about rivers.",
                                       temperature=0) as stream:
        types = [event.type async for event in stream]
        final = await stream.get_final_response()
    return [types, final.output_text, final.usage.model_dump()]


@snippet
def responses_stream_helper_incomplete(sdk: Any, env: Env) -> Any:
    # Cut at max_output_tokens: a response.incomplete event, and no final response.
    client = sdk.OpenAI()
    with client.responses.stream(model=env.model, input="Tell me a long story.", temperature=0,
                                 max_output_tokens=16) as stream:
        last = [event.type for event in stream][-1]
        try:
            stream.get_final_response()
        except RuntimeError as exc:
            return [last, str(exc)]
    return [last, "no error"]


@snippet
def responses_retrieve_input_items_delete(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    created = client.responses.create(model=env.model, temperature=0, max_output_tokens=16,
                                      input=[{"role": "user", "content": "First."},
                                             {"role": "user", "content": "Second."}])
    retrieved = client.responses.retrieve(created.id)
    items = client.responses.input_items.list(created.id)
    asc = client.responses.input_items.list(created.id, order="asc", limit=1)
    deleted = client.responses.delete(created.id)
    try:
        client.responses.retrieve(created.id)
        gone: Any = "still there"
    except sdk.NotFoundError as exc:
        gone = _error(exc)
    return [retrieved.model_dump() == created.model_dump(), items.model_dump(),
            [i.content[0].text for i in items.data], asc.has_more, deleted, gone]


@snippet
async def responses_retrieve_input_items_delete_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI(max_retries=0)
    created = await client.responses.create(model=env.model, input="Hello there.", temperature=0,
                                            max_output_tokens=16)
    retrieved = await client.responses.retrieve(created.id)
    texts = [item.content[0].text async for item in client.responses.input_items.list(created.id)]
    await client.responses.delete(created.id)
    try:
        await client.responses.delete(created.id)
        again: Any = "deleted twice"
    except sdk.NotFoundError as exc:
        again = _error(exc)
    return [retrieved.output_text == created.output_text, texts, again]


@snippet
def responses_store_false_and_errors(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI(max_retries=0)
    out: list[Any] = []
    unstored = client.responses.create(model=env.model, input="Hi.", store=False, temperature=0,
                                       max_output_tokens=16)
    out.append(unstored.store)
    for call in (lambda: client.responses.retrieve(unstored.id),
                 lambda: client.responses.create(model=env.model, input="Hi.",
                                                 previous_response_id=unstored.id),
                 lambda: client.responses.create(model=env.model, input="Hi.", max_output_tokens=5),
                 lambda: client.responses.create(model=env.model, input=[{"role": "robot", "content": "x"}]),
                 lambda: client.responses.create(model="no-such-model", input="Hi.")):
        try:
            call()
            out.append("no error")
        except sdk.APIStatusError as exc:
            out.append(_error(exc))
    return out
