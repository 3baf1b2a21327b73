"""Frameworks that pin their own ``openai`` (instructor, pydantic-ai, openai-agents, llama-index,
smolagents) or take an ``anthropic`` client (pydantic-ai's ``AnthropicModel``, instructor's
``from_anthropic``), each in its own venv (``framework_venvs``), handed llmclient's client and,
as the control, the official one, against the session's reference server: what they accept,
what they make of its answers and of its errors must be the same. Slow on first run (the venvs
install from PyPI), so behind the interop marker.

langchain-anthropic's ``ChatAnthropic`` is not here: it takes no client object (1.7.10 builds
its own ``anthropic.Client`` from its settings in a cached property), so there is nothing of
llmclient's to hand it."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness import venvs

from .framework_venvs import framework_python, run_scenarios

pytestmark = pytest.mark.interop

INSTRUCTOR = ["instructor==1.17.0"]
PYDANTIC_AI = ["pydantic-ai-slim[openai]==2.78.0"]
OPENAI_AGENTS = venvs.OPENAI_AGENTS  # the agents benchmark runs the same
# llama-index-llms-openai wants openai<3 (the main environment has 3.x): llmclient must import
# and run against the 2.x classes there.
LLAMA_INDEX = ["llama-index-llms-openai==0.8.3", "llama-index-llms-openai-like==0.8.1", "openai<3"]
SMOLAGENTS = ["smolagents==1.26.0", "openai"]
# The Anthropic face's frameworks, with the anthropic the main environment has.
PYDANTIC_AI_ANTHROPIC = ["pydantic-ai-slim[anthropic]==2.78.0", "anthropic==2.17.0"]
INSTRUCTOR_ANTHROPIC = ["instructor==1.17.0", "anthropic==2.17.0"]


@pytest.fixture(scope="module")
def instructor_python() -> Any:
    return framework_python("instructor", INSTRUCTOR)


@pytest.fixture(scope="module")
def pydantic_ai_python() -> Any:
    return framework_python("pydantic-ai", PYDANTIC_AI)


@pytest.fixture(scope="module")
def openai_agents_python() -> Any:
    return framework_python("openai-agents", OPENAI_AGENTS)


@pytest.fixture(scope="module")
def llama_index_python() -> Any:
    return framework_python("llama-index", LLAMA_INDEX)


@pytest.fixture(scope="module")
def smolagents_python() -> Any:
    return framework_python("smolagents", SMOLAGENTS)


@pytest.fixture(scope="module")
def pydantic_ai_anthropic_python() -> Any:
    return framework_python("pydantic-ai-anthropic", PYDANTIC_AI_ANTHROPIC)


@pytest.fixture(scope="module")
def instructor_anthropic_python() -> Any:
    return framework_python("instructor-anthropic", INSTRUCTOR_ANTHROPIC)


def same_outcomes(ours: dict[str, Any], theirs: dict[str, Any], versions: tuple[str, ...],
                  count: int) -> None:
    """Every scenario passes with the official client (the control) and comes out the same
    with llmclient's; where the scenario looked for llmclient's trace id on the raw answer (or
    for llmclient's chain having run the call, ``chain``), it is there (the call went through
    llmclient, not around it)."""
    mine_only = ("trace_id", "chain")
    scenarios = [k for k in theirs if k not in versions]
    assert len(scenarios) == count and all(theirs[k]["ok"] for k in scenarios), theirs
    for name in scenarios:
        mine = dict(ours[name])
        seen = [mine.pop(key) for key in mine_only if key in mine]
        control = {k: v for k, v in theirs[name].items() if k not in mine_only}
        assert mine == control, (name, ours[name], theirs[name])
        assert all(seen), (name, ours[name])
    assert {k: ours[k] for k in versions} == {k: theirs[k] for k in versions}


def test_instructor_from_openai_takes_llmclients_clients(ref_server: Any, instructor_python: Any) -> None:
    """``instructor.from_openai`` accepts only ``openai.OpenAI`` / ``AsyncOpenAI`` instances:
    tools, JSON schema and partial streaming, sync and async, through llmclient (its trace
    ids on the raw responses), as with the official client."""
    ours = run_scenarios(instructor_python, "instructor_scenarios.py", ref_server.base_url, "llmclient")
    theirs = run_scenarios(instructor_python, "instructor_scenarios.py", ref_server.base_url, "openai")
    scenarios = [k for k in theirs if k != "instructor"]
    assert len(scenarios) == 6 and all(theirs[k]["ok"] for k in scenarios), theirs
    for name in scenarios:
        assert ours[name]["ok"], (name, ours[name])
        if "trace_id" in ours[name]:
            assert ours[name]["trace_id"], name  # the call went through llmclient


def test_pydantic_ai_maps_llmclients_404_and_429_as_the_official_clients(ref_server: Any,
                                                                        pydantic_ai_python: Any) -> None:
    """pydantic-ai catches ``openai.APIStatusError`` and raises its documented errors: the same
    classes and status codes from llmclient's errors, whose cause is llmclient's own."""
    ours = run_scenarios(pydantic_ai_python, "pydantic_ai_scenarios.py", ref_server.base_url, "llmclient")
    theirs = run_scenarios(pydantic_ai_python, "pydantic_ai_scenarios.py", ref_server.base_url, "openai")
    assert ours["call"] == theirs["call"] == {"output": True}
    for status, expected in (("404", "ModelNotFoundError"), ("429", "ModelRateLimitError")):
        assert theirs[status]["error"][0] == expected and "ModelHTTPError" in theirs[status]["error"]
        assert ours[status]["error"] == theirs[status]["error"]
        assert ours[status]["status_code"] == theirs[status]["status_code"] == int(status)
        assert ours[status]["cause"].startswith("llmclient.")


def test_openai_agents_runs_on_llmclients_client(ref_server: Any, openai_agents_python: Any) -> None:
    """openai-agents' ``OpenAIChatCompletionsModel(openai_client=...)``, tracing off:
    ``Runner.run``, ``Runner.run_sync``, a streamed run (text deltas, usage) and a function tool
    the model is made to call (plain and streamed), as with the official client."""
    args = ("openai_agents_scenarios.py", ref_server.base_url)
    ours = run_scenarios(openai_agents_python, *args, "llmclient")
    theirs = run_scenarios(openai_agents_python, *args, "openai")
    same_outcomes(ours, theirs, ("openai-agents", "openai"), 6)


def test_llama_index_openai_llm_runs_on_llmclients_clients(ref_server: Any, llama_index_python: Any) -> None:
    """llama-index's ``OpenAI`` / ``OpenAILike`` LLMs handed llmclient's clients, in a venv with
    ``openai<3``: complete, chat and their streams, sync and async, a forced tool call and the
    legacy Completions endpoint, as with the official client (trace ids on the raw answers)."""
    args = ("llama_index_scenarios.py", ref_server.base_url)
    ours = run_scenarios(llama_index_python, *args, "llmclient")
    theirs = run_scenarios(llama_index_python, *args, "openai")
    assert theirs["openai"].startswith("2."), theirs["openai"]
    same_outcomes(ours, theirs, ("llama-index-llms-openai", "llama-index-core", "openai"), 10)


def test_smolagents_openai_server_model_runs_on_llmclients_client(ref_server: Any,
                                                                  smolagents_python: Any) -> None:
    """smolagents' ``OpenAIServerModel(client=...)``: a generate call, a streamed one (usage in
    the last chunk), a forced tool call and a ``ToolCallingAgent`` run, as with the official
    client."""
    args = ("smolagents_scenarios.py", ref_server.base_url)
    ours = run_scenarios(smolagents_python, *args, "llmclient")
    theirs = run_scenarios(smolagents_python, *args, "openai")
    same_outcomes(ours, theirs, ("smolagents",), 5)


def test_pydantic_ai_anthropic_model_runs_on_llmclients_client(ref_server: Any,
                                                               pydantic_ai_anthropic_python: Any) -> None:
    """pydantic-ai's ``AnthropicModel(provider=AnthropicProvider(anthropic_client=...))`` handed
    ``llmclient.AsyncAnthropic``: a plain ``run_sync``, a structured ``output_type`` run, a
    ``run_stream`` of text deltas, as with the official client, each run by llmclient's chain
    (pydantic-ai sends with ``client.beta.messages.create``); a 404 and a 429 mapped to
    pydantic-ai's ``ModelNotFoundError`` / ``ModelRateLimitError`` with the same status codes,
    their cause llmclient's class (and anthropic's ``APIStatusError`` to ``except``)."""
    args = ("pydantic_ai_anthropic_scenarios.py", ref_server.url)  # the root: the client adds /v1
    ours = run_scenarios(pydantic_ai_anthropic_python, *args, "llmclient")
    theirs = run_scenarios(pydantic_ai_anthropic_python, *args, "anthropic")
    errors = ("404", "429")
    same_outcomes({k: v for k, v in ours.items() if k not in errors},
                  {k: v for k, v in theirs.items() if k not in errors}, ("pydantic_ai", "anthropic"), 3)
    assert all("chain" in ours[k] for k in ("plain", "structured", "streamed")), ours
    for status, expected in zip(errors, ("ModelNotFoundError", "ModelRateLimitError"), strict=True):
        assert theirs[status]["error"][0] == expected and "ModelHTTPError" in theirs[status]["error"], theirs
        assert ours[status]["error"] == theirs[status]["error"], (ours[status], theirs[status])
        assert ours[status]["status_code"] == theirs[status]["status_code"] == int(status)
        assert theirs[status]["cause"].startswith("anthropic."), theirs[status]
        assert ours[status]["cause"] == "llmclient." + theirs[status]["cause"].split(".", 1)[1], ours[status]
        assert ours[status]["cause_is_official"] and theirs[status]["cause_is_official"]


def test_instructor_from_anthropic_takes_llmclients_clients(ref_server: Any,
                                                           instructor_anthropic_python: Any) -> None:
    """``instructor.from_anthropic`` accepts only ``anthropic.Anthropic`` / ``AsyncAnthropic``
    (and the cloud ones) instances: tools mode and partial streaming, sync and async, through
    llmclient (its trace ids on the raw answers, their ``_request_id``), as with the official
    client."""
    args = ("instructor_anthropic_scenarios.py", ref_server.url)  # the root: the client adds /v1
    ours = run_scenarios(instructor_anthropic_python, *args, "llmclient")
    theirs = run_scenarios(instructor_anthropic_python, *args, "anthropic")
    same_outcomes(ours, theirs, ("instructor", "anthropic"), 4)
    assert sum("trace_id" in ours[k] for k in ours) == 2, ours  # the whole answers carry it
