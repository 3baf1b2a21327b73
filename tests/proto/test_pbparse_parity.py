"""The compiled protobuf parser (llmclient/wire/_pbparse.c) against the pure-Python one.

``decode_body`` uses the compiled parser when it was built at install time; the Python parser
(``llmclient.wire.protobuf._parse_body``) is the reference and the fallback. Both must give the
same dicts, in the same key order, for every valid body, and the same error (type and message)
for every invalid one: valid bodies of every message type, random dicts of every type, mutations
of them (flipped, dropped and inserted bytes, truncations), random bytes, and the saved fuzz
corpus.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmclient.wire import protobuf as P

from . import samples as s
from .test_roundtrip_property import _spec_dicts

P._module()
try:
    from llmclient.wire import _pbparse
except ImportError:  # pragma: no cover - an install without a C compiler
    pytest.skip(
        "llmclient.wire._pbparse is not built (no C compiler at install): the pure-Python parser "
        "serves alone, and the rest of tests/proto covers it",
        allow_module_level=True,
    )

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CORPUS = Path(__file__).with_name("corpus")


def _outcome(parse: Any, data: bytes) -> tuple[str, str]:
    """('ok', repr of the result) or ('error', type: message). repr keeps key order and NaNs."""
    try:
        return "ok", repr(parse(data))
    except Exception as exc:  # the comparison is the point: any difference fails the test
        return "error", f"{type(exc).__name__}: {exc}"


def _same(data: bytes) -> tuple[str, str]:
    compiled, python = _outcome(_pbparse.parse_body, data), _outcome(P._parse_body, data)
    assert compiled == python, data
    return compiled


def _valid_bodies() -> list[bytes]:
    bodies = [P.encode_body("chat_request", s.CHAT_REQUEST)]
    bodies += [P.encode_body("completion_request", b) for b in s.COMPLETION_REQUESTS]
    bodies += [P.encode_body("embedding_request", b) for b in s.EMBEDDING_REQUESTS]
    for body in (s.CHAT_COMPLETION, s.COMPLETION, s.EMBEDDINGS, s.MODELS, s.MODEL, *s.ERRORS):
        bodies.append(P.encode_response(body))
    enc = P.StreamEncoder()
    for chunk in s.chunks(["Hi", " there", "!"]):
        framed = enc.encode(chunk)
        _, start = P._varint(framed, 0)
        bodies.append(framed[start:])  # header-inheriting chunks and token frames
    bodies.append(P.encode_body("json", {"anything": [1, None, {"x": 2.5}]}))
    bodies.append(P.encode_body("chat_completion", {"id": "x"}, dropped=["model", "created"]))
    return bodies


VALID = _valid_bodies()


def test_the_compiled_parser_is_the_one_in_use() -> None:
    assert P._parse_body_fn is _pbparse.parse_body


@pytest.mark.parametrize("i", range(len(VALID)))
def test_valid_bodies_parse_identically(i: int) -> None:
    kind, _ = _same(VALID[i])
    assert kind == "ok"


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.bin")), ids=lambda p: p.stem)
def test_corpus_bodies_parse_identically(path: Path) -> None:
    data = path.read_bytes()
    _same(data)
    _, start = P._varint(data, 0)
    if start > 0:
        _same(data[start:])  # the corpus holds framed streams: the first frame's body too


@SETTINGS
@given(st.sampled_from(sorted(P._KIND_TYPES)), st.data())
def test_random_bodies_of_every_type_parse_identically(kind: str, data: st.DataObject) -> None:
    body = data.draw(_spec_dicts(P._KIND_TYPES[kind]))
    assert _same(P.encode_body(kind, body))[0] == "ok"


@SETTINGS
@given(
    st.sampled_from(VALID),
    st.lists(
        st.tuples(st.sampled_from(["flip", "drop", "insert", "cut"]), st.integers(0, 4096),
                  st.integers(0, 255)),
        min_size=1, max_size=4,
    ),
)
def test_mutated_bodies_fail_identically(body: bytes, edits: list[tuple[str, int, int]]) -> None:
    data = bytearray(body)
    for op, pos, byte in edits:
        pos %= len(data) + 1
        if op == "flip" and pos < len(data):
            data[pos] ^= byte or 0x80
        elif op == "drop" and pos < len(data):
            del data[pos]
        elif op == "insert":
            data.insert(pos, byte)
        elif op == "cut":
            del data[pos:]
    _same(bytes(data))


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_fail_identically(data: bytes) -> None:
    _same(data)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"\x0a\x03\x21\x00\x00", "IndexError"),  # `temperature` (a double) cut by the end
        (b"\x22\x02\x7a\x05", "a field of ChatCompletion runs past"),  # packed `nulls` too long
        (b"\x22\x04\x7a\x01\x80\x01", "overruns its length"),  # its last varint past its end
        (b"\x22\x02\x78\x63", "unknown field number 99"),  # a null mark for no field
        (b"\x22\x0b" + b"\x80" * 10 + b"\x01", "longer than 10 bytes"),  # an 11-byte tag
        (b"\x22\x04\xa2\x06\x01\x00", "is not JSON"),  # `extra` that is not JSON
        (b"\x22\x05\xa2\x06\x02[]", "extra is not a JSON object"),
        (b"\x5a\x02[]", "Body.json is not a JSON object"),
        (b"\x22\x03\x0a\x01\xff", "UnicodeDecodeError"),  # invalid UTF-8 in a string field
        (b"\x22\x01\x0b", "wire type 3"),  # a group start tag
        (b"\x0a" + b"\xff" * 9 + b"\x01", "runs past the end of the body"),  # a 2**63+ length
    ],
)
def test_edge_cases_fail_identically(data: bytes, error: str) -> None:
    kind, got = _same(data)
    assert kind == "error" and error in got, got


def test_no_reference_leaks_on_success_or_error() -> None:
    bad = VALID[0][: len(VALID[0]) // 2]
    marks = P.encode_response(s.CHAT_COMPLETION)  # nulls, empty lists and nested messages
    for _ in range(200):  # warm every cache first
        _pbparse.parse_body(marks)
        _outcome(_pbparse.parse_body, bad)
    # Only what is allocated from this file's lines counts (the parser's allocations are
    # charged to the line that called it): threads other tests left running do not.
    here = [tracemalloc.Filter(True, __file__)]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(here)
        for _ in range(20_000):
            _pbparse.parse_body(marks)
            _outcome(_pbparse.parse_body, bad)
        after = tracemalloc.take_snapshot().filter_traces(here)
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # One leaked object per call would be >= 20,000 x ~50 bytes; allow allocator noise.
    assert grown < 100_000, grown


def test_pure_python_switch() -> None:
    code = (
        "from llmclient.wire import protobuf as P; P._module(); "
        "print(P._parse_body_fn is P._parse_body)"
    )
    env = {**os.environ, "LLMCLIENT_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"
