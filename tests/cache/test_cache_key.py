from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmclient.cache import KEY_PREFIX, cache_key, endpoint_for, scope_hash

BASE = "http://127.0.0.1:8000/v1"
SCOPE = scope_hash("sk-test", "org-1", "proj-1")


def body(**overrides: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hello"}],
        "temperature": 0,
    }
    out.update(overrides)
    return out


def key(b: dict[str, Any], **kw: Any) -> str:
    args: dict[str, Any] = {"base_url": BASE, "path": "/chat/completions", "body": b, "scope": SCOPE}
    args.update(kw)
    return cache_key(**args)


def test_key_is_versioned_prefix_plus_full_sha256() -> None:
    k = key(body())
    assert k.startswith(KEY_PREFIX)
    assert re.fullmatch(re.escape(KEY_PREFIX) + r"-:[0-9a-f]{64}", k)


def test_key_ignores_json_key_order() -> None:
    a = {"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "x"}]}
    b = {"messages": [{"content": "x", "role": "user"}], "temperature": 0, "model": "m"}
    assert key(a) == key(b)


def test_stream_and_stream_options_do_not_split_the_key() -> None:
    plain = key(body())
    assert key(body(stream=True)) == plain
    assert key(body(stream=True, stream_options={"include_usage": True})) == plain


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other"},
        {"messages": [{"role": "user", "content": "hello!"}]},
        {"temperature": 0.0001},
        {"seed": 1},
        {"max_tokens": 5},
        {"top_p": 0.5},
        {"stop": ["\n"]},
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
        {"response_format": {"type": "json_object"}},
        {"logit_bias": {"50256": -100}},
    ],
)
def test_every_answer_changing_field_splits_the_key(change: dict[str, Any]) -> None:
    assert key(body(**change)) != key(body())


def test_origin_endpoint_scope_namespace_and_query_split_the_key() -> None:
    base = key(body())
    assert key(body(), base_url="http://127.0.0.1:9000/v1") != base
    assert key(body(), path="/completions") != base
    assert key(body(), scope=scope_hash("sk-other", "org-1", "proj-1")) != base
    assert key(body(), namespace="v2") != base
    assert key(body(), query={"api-version": "2024-06-01"}) != base
    assert key(body(), base_url=BASE + "/") == base  # a trailing slash is the same origin


def test_scope_hash_covers_org_and_project_and_hides_the_key() -> None:
    s = scope_hash("sk-secret-123", "org", "proj")
    assert "sk-secret" not in s and len(s) == 64
    assert s != scope_hash("sk-secret-123", "org", "other")
    assert s != scope_hash("sk-secret-123", "other", "proj")


def _image_message(data: bytes) -> list[dict[str, Any]]:
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    return [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


def test_images_are_keyed_by_content() -> None:
    same_a = key(body(messages=_image_message(b"\x89PNG one")))
    same_b = key(body(messages=_image_message(b"\x89PNG one")))
    other = key(body(messages=_image_message(b"\x89PNG two")))
    assert same_a == same_b != other


def test_bad_namespace_and_unencodable_body_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="namespace"):
        key(body(), namespace="has space")
    with pytest.raises(TypeError, match="not JSON-encodable"):
        key(body(metadata={"x": object()}))
    with pytest.raises(TypeError, match="mapping"):
        cache_key(base_url=BASE, path="/chat/completions", body=[1], scope=SCOPE)  # type: ignore[arg-type]


def test_endpoint_names() -> None:
    assert endpoint_for("/chat/completions") == "chat.completions"
    assert endpoint_for("completions") == "completions"
    assert endpoint_for("/embeddings") == "embeddings"
    assert endpoint_for("/models") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=6))
def test_key_is_independent_of_insertion_order(extra: dict[str, Any]) -> None:
    forward = {**body(), **extra}
    backward = dict(reversed(list(forward.items())))
    assert key(forward) == key(backward)
