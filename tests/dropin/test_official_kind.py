"""llmclient's clients and errors are the official ``openai`` classes' kind (``llmclient._official``):
``isinstance(client, openai.OpenAI)`` for frameworks that check it, and every error llmclient
raises is an instance of the official class of its name, so ``except openai.X`` keeps working.
What a fresh interpreter sees (the import hook, ``openai`` absent) runs in a subprocess: in this
one ``openai`` is imported already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmclient
from llmclient import _errors
from tests._both import Drive

MODEL = "gpt-4o-mini"
ERROR_CLASSES = [getattr(_errors, name) for name in _errors.__all__]


def _official_of(cls: type) -> type:
    """The official class an llmclient class stands for: the first of its MRO whose name
    ``openai`` has (``IncompleteStreamError`` -> ``APIConnectionError``)."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("llmclient") and isinstance(getattr(openai, klass.__name__, None), type):
            official: type = getattr(openai, klass.__name__)
            return official
    raise AssertionError(f"{cls} stands for no official class")


def test_the_clients_are_the_official_clients_kind() -> None:
    for ours, theirs in [(llmclient.OpenAI, openai.OpenAI), (llmclient.AsyncOpenAI, openai.AsyncOpenAI)]:
        client = ours(api_key="k", base_url="http://127.0.0.1:9/v1")
        assert isinstance(client, theirs) and issubclass(ours, theirs)
        assert client.base_url == httpx.URL("http://127.0.0.1:9/v1/")  # ours, not the official property
        assert type(client.chat).__module__.startswith("llmclient")  # our resources come first
        with pytest.raises(AttributeError, match="platform_headers"):
            client.platform_headers  # noqa: B018 (an official attribute llmclient lacks stays missing)
    azure = {"api_key": "k", "api_version": "2024-10-21", "azure_endpoint": "https://x.openai.azure.com"}
    assert isinstance(llmclient.AzureOpenAI(**azure), openai.AzureOpenAI)
    assert isinstance(llmclient.AsyncAzureOpenAI(**azure), openai.AsyncAzureOpenAI)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_derives_from_the_official_class_of_its_name(cls: type) -> None:
    assert issubclass(cls, _official_of(cls))
    if hasattr(openai, cls.__name__):
        assert issubclass(cls, getattr(openai, cls.__name__))
    assert getattr(llmclient, cls.__name__) is cls


@given(status=st.integers(min_value=400, max_value=599))
def test_a_status_error_is_the_official_class_of_its_name(status: int) -> None:
    response = httpx.Response(status, json={"error": {"message": "m", "code": "c", "param": "p", "type": "t"}},
                              headers={"x-request-id": "req-1"}, request=httpx.Request("POST", "http://h/v1/x"))
    err = _errors.status_error_class(status)("m", response=response, body={"message": "m", "code": "c",
                                                                            "param": "p", "type": "t"})
    assert isinstance(err, getattr(openai, type(err).__name__))
    assert isinstance(err, openai.APIStatusError)
    assert (err.status_code, err.code, err.param, err.type, err.request_id) == (status, "c", "p", "t", "req-1")
    assert err.response is response and err.body == {"message": "m", "code": "c", "param": "p", "type": "t"}


# What the reference server can be made to do, and the kind of call that meets it.
FAULTS: list[tuple[str, dict[str, Any]]] = [
    ("unknown model (404)", {"model": "no-such-model"}),
    ("bad x-fault (400)", {"headers": {"x-fault": "status=418"}}),
    ("429", {"headers": {"x-fault": "status=429;retry_after=0"}}),
    ("500", {"headers": {"x-fault": "status=500"}}),
    ("503 oom", {"headers": {"x-fault": "oom"}}),
    ("cut stream", {"headers": {"x-fault": "cut_after=2"}, "stream": True}),
    ("cut body", {"headers": {"x-fault": "cut_after=5"}}),
    ("malformed sse", {"headers": {"x-fault": "malformed_sse"}, "stream": True}),
    ("reset", {"headers": {"x-fault": "reset"}}),
    ("reset stream", {"headers": {"x-fault": "reset"}, "stream": True}),
    ("read timeout", {"headers": {"x-fault": "stall_ms=3000"}, "timeout": 0.3}),
    ("connection refused", {"refused": True}),
]


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fault=st.sampled_from(FAULTS))
def test_every_error_llmclient_raises_is_the_official_class_of_its_name(
        ref_server: Any, drive: Drive, fault: tuple[str, dict[str, Any]]) -> None:
    _, how = fault
    base_url = "http://127.0.0.1:9/v1" if how.get("refused") else ref_server.base_url
    client = drive.client(base_url=base_url, api_key="k", max_retries=0)
    kwargs: dict[str, Any] = {"model": how.get("model", MODEL), "messages": [{"role": "user", "content": "hi"}],
                              "max_tokens": 8, "extra_headers": how.get("headers", {})}
    if "timeout" in how:
        kwargs["timeout"] = how["timeout"]
    try:
        if how.get("stream"):
            drive.iterate(drive(client.chat.completions.create(stream=True, **kwargs)))
        else:
            drive(client.chat.completions.create(**kwargs))
    except openai.APIError as exc:  # the official base catches it
        err: Exception = exc
    else:
        raise AssertionError(f"{fault[0]}: no error")
    assert isinstance(err, llmclient.APIError) and err.trace_id  # still llmclient's, with its extras
    assert isinstance(err, _official_of(type(err)))
    if hasattr(openai, type(err).__name__):
        assert isinstance(err, getattr(openai, type(err).__name__))
    for name in ("message", "request", "body", "code", "param", "type"):
        assert hasattr(err, name), name
    if isinstance(err, openai.APIStatusError):
        assert err.status_code == err.response.status_code and hasattr(err, "request_id")


