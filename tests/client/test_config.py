"""A client's settings are one checked Config (llmclient/_config.py): a bad value raises at
construction, in with_options and per call alike, naming the option and what it takes; copies
share what the client learned about servers, other clients do not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import llmclient
from llmclient._config import OPTION_NAMES, Config
from tests._both import Drive

BASE = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(("option", "value", "says"), [
    ("wire", "protbuf", "wire must be one of 'json', 'protobuf', 'auto'"),
    ("cache", "memroy", "cache must be True, 'memory', 'sqlite:///path/to/cache.db'"),
    ("stream_idle_timeout", -3, "stream_idle_timeout must be a positive number of seconds or None"),
    ("max_retries", "three", "max_retries must be a non-negative int"),
    ("max_retries", -1, "max_retries must be a non-negative int"),
    ("hedge", "yes", "hedge must be True, False or llmclient.HedgeConfig"),
    ("pacing", "sometimes", "pacing must be 'auto', True or False"),
    ("concurrency", "lots", "concurrency must be None, 'adaptive', True"),
    ("stream_resume", "always", "stream_resume must be one of 'auto', 'continue'"),
    ("priority", "urgent", "priority must be 'low', 'normal' or None"),
    ("http2", None, "http2 must be True or False"),
    ("verify", 3, "verify must be True, False, a CA bundle path or an ssl.SSLContext"),
    ("base_url", "ftp://example/v1", "base_url must be an http:// or https:// URL"),
    ("images", 3.5, "images= must be None, True, False, a target name"),
    ("prefetch", 7, "prefetch must be None, True, False, 'prefix'"),
    ("retry_budget", "lots", "retry_budget must be True, False, None or llmclient.RetryBudget"),
    ("max_connection_age", -5, "max_connection_age must be a number of seconds > 0, or None"),
])
def test_a_bad_setting_raises_at_construction_in_with_options_and_per_call(option: str, value: Any,
                                                                           says: str) -> None:
    with pytest.raises((ValueError, TypeError), match=says.replace("(", r"\(").replace(".", r"\.")):
        llmclient.OpenAI(**{"api_key": "k", "base_url": BASE, option: value})
    ok = llmclient.OpenAI(api_key="k", base_url=BASE)
    if value is not None:  # with_options(x=None) leaves x as it is, as the official copy() does
        with pytest.raises((ValueError, TypeError), match=option):
            ok.with_options(**{option: value})
    if option in {f.name for f in dataclasses.fields(llmclient.CallOptions)}:
        with pytest.raises((ValueError, TypeError), match=option):  # nothing is sent: port 9 refuses
            ok.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], **{option: value})


def test_an_unknown_keyword_names_the_closest_one() -> None:
    with pytest.raises(TypeError, match="did you mean 'api_key'"):
        llmclient.OpenAI(api_kye="k", base_url=BASE)  # type: ignore[call-arg]
    official_only = llmclient.OpenAI(api_key="k", base_url=BASE, webhook_secret="w")
    assert official_only._config.official["webhook_secret"] == "w"


def test_with_options_is_the_config_with_changes() -> None:
    client = llmclient.OpenAI(api_key="k", base_url=BASE, wire="auto", hedge=True, stream_idle_timeout=7.0)
    copy = client.with_options(timeout=3.0, stream_idle_timeout=None)
    assert copy._config.calls.wire == "auto" and copy._config.calls.hedge is not None
    assert copy._config.calls.stream_idle_timeout is None and copy.timeout.read == 3.0
    assert client._config.calls.stream_idle_timeout == 7.0  # frozen: the original is unchanged
    assert isinstance(copy._config, Config) and copy._config.replace() == copy._config
    assert set(copy._config.options()) >= OPTION_NAMES


def test_what_a_client_learned_is_its_own_and_its_copies(drive: Drive) -> None:
    client = drive.client(api_key="k", base_url=BASE)
    record = client._ctx.knowledge.server(client._base, client._scope)
    record.cache_key = False  # as a 400 naming prompt_cache_key leaves it
    assert client.with_options(timeout=5)._ctx.knowledge is client._ctx.knowledge
    other = drive.client(api_key="k", base_url=BASE)
    assert other._ctx.knowledge.server(other._base, other._scope).cache_key is True
    tenant = client.with_options(api_key="another")
    assert tenant._ctx.knowledge.server(tenant._base, tenant._scope).cache_key is True  # another scope


def test_making_a_client_imports_neither_openai_nor_asyncio() -> None:
    """The official client is read only for a keyword llmclient does not know (its signature);
    a sync client never loads asyncio or the async client's layers."""
    import subprocess
    import sys

    code = ("import sys, llmclient\n"
            "c = llmclient.OpenAI(api_key='k', base_url='http://127.0.0.1:9/v1', hedge=True, cache=True)\n"
            "c.with_options(timeout=3)\n"
            "print(sorted(m for m in ('openai', 'asyncio', 'llmclient.layers._async.chain', 'llmclient._client_async')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
