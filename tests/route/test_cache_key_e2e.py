"""The derived prompt_cache_key on the wire, against real reference-server processes: sent for
one origin when the app sets none, the same for a conversation's turns; the app's own key sent
as it is; opt-out per client and per call; an origin that refuses the field (a 400 naming it,
``--reject-fields``) gets the call once more without it and is never sent it again. Every test
runs on ``OpenAI`` and ``AsyncOpenAI``; the bodies are read by an ``http_client`` request hook."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import llmclient
from tests._both import Drive
from tests._sent import Sent
from tests.conftest import RefServer, start_ref_server, stop_ref_server
from tests.route._common import MODEL, chat


@pytest.fixture(scope="module")
def strict() -> Iterator[RefServer]:
    server = start_ref_server("--reject-fields", "prompt_cache_key")
    yield server
    stop_ref_server(server)


def _client(drive: Drive, server: RefServer, sent: Sent, **kw: Any) -> Any:
    """A client for ``server`` that derives keys (by default only api.openai.com is sent one)."""
    return sent.client(drive, server.base_url, **{"auto_cache_key": True, **kw})


def _ask(drive: Drive, client: Any, session: str, turns: list[str], **kw: Any) -> Any:
    return drive(client.chat.completions.create(model=MODEL, messages=chat(session, turns), max_tokens=4, **kw))


def test_a_derived_key_per_conversation(drive: Drive, ref_server: RefServer) -> None:
    sent = Sent()
    client = _client(drive, ref_server, sent)
    a1 = _ask(drive, client, "s1", ["hello"])
    _ask(drive, client, "s1", ["hello", "hi there", "where is my order?"])
    _ask(drive, client, "s2", ["hello"])
    stream = drive(client.chat.completions.create(model=MODEL, messages=chat("s1", ["hello"]), max_tokens=4,
                                                  stream=True))
    drive.iterate(stream)
    k1, k1_later, k2, k1_stream = sent.field("prompt_cache_key")
    assert k1 is not None and k1.startswith("llmc-")
    assert k1 == k1_later == k1_stream and k2 is not None and k2 != k1
    assert a1.timings.cache_key == k1


def test_the_apps_own_key_or_user_is_left_alone(drive: Drive, ref_server: RefServer) -> None:
    sent = Sent()
    client = _client(drive, ref_server, sent)
    mine = _ask(drive, client, "s1", ["hello"], prompt_cache_key="mine")
    _ask(drive, client, "s1", ["hello"], user="u-1")
    assert sent.field("prompt_cache_key") == ["mine", None]
    assert mine.timings.cache_key is None


def test_opt_out_per_client_and_per_call(drive: Drive, ref_server: RefServer) -> None:
    sent = Sent()
    client = _client(drive, ref_server, sent, auto_cache_key=False)
    _ask(drive, client, "s1", ["hello"])
    _ask(drive, client, "s1", ["hello"], auto_cache_key=True)
    on = _client(drive, ref_server, sent)
    _ask(drive, on, "s1", ["hello"], auto_cache_key=False)
    default = _client(drive, ref_server, sent, auto_cache_key=None)  # a self-hosted origin: none
    _ask(drive, default, "s1", ["hello"])
    assert sent.field("prompt_cache_key")[0] is None and sent.field("prompt_cache_key")[1] is not None and sent.field("prompt_cache_key")[2] is None and sent.field("prompt_cache_key")[3] is None
    assert all("auto_cache_key" not in b for b in sent.bodies)
    assert client.with_options(timeout=5)._options.auto_cache_key is False  # a copy keeps it
    with pytest.raises(ValueError, match="auto_cache_key"):
        drive.client(api_key="k", base_url=ref_server.base_url, auto_cache_key="yes")


def test_an_origin_that_refuses_the_field_is_sent_the_call_again_without_it(drive: Drive, strict: RefServer) -> None:
    sent = Sent()
    client = _client(drive, strict, sent)
    first = _ask(drive, client, "s1", ["hello"])  # 400 naming the field, then once more without it
    assert first.choices[0].message.content
    assert first.timings.cache_key is None and first.timings.retries == 1
    _ask(drive, client, "s2", ["hello"])  # learned: sent once, without the field
    stream = drive(client.chat.completions.create(model=MODEL, messages=chat("s3", ["hi"]), max_tokens=4,
                                                  stream=True))
    assert drive.iterate(stream)
    assert [k is not None for k in sent.field("prompt_cache_key")] == [True, False, False, False]
    # the app's own key is the app's business: the 400 is raised, not worked around
    with pytest.raises(llmclient.BadRequestError, match="prompt_cache_key"):
        _ask(drive, client, "s1", ["hello"], prompt_cache_key="mine")


def test_responses_carry_it_and_the_server_echoes_it(drive: Drive, ref_server: RefServer) -> None:
    sent = Sent()
    client = _client(drive, ref_server, sent)
    answer = drive(client.responses.create(model=MODEL, input="hello", instructions="be brief", max_output_tokens=16))
    key = sent.field("prompt_cache_key")[0]
    assert key is not None and answer.timings.cache_key == key
    assert getattr(answer, "prompt_cache_key", None) == key


def test_several_replicas_get_no_derived_key(drive: Drive, ref_server: RefServer, strict: RefServer) -> None:
    sent = Sent()
    client = sent.client(drive, [ref_server.base_url, strict.base_url])
    for n in range(6):
        _ask(drive, client, f"s{n}", ["hello"])
    assert sent.field("prompt_cache_key") == [None] * 6  # routed by the prefix hash itself (features/route/key)


def test_the_reference_server_checks_the_field(ref_server: RefServer, strict: RefServer) -> None:
    import httpx

    body = {"model": MODEL, "messages": chat("s1", ["hello"]), "max_tokens": 2}
    bad = httpx.post(ref_server.base_url + "/chat/completions", json={**body, "prompt_cache_key": 5}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "prompt_cache_key"
    good = httpx.post(ref_server.base_url + "/chat/completions", json={**body, "prompt_cache_key": "k"}, timeout=10)
    assert good.status_code == 200
    refused = httpx.post(strict.base_url + "/chat/completions", json={**body, "prompt_cache_key": "k"}, timeout=10)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "prompt_cache_key"
    assert httpx.post(strict.base_url + "/chat/completions", json=body, timeout=10).status_code == 200
