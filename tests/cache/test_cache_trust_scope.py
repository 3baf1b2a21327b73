"""Credential scope from what is sent: no cached or prefetched answer crosses tenants.

The probe: two tenants whose credential travels in a header (``default_headers``,
``extra_headers``, Azure's ``api-key``, ``x-api-key``, ``Cookie``, ``proxy-authorization``)
with the same placeholder ``api_key`` shared cache entries, and prefetched answers. Checked
against the live reference server with real SQLite and real Redis, through ``OpenAI`` and
``AsyncOpenAI`` (``drive``: each client test runs on both), plus a property test over every
header form.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmclient import OpenAI
from llmclient.cache import ResponseCache
from llmclient.features.prefetch import SpeculationConfig
from llmclient.pipeline.call import SCOPE_HEADERS, credential_scope
from llmclient.speculative import BudgetConfig
from tests._both import Drive

MODEL = "sim-zero"
PLACEHOLDER = "unused"  # the api_key gateways ignore when the credential is a header
ROOMY = BudgetConfig(max_in_flight=4, max_load_share=4.0, burst=8.0, max_candidates=3)

# Each way a credential reaches the wire, as (client kwargs, per-call kwargs) for a secret.
FORMS: dict[str, Callable[[str], tuple[dict[str, Any], dict[str, Any]]]] = {
    "api_key": lambda s: ({"api_key": s}, {}),
    "default Authorization": lambda s: ({"default_headers": {"Authorization": f"Bearer {s}"}}, {}),
    "extra Authorization": lambda s: ({}, {"extra_headers": {"Authorization": f"Bearer {s}"}}),
    "azure api-key": lambda s: ({"default_headers": {"api-key": s}}, {}),
    "extra api-key": lambda s: ({}, {"extra_headers": {"Api-Key": s}}),
    "x-api-key": lambda s: ({"default_headers": {"x-api-key": s}}, {}),
    "extra x-api-key": lambda s: ({}, {"extra_headers": {"X-API-Key": s}}),
    "cookie": lambda s: ({"default_headers": {"Cookie": f"session={s}"}}, {}),
    "proxy-authorization": lambda s: ({"default_headers": {"Proxy-Authorization": f"Basic {s}"}}, {}),
    "organization": lambda s: ({"organization": s}, {}),
    "project": lambda s: ({"project": s}, {}),
    "extra organization": lambda s: ({}, {"extra_headers": {"OpenAI-Organization": s}}),
}


def question() -> list[dict[str, str]]:
    return [{"role": "user", "content": f"classify {uuid.uuid4().hex}"}]


def wire_credentials(call: Any) -> dict[str, str]:
    return {k: v for k, v in call.headers.items() if k in SCOPE_HEADERS}


def key_for(form: str, secret: str, cache: ResponseCache, body: dict[str, Any]) -> tuple[str, dict[str, str]]:
    client_kw, call_kw = FORMS[form](secret)
    client_kw.setdefault("api_key", PLACEHOLDER)
    client = OpenAI(base_url="http://127.0.0.1:9/v1", **client_kw)
    call = client._build_call("POST", "/chat/completions", dict(body), **call_kw)
    key = cache.key_for(call)
    assert key is not None
    if len(secret) >= 12:  # a short one is found in any hex string by chance
        assert secret not in key and secret not in call.scope  # hashed, never in clear
    return key, wire_credentials(call)


# -- the property: keys split exactly where the credentials on the wire differ ---------------

secrets_ = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=24)


def test_keys_and_scopes_never_hold_the_secret() -> None:
    cache = ResponseCache("memory")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    for form in FORMS:
        key_for(form, "sk-live-0123456789abcdef", cache, body)


@settings(max_examples=300, deadline=None)
@given(form_a=st.sampled_from(sorted(FORMS)), form_b=st.sampled_from(sorted(FORMS)),
       secret_a=secrets_, secret_b=secrets_)
def test_no_cache_key_collides_across_credential_scopes(form_a: str, form_b: str, secret_a: str,
                                                        secret_b: str) -> None:
    cache = ResponseCache("memory")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    key_a, sent_a = key_for(form_a, secret_a, cache, body)
    key_b, sent_b = key_for(form_b, secret_b, cache, body)
    assert (key_a == key_b) == (sent_a == sent_b)


@settings(max_examples=200, deadline=None)
@given(headers=st.dictionaries(st.sampled_from(sorted(SCOPE_HEADERS)), secrets_, max_size=4),
       other=st.dictionaries(st.sampled_from(sorted(SCOPE_HEADERS)), secrets_, max_size=4))
def test_scope_is_a_function_of_the_credential_headers_and_base_url(
        headers: dict[str, str], other: dict[str, str]) -> None:
    base = "https://gw.example/v1"
    noise = {"x-request-id": uuid.uuid4().hex, "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    assert credential_scope({**headers, **noise}, base) == credential_scope(headers, base)
    assert (credential_scope(headers, base) == credential_scope(other, base)) == (headers == other)
    assert credential_scope(headers, base) != credential_scope(headers, "https://other.example/v1")
    assert credential_scope(headers, base) != credential_scope(headers, "https://u:p@gw.example/v1")


def test_http_client_auth_is_part_of_the_scope() -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    scopes = []
    for auth in (None, httpx.BasicAuth("alice", "pw"), httpx.BasicAuth("bob", "pw")):
        with httpx.Client(auth=auth) as http_client:
            client = OpenAI(base_url="http://127.0.0.1:9/v1", api_key=PLACEHOLDER, http_client=http_client)
            scopes.append(client._build_call("POST", "/chat/completions", body).scope)
    assert len(set(scopes)) == 3


# -- against the reference server, real SQLite and real Redis --------------------------------


@pytest.fixture(params=["sqlite", "redis"])
def shared_cache(request: pytest.FixtureRequest, tmp_path: Path) -> ResponseCache:
    if request.param == "sqlite":
        return ResponseCache(f"sqlite://{tmp_path}/shared.db")
    return ResponseCache(request.getfixturevalue("redis_backend"))


def tenant(drive: Drive, ref_server: Any, form: str, secret: str, cache: Any) -> tuple[Any, dict[str, Any]]:
    client_kw, call_kw = FORMS[form](secret)
    client_kw.setdefault("api_key", PLACEHOLDER)
    return drive.client(base_url=ref_server.base_url, cache=cache, **client_kw), call_kw


HEADER_FORMS = [f for f in FORMS if f not in ("api_key", "organization", "project")]


@pytest.mark.parametrize("form", HEADER_FORMS)
def test_second_tenant_with_header_credentials_misses(drive: Drive, ref_server: Any, form: str,
                                                      shared_cache: ResponseCache) -> None:
    messages = question()
    args = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 4}
    alice, alice_kw = tenant(drive, ref_server, form, "alice-secret", shared_cache)
    bob, bob_kw = tenant(drive, ref_server, form, "bob-secret", shared_cache)
    first = drive(alice.chat.completions.create(**args, **alice_kw))
    again = drive(alice.chat.completions.create(**args, **alice_kw))
    other = drive(bob.chat.completions.create(**args, **bob_kw))
    assert (first.timings.cache, again.timings.cache) == ("miss", "hit")
    assert other.timings.cache == "miss" and other.id != first.id


# -- prefetch: a follow-up fetched for one tenant never answers another ----------------------


def _followup(messages: list[dict[str, Any]], answer: Any) -> list[dict[str, Any]]:
    return [*messages, {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "continue"}]


def _settle(drive: Drive, client: Any) -> None:
    """Wait until the prefetch was sent and has landed (the async client's loop runs meanwhile)."""
    end = time.monotonic() + 15
    while client.speculation_stats()["in_flight"] or not client.speculation_stats()["sent"]:
        assert time.monotonic() < end, "prefetch did not settle"
        drive.sleep(0.02)


def test_prefetched_followup_is_not_served_to_another_tenant_per_call(
        drive: Drive, ref_server: Any, shared_cache: ResponseCache) -> None:
    """One app client, each user's credential per call in extra_headers (a multi-tenant
    gateway): the prefetch made for alice must serve alice only."""
    client = drive.client(base_url=ref_server.base_url, api_key=PLACEHOLDER, cache=shared_cache,
                          speculation=SpeculationConfig(budget=ROOMY))
    alice = {"extra_headers": {"Authorization": "Bearer alice-secret"}}
    bob = {"extra_headers": {"Authorization": "Bearer bob-secret"}}
    messages = question()
    first = drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                 max_tokens=8, prefetch=["continue"], **alice))
    _settle(drive, client)
    assert client.speculation_stats()["sent"] == 1
    nxt = _followup(messages, first)
    for_bob = drive(client.chat.completions.create(model=MODEL, messages=nxt, temperature=0,
                                                   max_tokens=8, **bob))
    for_alice = drive(client.chat.completions.create(model=MODEL, messages=nxt, temperature=0,
                                                     max_tokens=8, **alice))
    assert for_bob.timings.cache == "miss" and not for_bob.timings.prefetch_joined
    assert for_alice.timings.cache == "hit" and for_alice.timings.prefetch_joined


def test_prefetched_followup_is_not_served_to_another_tenants_client(
        drive: Drive, ref_server: Any, shared_cache: ResponseCache) -> None:
    """Two clients on one shared cache, each with its credential in default_headers: alice's
    prefetch must not answer bob."""
    alice = drive.client(base_url=ref_server.base_url, api_key=PLACEHOLDER, cache=shared_cache,
                         default_headers={"api-key": "alice-secret"},
                         speculation=SpeculationConfig(budget=ROOMY))
    bob = drive.client(base_url=ref_server.base_url, api_key=PLACEHOLDER, cache=shared_cache,
                       default_headers={"api-key": "bob-secret"})
    messages = question()
    first = drive(alice.chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                max_tokens=8, prefetch=["continue"]))
    _settle(drive, alice)
    nxt = _followup(messages, first)
    for_bob = drive(bob.chat.completions.create(model=MODEL, messages=nxt, temperature=0, max_tokens=8))
    for_alice = drive(alice.chat.completions.create(model=MODEL, messages=nxt, temperature=0,
                                                    max_tokens=8))
    assert for_bob.timings.cache == "miss"
    assert for_alice.timings.cache == "hit" and for_alice.timings.prefetch_joined