def test_a_404_has_the_official_errors_attributes(ref_server: Any) -> None:
    """The same request through both clients: the same class, status, body and fields."""
    errors = []
    for module in (llmclient, openai):
        client = module.OpenAI(base_url=ref_server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.NotFoundError) as info:
            client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
        errors.append(info.value)
    ours, theirs = errors
    for name in ("status_code", "body", "code", "param", "type"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.response.status_code == theirs.response.status_code == 404


def test_a_passed_through_resources_error_is_the_official_kind_too(ref_server: Any, drive: Drive) -> None:
    client = drive.client(base_url=ref_server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        drive(client.moderations.create(input="x"))
    assert isinstance(info.value, llmclient.NotFoundError) and info.value.trace_id


def _run(code: str, **env: str) -> dict[str, Any]:
    """``code`` in a fresh interpreter; it prints one JSON object, returned."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, **env}, check=False)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_openai_imported_after_llmclient_makes_existing_clients_the_official_kind() -> None:
    seen = _run("""
        import json, sys
        import llmclient
        before = "openai" in sys.modules
        client = llmclient.OpenAI(api_key="k")
        err = llmclient.NotFoundError  # the class exists before openai does
        import openai
        print(json.dumps({
            "imported_by_llmclient": before,
            "client": isinstance(client, openai.OpenAI),
            "async": issubclass(llmclient.AsyncOpenAI, openai.AsyncOpenAI),
            "error": issubclass(err, openai.NotFoundError) and issubclass(err, openai.APIStatusError),
            "loader": type(openai.__spec__.loader).__module__,
            # the hook stays for the other official package only (anthropic, not imported here)
            "hook_left": [sorted(f.pending) for f in sys.meta_path if type(f).__module__ == "llmclient._official"],
            "types": llmclient.types.chat.ChatCompletion is openai.types.chat.ChatCompletion,
        }))
    """)
    assert seen == {"imported_by_llmclient": False, "client": True, "async": True, "error": True,
                    "loader": seen["loader"], "hook_left": [["anthropic"]], "types": True}
    assert not seen["loader"].startswith("llmclient")  # the hook put the real loader back


def test_llmclient_types_is_an_attribute_after_a_plain_import() -> None:
    seen = _run("""
        import json
        import llmclient as openai
        print(json.dumps({"name": openai.types.chat.ChatCompletion.__name__}))
    """)
    assert seen == {"name": "ChatCompletion"}


def test_without_openai_nothing_changes(ref_server: Any) -> None:
    """``import openai`` fails (as if not installed): no official class anywhere in the
    hierarchy, the calls and their errors as before."""
    seen = _run(f"""
        import json, sys
        sys.modules["openai"] = None  # `import openai` now raises ImportError
        import llmclient
        client = llmclient.OpenAI(api_key="k", base_url={ref_server.base_url!r}, max_retries=0)
        answer = client.chat.completions.create(model={MODEL!r}, max_tokens=3,
                                                messages=[{{"role": "user", "content": "hi"}}])
        hi = [{{"role": "user", "content": "hi"}}]
        try:
            client.chat.completions.create(model="no-such-model", messages=hi)
        except llmclient.NotFoundError as exc:
            err = exc
        try:
            client.chat.completions.create(model={MODEL!r}, messages=hi, temprature=0.2, max_tokens=2)
            typo = "sent"
        except llmclient.APIStatusError:  # the server's answer to it
            typo = "sent"
        except TypeError:
            typo = "TypeError"
        modules = {{k.__module__.split(".")[0] for c in (llmclient.OpenAI, llmclient.AsyncOpenAI, type(err),
                                                       llmclient.LengthFinishReasonError) for k in c.__mro__}}
        print(json.dumps({{"modules": sorted(modules), "answer": type(answer).__module__,
                          "status": err.status_code, "typo": typo}}))
    """)
    assert seen["modules"] == ["builtins", "llmclient"]
    assert seen["answer"].startswith("llmclient") and seen["status"] == 404
    assert seen["typo"] == "sent"  # without openai there is no signature to check against: as before


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "http://127.0.0.1:9/", "http://127.0.0.1:9/v1",
                                 "https://host/api/v1/", "http://127.0.0.1:9/v1?api-version=1", "https://host/v1//"])
def test_base_url_is_kept_as_the_official_clients_keep_it(url: str) -> None:
    """A bare origin stays as written (its path is "/"), any other path gets one trailing slash
    before the query, as the official clients' ``_enforce_trailing_slash`` does (openai 3.x;
    anthropic 2.17 puts it after the query, which llmclient does not copy)."""
    assert str(llmclient.OpenAI(base_url=url, api_key="k").base_url) == \
        str(openai.OpenAI(base_url=url, api_key="k").base_url)
    anthropic = pytest.importorskip("anthropic")
    if "?" not in url:
        assert str(llmclient.Anthropic(base_url=url, api_key="k").base_url) == \
            str(anthropic.Anthropic(base_url=url, api_key="k").base_url)
