"""Frameworks that pin their own ``openai`` (instructor, pydantic-ai), each in its own venv
(``framework_venvs``), handed llmclient's client and, as the control, the official one, against
the session's reference server: what they accept and what they make of its errors must be the
same. Slow on first run (the venvs install from PyPI), so behind the interop marker."""

from __future__ import annotations

from typing import Any

import pytest

from .framework_venvs import framework_python, run_scenarios

pytestmark = pytest.mark.interop

INSTRUCTOR = ["instructor==1.17.0"]
PYDANTIC_AI = ["pydantic-ai-slim[openai]==2.78.0"]


@pytest.fixture(scope="module")
def instructor_python() -> Any:
    return framework_python("instructor", INSTRUCTOR)


@pytest.fixture(scope="module")
def pydantic_ai_python() -> Any:
    return framework_python("pydantic-ai", PYDANTIC_AI)


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
