"""Property: any JSON object, shaped like the API or not, survives the protobuf wire exactly."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmclient.wire import protobuf as P

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none() | st.booleans() | st.text(max_size=12)
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
f32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _spec_dicts(name: str, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    spec = P._spec(name)
    per_key: dict[str, st.SearchStrategy[Any]] = {}
    for key, alts in spec.by_key.items():
        options: list[st.SearchStrategy[Any]] = [json_values]
        for f in alts:
            sub = _sub_spec(name, f.name)
            if sub is not None and depth < 3:
                one = st.deferred(lambda s=sub: _spec_dicts(s, depth + 1))
                options += [one, st.lists(one, max_size=3)]
        if key == "embedding":
            options.append(st.lists(f32s, max_size=6))
            options.append(st.binary(min_size=1, max_size=12).map(lambda b: __import__("base64").b64encode(b).decode()))
        options.append(json_scalars)
        per_key[key] = st.one_of(*options)
    known = st.fixed_dictionaries({}, optional=per_key)
    unknown = st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: k not in per_key), json_values, max_size=2)
    return st.tuples(known, unknown).map(lambda t: {**t[1], **t[0]})


def _sub_spec(msg: str, field: str) -> str | None:
    desc = P._module().DESCRIPTOR.message_types_by_name[msg]
    fd = desc.fields_by_name[field]
    return fd.message_type.name if fd.message_type is not None else None


def _norm(v: Any) -> Any:
    """Equality as the JSON path sees it: 1 == 1.0 (a number in a double field), True != 1."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        return ("num", float(v) if abs(v) < 2**53 else v)
    if isinstance(v, list):
        return ("list", [_norm(x) for x in v])
    return ("dict", sorted((k, _norm(x)) for k, x in v.items()))


def _roundtrip(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    got_kind, out, _ = P.decode_body(P.encode_body(kind, body))
    assert got_kind == kind and out is not None
    return out


@SETTINGS
@given(_spec_dicts("ChatCompletionRequest"))
def test_chat_requests(body: dict[str, Any]) -> None:
    assert _norm(_roundtrip("chat_request", body)) == _norm(body)


@SETTINGS
@given(_spec_dicts("CompletionRequest") | _spec_dicts("EmbeddingRequest"))
def test_completion_and_embedding_requests(body: dict[str, Any]) -> None:
    kind = "completion_request" if set(body) & {"prompt", "best_of", "echo", "suffix"} else "embedding_request"
    if kind == "embedding_request" and set(body) - set(P._spec("EmbeddingRequest").by_key):
        kind = "completion_request"
    assert _norm(_roundtrip(kind, body)) == _norm(body)


@SETTINGS
@given(st.sampled_from(["chat_completion", "completion", "embeddings", "models", "model", "error"]), st.data())
def test_responses(kind: str, data: st.DataObject) -> None:
    body = data.draw(_spec_dicts(P._KIND_TYPES[kind]))
    out = _roundtrip(kind, body)
    if kind == "embeddings":  # float32 on the wire: compare at float32
        items = body.get("data")
        for item in items if isinstance(items, list) else []:
            vec = item.get("embedding") if isinstance(item, dict) else None
            if isinstance(vec, list) and vec and all(type(x) is float for x in vec):
                try:
                    item["embedding"] = [struct.unpack("<f", struct.pack("<f", x))[0] for x in vec]
                except OverflowError:
                    pass  # not a float32: travels exactly, as JSON
    assert _norm(out) == _norm(body)


@SETTINGS
@given(json_values.filter(lambda v: isinstance(v, dict)))
def test_any_object_as_json_kind(body: dict[str, Any]) -> None:
    assert _roundtrip("json", body) == body
