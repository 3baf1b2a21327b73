"""The derived prompt_cache_key (features/route/cache_key), as pure functions: stable for a
conversation's opening, different per conversation, never for a call that carries its own key
or ``user``, never the prompt's text; and which error answers say the origin refuses it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llmclient.features.route.cache_key import derive, opening, refused, wanted
from tests.route._common import MODEL, SYSTEM, chat

SECRET = "ab" * 32
CHAT = "/chat/completions"


def _body(session: str, turns: list[str]) -> dict[str, object]:
    return {"model": MODEL, "messages": chat(session, turns)}


def test_a_conversations_turns_share_one_key() -> None:
    first = derive(CHAT, _body("s1", ["hello"]), SECRET)
    later = derive(CHAT, _body("s1", ["hello", "hi, how can I help?", "my order is late"]), SECRET)
    assert first is not None and first == later
    assert first.startswith("llmc-") and len(first) == 5 + 32


def test_conversations_sharing_a_system_prompt_get_different_keys() -> None:
    keys = {derive(CHAT, _body(f"s{i}", ["hello"]), SECRET) for i in range(50)}
    assert len(keys) == 50


def test_a_system_prompt_longer_than_the_hashed_text_still_tells_conversations_apart() -> None:
    long_system = "You are a careful assistant. " * 2000  # ~58 KiB
    keys = {derive(CHAT, {"model": MODEL, "messages": [{"role": "system", "content": long_system},
                                                       {"role": "user", "content": f"question {i}"}]}, SECRET)
            for i in range(5)}
    assert len(keys) == 5


def test_the_key_is_keyed_by_the_secret_and_never_holds_the_text() -> None:
    body = _body("s1", ["hello"])
    a, b = derive(CHAT, body, SECRET), derive(CHAT, body, "cd" * 32)
    assert a is not None and b is not None and a != b
    assert "hello" not in a and "support" not in a


def test_no_key_where_the_app_said_which_calls_belong_together() -> None:
    body = _body("s1", ["hello"])
    assert derive(CHAT, {**body, "prompt_cache_key": "mine"}, SECRET) is None
    assert derive(CHAT, {**body, "user": "u-1"}, SECRET) is None
    assert derive(CHAT, {**body, "prompt_cache_key": ""}, SECRET) is None  # set, even empty


def test_only_chat_and_responses_with_a_prompt() -> None:
    assert derive("/embeddings", {"model": "e", "input": "x"}, SECRET) is None
    assert derive("/completions", {"model": MODEL, "prompt": "x"}, SECRET) is None
    assert derive(CHAT, None, SECRET) is None
    assert derive(CHAT, {"model": MODEL}, SECRET) is None
    assert derive("/responses", {"model": MODEL, "input": "hi", "instructions": SYSTEM}, SECRET) is not None
    # the conversation lives on the server: later turns share nothing to hash
    assert derive("/responses", {"model": MODEL, "input": "hi", "previous_response_id": "resp_1"}, SECRET) is None


def test_responses_input_items_up_to_the_first_user_item() -> None:
    items = [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "q1"},
             {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    head = opening({"model": MODEL, "input": items})
    assert head is not None and head["input"] == items[:2]
    one = derive("/responses", {"model": MODEL, "input": items[:2]}, SECRET)
    assert one == derive("/responses", {"model": MODEL, "input": items}, SECRET)


def test_refused_is_a_400_naming_the_field() -> None:
    assert refused(400, b'{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key",'
                        b'"param":"prompt_cache_key"}}')
    assert not refused(400, b'{"error":{"message":"bad temperature","param":"temperature"}}')
    assert refused(422, b'{"detail":[{"type":"extra_forbidden","loc":["body","prompt_cache_key"]}]}')
    assert not refused(500, b"prompt_cache_key")
    assert not refused(429, b"prompt_cache_key")


def test_by_default_only_openais_origin_is_sent_a_key() -> None:
    assert wanted(None, "https://api.openai.com/v1")
    assert wanted(None, "https://user:pw@API.openai.com:443/v1")
    assert not wanted(None, "http://127.0.0.1:8000/v1")
    assert not wanted(None, "https://api.openai.com.evil.example/v1")
    assert wanted(True, "http://127.0.0.1:8000/v1") and not wanted(False, "https://api.openai.com/v1")


@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=6),
       st.lists(st.text(max_size=40), max_size=6))
def test_later_turns_never_change_the_key(opening_turns: list[str], later: list[str]) -> None:
    first = _body("s", opening_turns[:1])
    grown = {"model": MODEL, "messages": [*first["messages"],  # type: ignore[misc]
                                          *({"role": "assistant" if n % 2 == 0 else "user", "content": t}
                                            for n, t in enumerate(later))]}
    assert derive(CHAT, first, SECRET) == derive(CHAT, grown, SECRET)
