"""Replicas with prefix affinity on the Anthropic face (issue 45): ``Anthropic(base_url=[...])``
over real reference-server processes that keep a prefix cache and report it in Anthropic's
usage fields (``cache_read_input_tokens``). The routing key reads the Messages API's shape:
``system`` before the messages (tools, system, messages: the order Anthropic's prompt cache
hashes), ``metadata.user_id`` as the app's own key. Sync and async; assertions on counts and on
which replica served (``timings.replica``), never on time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

import llmclient
from llmclient.features.route.key import BLOCK_CHARS, route_key
from tests._both import Drive
from tests.conftest import RefServer, start_ref_server, stop_ref_server
from tests.route._common import dead_port

MODEL = "claude-haiku-4-5"
PROFILE = "h200-1b"  # prefix caching on, millisecond steps
SYSTEM = "You are the support assistant of a large hardware shop. Answer briefly. " * 12


def _body(system: Any, turns: list[str], **extra: Any) -> dict[str, Any]:
    messages = [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(turns)]
    return {"model": MODEL, "max_tokens": 8, "system": system, "messages": messages, **extra}


# -- the key, pure ------------------------------------------------------------------------------

def test_the_system_prompt_leads_the_key() -> None:
    turns = ["Where are the hammers?"]
    a = route_key("/v1/messages", _body(SYSTEM, turns))
    b = route_key("/v1/messages", _body("You sell garden furniture. " * 30, turns))
    assert a.blocks and b.blocks and a.blocks[0] != b.blocks[0] and a.ring != b.ring
    # the same system as text or as text blocks (with a cache_control marker) is the same prompt
    blocks = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert route_key("/v1/messages", _body(blocks, turns)) == a


def test_a_conversations_next_turn_extends_its_blocks() -> None:
    first = route_key("/v1/messages", _body(SYSTEM, ["Where are the hammers? " * 10]))
    later = route_key("/v1/messages", _body(SYSTEM, ["Where are the hammers? " * 10, "Aisle 4.", "And nails?"]))
    assert len(first.blocks) >= len(SYSTEM) // BLOCK_CHARS
    assert later.blocks[:len(first.blocks)] == first.blocks


def test_metadata_user_id_is_the_apps_own_key() -> None:
    a = route_key("/v1/messages", _body(SYSTEM, ["hi"], metadata={"user_id": "user-42"}))
    b = route_key("/v1/messages", _body("another prompt", ["bye"], metadata={"user_id": "user-42"}))
    assert a == b and a.ring is not None and a.blocks == ()
    assert route_key("/v1/messages", _body(SYSTEM, ["hi"], metadata={"user_id": "user-7"})) != a


# -- against real replicas ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def fleet() -> Iterator[list[RefServer]]:
    servers = [start_ref_server(profile=PROFILE) for _ in range(3)]
    yield servers
    for server in servers:
        stop_ref_server(server)


def _face(drive: Drive, urls: list[str], **kw: Any) -> Any:
    return drive.client(llmclient, face="Anthropic", base_url=urls, api_key="sk-ant-test", max_retries=0, **kw)


def test_a_conversation_stays_on_its_replica_and_reads_its_cache(drive: Drive, fleet: list[RefServer]) -> None:
    client = _face(drive, [s.url for s in fleet])
    system = [{"type": "text", "text": drive.kind + ": " + SYSTEM, "cache_control": {"type": "ephemeral"}}]
    turns: list[str] = []
    served, reads = [], []
    for n in range(4):
        turns.append(f"question {n} about tools " * 10)
        answer = drive(client.messages.create(**_body(system, turns)))
        assert isinstance(answer, anthropic.types.Message)
        served.append(answer.timings.replica)
        reads.append(answer.usage.cache_read_input_tokens)
        turns.append(answer.content[0].text if answer.content else "ok")
    assert len(set(served)) == 1 and served[0] in [s.url for s in fleet]
    # the first turn wrote the marked system prompt into that replica's cache; each later one read it
    assert reads[0] == 0 and all(r > 0 for r in reads[1:])
    stats = client.replica_stats()
    assert sum(r["served"] for r in stats) == 4 and all(r["in_flight"] == 0 for r in stats)


def test_a_stream_is_routed_with_its_conversation(drive: Drive, fleet: list[RefServer]) -> None:
    client = _face(drive, [s.url for s in fleet])
    body = _body(drive.kind + " stream: " + SYSTEM, ["Where are the saws? " * 8])
    whole = drive(client.messages.create(**body))
    stream = drive(client.messages.create(**body, stream=True))
    events = drive.iterate(stream)
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    assert stream.timings.replica == whole.timings.replica
    assert all(r["in_flight"] == 0 for r in client.replica_stats())


def test_a_dead_replica_fails_over_and_all_dead_is_anthropics_connection_error(
        drive: Drive, fleet: list[RefServer]) -> None:
    dead = f"http://127.0.0.1:{dead_port()}"
    client = _face(drive, [dead, fleet[0].url])
    for n in range(3):  # wherever the ring puts a conversation, it is answered
        answer = drive(client.messages.create(**_body(SYSTEM, [f"conversation {n} " * 20])))
        assert answer.timings.replica == fleet[0].url
    nobody = _face(drive, [dead, f"http://127.0.0.1:{dead_port()}"])
    with pytest.raises(anthropic.APIConnectionError) as caught:
        drive(nobody.messages.create(**_body(SYSTEM, ["hello"])))
    assert dead.split("//")[1] in str(caught.value)
