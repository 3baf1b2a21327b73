"""Structured outputs (the official README's and cookbook's patterns): ``parse`` with a pydantic
``response_format``, strict function tools, ``beta.chat.completions``, the streaming helper."""

from __future__ import annotations

import json
from typing import Any, Literal

import pydantic

from .harness import Env, snippet


class Step(pydantic.BaseModel):
    explanation: str
    output: str


class MathResponse(pydantic.BaseModel):
    steps: list[Step]
    final_answer: str
    confidence: float | None
    kind: Literal["algebra", "geometry"]


class GetWeather(pydantic.BaseModel):
    """Current weather in a city."""

    city: str
    days: int


TUTOR = [{"role": "system", "content": "You are a helpful math tutor."},
         {"role": "user", "content": "solve 8x + 31 = 2"}]


def _parsed_view(completion: Any) -> Any:
    message = completion.choices[0].message
    return [type(completion).__name__, message.parsed.model_dump() if message.parsed else None,
            message.refusal, completion.choices[0].finish_reason, json.loads(message.content)]


@snippet
def structured_parse(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    completion = client.chat.completions.parse(model=env.model, messages=TUTOR, response_format=MathResponse,
                                               seed=31)
    return _parsed_view(completion)


@snippet
async def structured_parse_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    completion = await client.chat.completions.parse(model=env.model, messages=TUTOR,
                                                     response_format=MathResponse, seed=32)
    return _parsed_view(completion)


@snippet
def structured_beta_parse(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    completion = client.beta.chat.completions.parse(model=env.model, messages=TUTOR, response_format=Step,
                                                    seed=33)
    return _parsed_view(completion)


@snippet
def structured_length_error(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    try:
        client.chat.completions.parse(model=env.model, messages=TUTOR, response_format=MathResponse,
                                      max_tokens=3, seed=34)
    except sdk.LengthFinishReasonError as e:
        return ["length", e.completion.choices[0].finish_reason, str(e).split(" - ")[0]]
    return "no error"


@snippet
def structured_function_tool(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    completion = client.chat.completions.parse(
        model=env.model, messages=[{"role": "user", "content": "Weather in Rome for 3 days?"}],
        tools=[sdk.pydantic_function_tool(GetWeather)],
        tool_choice={"type": "function", "function": {"name": "GetWeather"}}, seed=35)
    call = completion.choices[0].message.tool_calls[0]
    return [call.function.name, type(call.function.parsed_arguments).__name__,
            call.function.parsed_arguments.model_dump(), completion.choices[0].finish_reason]


@snippet
async def structured_function_tool_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    tool = sdk.pydantic_function_tool(GetWeather, name="weather", description="Weather lookup")
    completion = await client.chat.completions.parse(
        model=env.model, messages=[{"role": "user", "content": "Weather in Rome?"}], tools=[tool],
        tool_choice="required", seed=36)
    return [tool, completion.choices[0].message.tool_calls[0].function.parsed_arguments.model_dump()]


@snippet
def structured_non_strict_tool_refused(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    try:
        client.chat.completions.parse(model=env.model, messages=TUTOR, tools=[tool])
    except ValueError as e:
        return ["refused", str(e)]
    return "no error"


@snippet
def structured_dict_json_schema(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    r = client.chat.completions.create(
        model=env.model, messages=[{"role": "user", "content": "A person"}], seed=37,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}})
    data = json.loads(r.choices[0].message.content)
    return [sorted(data), type(data["age"]).__name__, r.choices[0].finish_reason]


@snippet
def structured_json_object(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    r = client.chat.completions.create(model=env.model, messages=[{"role": "user", "content": "JSON please"}],
                                       response_format={"type": "json_object"}, seed=38)
    return type(json.loads(r.choices[0].message.content)).__name__


@snippet
def structured_stream_helper(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    events: list[str] = []
    try:  # the answer stops at max_tokens: the helper raises at its end, as the official one does
        with client.chat.completions.stream(model=env.model, messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=6, seed=39) as stream:
            events.extend(event.type for event in stream)
    except sdk.LengthFinishReasonError as e:
        return [events, "length", e.completion.choices[0].message.content]
    return [events, "no error"]


@snippet
async def structured_stream_helper_async(sdk: Any, env: Env) -> Any:
    client = sdk.AsyncOpenAI()
    deltas = []
    async with client.beta.chat.completions.stream(model=env.model, messages=[{"role": "user", "content": "Hi"}],
                                                   max_tokens=6, seed=39) as stream:
        async for event in stream:
            if event.type == "content.delta":
                deltas.append(event.delta)
        try:
            final = await stream.get_final_completion()
        except sdk.LengthFinishReasonError as e:  # stopped at max_tokens: the official semantics
            final = e.completion
    return ["".join(deltas) == final.choices[0].message.content, final.model_dump()]


@snippet
def structured_stream_helper_tools(sdk: Any, env: Env) -> Any:
    client = sdk.OpenAI()
    with client.chat.completions.stream(model=env.model, messages=[{"role": "user", "content": "Weather?"}],
                                        tools=[sdk.pydantic_function_tool(GetWeather)], tool_choice="required",
                                        seed=41) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    return [events, call.function.parsed_arguments.model_dump()]
