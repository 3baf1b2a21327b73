"""The protobuf schema glue: dicts <-> ``llmclient.v1`` messages, mapped by hand from tables
built once from the descriptors (``_build_specs``), and the pure-Python wire parser
(``_parse``), the reference for its compiled twin ``_pbparse.c``. The codec that uses them
(bodies, stream frames, negotiation) is ``protobuf.py``; its docstring says why the mapping is
hand-made and lossless.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from .._errors import MalformedResponseError
from .codec import float32_list

# Fields that carry a JSON key other than their own name (several fields may share one key:
# the first, by field number, whose type fits the value carries it).
ALIASES: Final[Mapping[tuple[str, str], str]] = {
    ("ChatMessage", "content_parts"): "content",
    ("ChatMessage", "content_json"): "content",
    ("ChatCompletionRequest", "stop_list"): "stop",
    ("ChatCompletionRequest", "stop_json"): "stop",
    ("CompletionRequest", "prompt_list"): "prompt",
    ("CompletionRequest", "prompt_tokens"): "prompt",
    ("CompletionRequest", "prompt_json"): "prompt",
    ("CompletionRequest", "stop_list"): "stop",
    ("CompletionRequest", "stop_json"): "stop",
    ("EmbeddingRequest", "input_list"): "input",
    ("EmbeddingRequest", "input_tokens"): "input",
    ("EmbeddingRequest", "input_json"): "input",
    ("Embedding", "embedding_f32"): "embedding",
    ("Embedding", "embedding_base64"): "embedding",
    ("ErrorDetail", "code_int"): "code",
}
# bytes fields that hold raw bytes shown in JSON as base64, not a JSON value.
_BASE64_FIELDS: Final = frozenset({("Embedding", "embedding_base64")})
# bytes fields that hold a list of floats as little-endian float32s.
_FLOAT32_FIELDS: Final = frozenset({("Embedding", "embedding_f32")})
_NULLS, _EXTRA, _EMPTY = 15, 100, 101

_MISS: Final = object()  # a value that does not fit a field
_EMPTY_LIST: Final = object()  # [] for a repeated field: sent as an `empty` mark

_Enc = Callable[[Any], Any]
_Dec = Callable[[Any], Any]


# --------------------------------------------------------------------------- mapping tables


class _Field:
    __slots__ = ("dec", "enc", "key", "name", "number")

    def __init__(self, key: str, name: str, number: int, enc: _Enc, dec: _Dec) -> None:
        self.key, self.name, self.number, self.enc, self.dec = key, name, number, enc, dec


class _Spec:
    """How one message type maps to a dict: fields by JSON key (alternatives) and by number."""

    __slots__ = ("by_key", "by_number", "cls", "low", "mark_keys", "name", "plain", "tags")

    def __init__(self, name: str, cls: Any) -> None:
        self.name = name
        self.cls = cls
        self.by_key: dict[str, tuple[_Field, ...]] = {}
        self.by_number: dict[int, _Field] = {}
        # JSON key -> the one Python type that goes into the field of the same name as is.
        self.plain: dict[str, type] = {}
        # Wire tag (field number << 3 | wire type) -> (JSON key, _K_* kind, aux): the decoder.
        self.tags: dict[int, tuple[str, int, Any]] = {}
        # `tags` again as a list indexed by tag, for one-byte tags (field numbers < 16): the
        # compiled parser's table (llmclient/wire/_pbparse.c); None where no field is.
        self.low: list[tuple[str, int, Any] | None] = []
        # Field number -> JSON key, for the numbers a null/empty mark may name.
        self.mark_keys: dict[int, str] = {}


_specs: dict[str, _Spec] = {}  # message name -> its mapping, built once by _build_specs




def _build_specs(pb: Any) -> None:
    for name in pb.DESCRIPTOR.message_types_by_name:
        _specs[name] = _Spec(name, getattr(pb, name))
    for name, desc in pb.DESCRIPTOR.message_types_by_name.items():
        spec = _specs[name]
        alternatives: dict[str, list[_Field]] = {}
        for fd in sorted(desc.fields, key=lambda f: f.number):
            if fd.number in (_NULLS, _EXTRA, _EMPTY):
                spec.by_number[fd.number] = _Field("", fd.name, fd.number, _fits_any, list)
                continue
            key = ALIASES.get((name, fd.name), fd.name)
            enc, dec = _converters(name, fd)
            field = _Field(key, fd.name, fd.number, enc, dec)
            spec.by_number[fd.number] = field
            alternatives.setdefault(key, []).append(field)
        spec.by_key = {k: tuple(v) for k, v in alternatives.items()}
        spec.plain = _plain_fields(desc, spec)
        spec.tags = _tag_table(desc, spec)
        spec.mark_keys = {n: f.key for n, f in spec.by_number.items() if f.key}
        spec.low = [spec.tags.get(tag) for tag in range(128)]


# Decoder kinds, one per (field type, wire type) the schema uses.
_K_STR, _K_RSTR, _K_MSG, _K_RMSG, _K_BYTES, _K_INT64, _K_UINT32, _K_BOOL, _K_DOUBLE = range(9)
_K_RINT_PACKED, _K_RINT, _K_MARKS_PACKED, _K_MARKS, _K_EXTRA = range(9, 14)
_LEN, _VARINT, _I64 = 2, 0, 1


def _tag_table(desc: Any, spec: _Spec) -> dict[int, tuple[str, int, Any]]:
    # google.protobuf (tens of ms): loaded by the first protobuf call
    from google.protobuf.descriptor import FieldDescriptor as FD

    tags: dict[int, tuple[str, int, Any]] = {}
    for fd in desc.fields:
        f = spec.by_number[fd.number]
        tag = fd.number << 3
        repeated = _is_repeated(fd)
        if fd.number in (_NULLS, _EMPTY):  # repeated uint32: packed, or one per field (both legal)
            tags[tag | _LEN] = (fd.name, _K_MARKS_PACKED, fd.number)
            tags[tag | _VARINT] = (fd.name, _K_MARKS, fd.number)
        elif fd.number == _EXTRA:
            tags[tag | _LEN] = ("", _K_EXTRA, None)
        elif fd.type == FD.TYPE_MESSAGE:
            tags[tag | _LEN] = (f.key, _K_RMSG if repeated else _K_MSG, _specs[fd.message_type.name])
        elif fd.type == FD.TYPE_STRING:
            tags[tag | _LEN] = (f.key, _K_RSTR if repeated else _K_STR, None)
        elif fd.type == FD.TYPE_BYTES:
            tags[tag | _LEN] = (f.key, _K_BYTES, f.dec)
        elif fd.type == FD.TYPE_INT64 and repeated:
            tags[tag | _LEN] = (f.key, _K_RINT_PACKED, None)
            tags[tag | _VARINT] = (f.key, _K_RINT, None)
        elif fd.type in (FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_BOOL):
            kind = {FD.TYPE_INT64: _K_INT64, FD.TYPE_UINT32: _K_UINT32, FD.TYPE_BOOL: _K_BOOL}
            tags[tag | _VARINT] = (f.key, kind[fd.type], None)
        elif fd.type == FD.TYPE_DOUBLE:
            tags[tag | _I64] = (f.key, _K_DOUBLE, None)
        else:  # pragma: no cover - a schema change the decoder was not taught
            raise TypeError(f"no decoder for {desc.name}.{fd.name} (type {fd.type})")
    return tags


def _plain_fields(desc: Any, spec: _Spec) -> dict[str, type]:
    # google.protobuf (tens of ms): loaded by the first protobuf call
    from google.protobuf.descriptor import FieldDescriptor as FD

    types = {FD.TYPE_STRING: str, FD.TYPE_BOOL: bool, FD.TYPE_DOUBLE: float}
    plain: dict[str, type] = {}
    for fd in desc.fields:
        alts = spec.by_key.get(fd.name)
        if alts and alts[0].name == fd.name and fd.type in types and not _is_repeated(fd):
            plain[fd.name] = types[fd.type]
    return plain


def _converters(msg_name: str, fd: Any) -> tuple[_Enc, _Dec]:
    # google.protobuf (tens of ms): loaded by the first protobuf call
    from google.protobuf.descriptor import FieldDescriptor as FD

    repeated = _is_repeated(fd)
    if fd.type == FD.TYPE_MESSAGE:
        sub = _specs[fd.message_type.name]
        if repeated:
            return _repeated_message_enc(sub), _identity
        return (lambda v: _encode(sub, v) if type(v) is dict else _MISS), _identity
    if fd.type == FD.TYPE_BYTES:
        if (msg_name, fd.name) in _BASE64_FIELDS:
            return _base64_enc, _base64_dec
        if (msg_name, fd.name) in _FLOAT32_FIELDS:
            return _f32_enc, _f32_dec
        return orjson.dumps, orjson.loads
    scalar = _scalar_table()[fd.type]
    if repeated:
        return _repeated_scalar_enc(scalar, fd.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE)), list
    return scalar, _identity  # scalars and messages are decoded by _parse itself


def _is_repeated(fd: Any) -> bool:
    is_repeated = getattr(fd, "is_repeated", None)  # protobuf >= 5.x; `label` is deprecated
    if is_repeated is not None:
        return bool(is_repeated)
    return bool(fd.label == fd.LABEL_REPEATED)


def _identity(v: Any) -> Any:
    return v


def _fits_any(v: Any) -> Any:
    return v


def _str_enc(v: Any) -> Any:
    return v if type(v) is str else _MISS


def _bool_enc(v: Any) -> Any:
    return v if type(v) is bool else _MISS


def _float_enc(v: Any) -> Any:
    t = type(v)
    if t is float or (t is int and -(2**53) <= v <= 2**53):
        return v
    return _MISS


def _int64_enc(v: Any) -> Any:
    return v if type(v) is int and -(2**63) <= v < 2**63 else _MISS


def _uint32_enc(v: Any) -> Any:
    return v if type(v) is int and 0 <= v < 2**32 else _MISS


def _scalar_table() -> dict[int, _Enc]:
    # google.protobuf (tens of ms): loaded by the first protobuf call
    from google.protobuf.descriptor import FieldDescriptor as FD

    return {
        FD.TYPE_STRING: _str_enc,
        FD.TYPE_BOOL: _bool_enc,
        FD.TYPE_DOUBLE: _float_enc,
        FD.TYPE_FLOAT: _float_enc,
        FD.TYPE_INT64: _int64_enc,
        FD.TYPE_UINT32: _uint32_enc,
    }


def _repeated_scalar_enc(item: _Enc, floats: bool) -> _Enc:
    def enc(v: Any) -> Any:
        if type(v) is not list:
            return _MISS
        if not v:
            return _EMPTY_LIST
        if floats and all(type(x) is float for x in v):  # the hot path: embedding vectors
            return v
        for x in v:
            if item(x) is _MISS:
                return _MISS
        return v

    return enc


def _repeated_message_enc(sub: _Spec) -> _Enc:
    def enc(v: Any) -> Any:
        if type(v) is not list:
            return _MISS
        if not v:
            return _EMPTY_LIST
        for x in v:
            if type(x) is not dict:
                return _MISS
        return [_encode(sub, x) for x in v]

    return enc


def _base64_enc(v: Any) -> Any:
    if type(v) is not str:
        return _MISS
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return _MISS
    # Only canonical base64 round-trips to the same string; anything else travels as JSON.
    if not raw:  # b"" is "absent" for a proto3 bytes field: "" travels in `extra`
        return _MISS
    return raw if base64.b64encode(raw).decode("ascii") == v else _MISS


def _f32_enc(v: Any) -> Any:
    if type(v) is not list:
        return _MISS
    if not v:
        return _EMPTY_LIST
    if not all(type(x) is float for x in v):
        return _MISS
    try:
        return struct.pack(f"<{len(v)}f", *v)
    except OverflowError:  # beyond float32 range: the exact values travel in `extra`
        return _MISS


def _f32_dec(v: bytes) -> list[float]:
    if len(v) % 4:
        raise MalformedResponseError(
            f"Malformed protobuf body: a float32 vector of {len(v)} bytes (not a multiple of 4)"
        )
    return float32_list(v)


def _base64_dec(v: bytes) -> str:
    return base64.b64encode(v).decode("ascii")


def _encode(spec: _Spec, d: dict[str, Any]) -> dict[str, Any]:
    """dict -> constructor kwargs (sub-messages as nested kwargs: upb builds them in C)."""
    plain = spec.plain
    for k, v in d.items():  # most dicts (chat messages) need no conversion at all
        if plain.get(k) is not type(v):
            break
    else:
        return d
    kw: dict[str, Any] = {}
    nulls: list[int] = []
    empty: list[int] = []
    extra: dict[str, Any] | None = None
    by_key = spec.by_key
    for k, v in d.items():
        alts = by_key.get(k)
        if alts is not None:
            if v is None:
                nulls.append(alts[0].number)
                continue
            for f in alts:
                out = f.enc(v)
                if out is _MISS:
                    continue
                if out is _EMPTY_LIST:
                    empty.append(f.number)
                else:
                    kw[f.name] = out
                break
            else:
                alts = None
        if alts is None:
            if extra is None:
                extra = {}
            extra[k] = v
    if nulls:
        kw["nulls"] = nulls
    if empty:
        kw["empty"] = empty
    if extra is not None:
        kw["extra"] = orjson.dumps(extra)
    return kw


class _Bad(Exception):
    """A wire-format violation inside the parser (turned into MalformedResponseError)."""


_unpack_double = struct.Struct("<d").unpack_from
_U64 = (1 << 64) - 1


def _varint_tail(data: bytes, i: int, value: int) -> tuple[int, int]:
    """Finish a varint whose first byte (``value``, >= 0x80) was at ``i - 1``."""
    value &= 0x7F
    shift = 7
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & _U64, i
        shift += 7
        if shift >= 70:
            raise _Bad("a varint longer than 10 bytes")


def _parse(spec: _Spec, data: bytes, i: int, end: int) -> dict[str, Any]:
    """Decode the fields of one ``spec`` message in ``data[i:end]`` straight to a dict.

    The protobuf wire format (protobuf.dev/programming-guides/encoding) parsed in Python: for
    these small messages this is ~3x faster than the runtime's parse plus ListFields walks.
    Unknown fields are skipped (a newer schema); malformed input raises _Bad or IndexError.
    """
    tags = spec.tags
    out: dict[str, Any] = {}
    marks: list[tuple[int, int]] | None = None
    extra: Any = None
    while i < end:
        tag = data[i]
        i += 1
        if tag >= 0x80:
            tag, i = _varint_tail(data, i, tag)
        ent = tags.get(tag)
        wire = tag & 7
        if wire == _LEN:
            n = data[i]
            i += 1
            if n >= 0x80:
                n, i = _varint_tail(data, i, n)
            j = i + n
            if j > end:
                raise _Bad(f"a field of {spec.name} runs past the end of its message")
            if ent is not None:
                key, kind, aux = ent
                if kind == _K_STR:
                    out[key] = data[i:j].decode("utf-8")
                elif kind == _K_MSG:
                    out[key] = _parse(aux, data, i, j)
                elif kind in (_K_RMSG, _K_RSTR):
                    item = _parse(aux, data, i, j) if kind == _K_RMSG else data[i:j].decode("utf-8")
                    lst = out.get(key)
                    if type(lst) is list:
                        lst.append(item)
                    else:
                        out[key] = [item]
                elif kind == _K_BYTES:
                    if j > i:  # proto3: an empty bytes field is an absent one
                        out[key] = aux(data[i:j])
                elif kind == _K_EXTRA:
                    extra = data[i:j]
                elif kind == _K_MARKS_PACKED:
                    if marks is None:
                        marks = []
                    while i < j:
                        v = data[i]
                        i += 1
                        if v >= 0x80:
                            v, i = _varint_tail(data, i, v)
                        marks.append((aux, v))
                    if i != j:
                        raise _Bad(f"a packed field of {spec.name} overruns its length")
                else:  # _K_RINT_PACKED
                    ints = out.get(key)
                    if type(ints) is not list:
                        ints = out[key] = []
                    while i < j:
                        v = data[i]
                        i += 1
                        if v >= 0x80:
                            v, i = _varint_tail(data, i, v)
                        ints.append(v - (1 << 64) if v >> 63 else v)
                    if i != j:
                        raise _Bad(f"a packed field of {spec.name} overruns its length")
            i = j
        elif wire == _VARINT:
            v = data[i]
            i += 1
            if v >= 0x80:
                v, i = _varint_tail(data, i, v)
            if ent is not None:
                key, kind, aux = ent
                if kind == _K_INT64:
                    out[key] = v - (1 << 64) if v >> 63 else v
                elif kind == _K_BOOL:
                    out[key] = v != 0
                elif kind == _K_UINT32:
                    out[key] = v & 0xFFFFFFFF
                elif kind == _K_MARKS:
                    if marks is None:
                        marks = []
                    marks.append((aux, v & 0xFFFFFFFF))
                else:  # _K_RINT
                    ints = out.get(key)
                    if type(ints) is not list:
                        ints = out[key] = []
                    ints.append(v - (1 << 64) if v >> 63 else v)
        elif wire == _I64:
            if ent is not None:
                if i + 8 > len(data):
                    raise IndexError("index out of range")
                out[ent[0]] = _unpack_double(data, i)[0]
            i += 8
        elif wire == 5:  # I32: no such field in the schema; skipped like any unknown field
            i += 4
        else:
            raise _Bad(f"wire type {wire} (groups are not used) in {spec.name}")
    if i != end:
        raise _Bad(f"{spec.name} ends inside a field")
    if marks is not None or extra is not None:
        _finish(spec, out, marks, extra)
    return out


def _finish(
    spec: _Spec, out: dict[str, Any], marks: list[tuple[int, int]] | None, extra: bytes | None
) -> None:
    """Apply a message's null/empty marks and its ``extra`` JSON (both parsers call this)."""
    if marks is not None:
        for which, number in marks:
            out[_key_of(spec, number)] = None if which == _NULLS else []
    if extra is not None:
        value = _loads(extra, spec.name)
        if type(value) is not dict:
            raise MalformedResponseError(
                f"Malformed protobuf body: {spec.name}.extra is not a JSON object"
            )
        out.update(value)


def _key_of(spec: _Spec, number: int) -> str:
    key = spec.mark_keys.get(number)  # the compiled parser's table too
    if key is None:
        raise MalformedResponseError(
            f"Malformed protobuf body: {spec.name} marks unknown field number {number} as null/empty"
        )
    return key


def _loads(data: bytes, where: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedResponseError(
            f"Malformed protobuf body: a JSON field of {where} is not JSON ({exc})"
        ) from None
