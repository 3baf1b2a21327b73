from __future__ import annotations

import pytest

from llmclient.cache import CacheOptions, cache_policy

MSG = [{"role": "user", "content": "hi"}]


def test_temperature_zero_is_cached() -> None:
    d = cache_policy({"messages": MSG, "temperature": 0})
    assert d.read and d.write


def test_seed_is_cached_even_with_temperature() -> None:
    assert cache_policy({"messages": MSG, "temperature": 0.8, "seed": 7}).read


@pytest.mark.parametrize("body", [{"messages": MSG, "temperature": 0.7}, {"messages": MSG}])
def test_sampling_is_not_cached_by_default(body: dict[str, object]) -> None:
    d = cache_policy(body)
    assert not d.read and not d.write
    assert "cache=True" in d.reason


def test_several_choices_are_not_cached_by_default() -> None:
    assert not cache_policy({"messages": MSG, "temperature": 0, "n": 3}).write


def test_opt_in_caches_sampling() -> None:
    assert cache_policy({"messages": MSG, "temperature": 1.2}, True).read
    d = cache_policy({"messages": MSG, "temperature": 1.2}, CacheOptions(force=True, ttl=5))
    assert d.read and d.ttl == 5


def test_disabled_and_refresh() -> None:
    body = {"messages": MSG, "temperature": 0}
    off = cache_policy(body, False)
    assert not off.read and not off.write
    refresh = cache_policy(body, CacheOptions(refresh=True, namespace="ns1"))
    assert not refresh.read and refresh.write and refresh.namespace == "ns1"


def test_embeddings_are_deterministic() -> None:
    assert cache_policy({"input": "x", "model": "e"}, None, "embeddings").read


def test_unknown_endpoint_is_bypassed() -> None:
    assert not cache_policy({"temperature": 0}, None, "images.generate").write


def test_bad_options_are_rejected() -> None:
    with pytest.raises(TypeError, match="cache="):
        cache_policy({"temperature": 0}, "yes")
    with pytest.raises(ValueError, match="ttl"):
        CacheOptions(ttl=0)
    with pytest.raises(ValueError, match="namespace"):
        CacheOptions(namespace="a:b")
