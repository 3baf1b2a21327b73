"""HPACK (RFC 7541) for our HTTP/2 connections: a header encoder that costs little per call,
and a decoder.

Why not ``hpack.Encoder``: it searches its whole dynamic table and Huffman-codes every value
in pure Python, ~65 microseconds for the 12 headers of one chat call, about a tenth of the
client's CPU per call. Here every header is one of:

* indexed (one byte or two): a static-table pair, or a pair we inserted earlier;
* literal *with* incremental indexing, for the first value seen of a header name: the next
  request with the same value is indexed. At most one entry per name goes into the table, so
  headers whose value changes every call (``traceparent``, ``x-request-id``,
  ``idempotency-key``, ``content-length``) do not churn it; they are sent as
  literals *without* indexing, their name indexed, the value raw (no Huffman: a few bytes
  more, no CPU);
* literal *never indexed* for credentials (``authorization``, ``proxy-authorization``,
  ``cookie``, and the API-key headers gateways use: Azure's ``api-key``, ``x-api-key`` ...:
  ``_redact.SECRET_HEADERS``), as RFC 7541 section 7.1.3 advises, so no intermediary stores
  them.

Nothing is ever evicted: an entry that would not fit the table size the peer allows is not
inserted. A change of that size (SETTINGS_HEADER_TABLE_SIZE) empties our table and tells the
peer so at the start of the next header block (section 4.2).

The decoder is RFC 7541 in full (dynamic table with eviction, size updates within the limit we
advertise, a cap on the header list) with a byte-at-a-time Huffman state machine built lazily
from ``hpack``'s nibble table: each (state, byte) step is computed once and then read from a
fixed array of 65,536 packed steps (256 KiB), a little faster than walking nibbles.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import Final

from hpack.huffman_table import HUFFMAN_TABLE
from hpack.table import HeaderTable

from ..._redact import SECRET_HEADERS

__all__ = ["Decoder", "Encoder", "HPACKError"]

_STATIC: Final = HeaderTable.STATIC_TABLE  # 61 (name, value) pairs, index 1..61
_STATIC_PAIRS: Final[dict[tuple[bytes, bytes], int]] = {}
_STATIC_NAMES: Final[dict[bytes, int]] = {}
for _i, (_n, _v) in enumerate(_STATIC, 1):
    _STATIC_PAIRS.setdefault((_n, _v), _i)
    _STATIC_NAMES.setdefault(_n, _i)

# Credentials are never indexed: the headers _redact never prints, and set-cookie.
_NEVER_INDEXED: Final = frozenset({name.encode("ascii") for name in SECRET_HEADERS} | {b"set-cookie"})
_ENTRY_OVERHEAD: Final = 32  # RFC 7541 section 4.1
_MAX_INDEXED_VALUE: Final = 512  # longer values are sent as literals, never stored


class HPACKError(Exception):
    """A header block we cannot decode: a connection error (COMPRESSION_ERROR)."""


def _int(value: int, bits: int, flag: int) -> bytes:
    """An HPACK integer with an N-bit prefix (section 5.1), the prefix's high bits = flag."""
    limit = (1 << bits) - 1
    if value < limit:
        return bytes((flag | value,))
    out = bytearray((flag | limit,))
    value -= limit
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(flag: int, bits: int, name: bytes, value: bytes, name_index: int) -> bytes:
    head = _int(name_index, bits, flag) if name_index else bytes((flag,)) + _int(len(name), 7, 0) + name
    return head + _int(len(value), 7, 0) + value


class Encoder:
    """Header lists -> header blocks. Not thread-safe: the connection serialises calls."""

    __slots__ = ("_cache", "_entries", "_max", "_names", "_resize", "_size")

    def __init__(self) -> None:
        self._entries: dict[tuple[bytes, bytes], int] = {}  # pair -> insertion number
        self._names: dict[bytes, int] = {}  # name -> insertion number of its one entry
        self._size = 0
        self._max = 4096  # the peer's SETTINGS_HEADER_TABLE_SIZE (default 4096)
        self._resize: int | None = None
        # Encodings that do not depend on the table: (name, value) -> bytes.
        self._cache: dict[tuple[bytes, bytes], bytes] = {}

    def set_max_table_size(self, size: int) -> None:
        """The peer changed SETTINGS_HEADER_TABLE_SIZE: start over with an empty table."""
        if size != self._max:
            self._max = size
            self._entries.clear()
            self._names.clear()
            self._size = 0
            self._resize = size

    def encode(self, headers: list[tuple[bytes, bytes]]) -> bytes:
        out = bytearray()
        if self._resize is not None:
            out += _int(0, 5, 0x20) + _int(self._resize, 5, 0x20)  # empty, then the new size
            self._resize = None
        entries, cache = self._entries, self._cache
        for pair in headers:
            enc = cache.get(pair)
            if enc is not None:
                out += enc
                continue
            seq = entries.get(pair)
            if seq is not None:  # dynamic index: newest entry is 62
                out += _int(62 + len(entries) - 1 - seq, 7, 0x80)
                continue
            out += self._encode_new(pair)
        return bytes(out)

    def _encode_new(self, pair: tuple[bytes, bytes]) -> bytes:
        name, value = pair
        static = _STATIC_PAIRS.get(pair)
        if static is not None:
            enc = _int(static, 7, 0x80)
            self._remember(pair, enc)
            return enc
        name_index = _STATIC_NAMES.get(name, 0)
        if name in _NEVER_INDEXED:
            enc = _literal(0x10, 4, name, value, name_index)
            self._remember(pair, enc)
            return enc
        size = len(name) + len(value) + _ENTRY_OVERHEAD
        if name in self._names or len(value) > _MAX_INDEXED_VALUE or self._size + size > self._max:
            if not name_index and name in self._names:
                name_index = 62 + len(self._entries) - 1 - self._names[name]
                return _literal(0x00, 4, name, value, name_index)  # depends on the table
            return _literal(0x00, 4, name, value, name_index)
        enc = _literal(0x40, 6, name, value, name_index)
        self._entries[pair] = len(self._entries)
        self._names[name] = self._entries[pair]
        self._size += size
        return enc

    def _remember(self, pair: tuple[bytes, bytes], enc: bytes) -> None:
        if len(self._cache) >= 1024:
            self._cache.clear()
        self._cache[pair] = enc


# -- Huffman: bytes at a time, from hpack's nibble table -------------------------------------

_EMIT, _FAIL, _ACCEPT = 0x02, 0x04, 0x01  # hpack.huffman_table flag bits (COMPLETE=1)
# One (state << 8 | byte) step packed in 32 bits: known (set once computed), the accept flag,
# failure, how many symbols it emits (0-2: two nibbles, each emits at most one), the symbols,
# the next state. 256 states x 256 bytes, 256 KiB allocated once: a dict of tuples filled as
# steps are met grew to 10 MiB over hours (each new date, request id and timing value meets new
# steps), which a soak saw as a process that never stops growing (issue 46).
_KNOWN, _OK, _BAD = 0x01, 0x02, 0x04
_N_SHIFT, _N_MASK = 3, 0x18
_steps = array("I", bytes(4 * 256 * 256))


def _step(key: int) -> int:
    """(state << 8 | byte) -> the packed step (see above), computed once from the nibble table."""
    state, byte = key >> 8, key & 0xFF
    packed, n, flags = _KNOWN, 0, 0
    for nibble in (byte >> 4, byte & 0x0F):
        state, flags, sym = HUFFMAN_TABLE[state * 16 + nibble]
        if flags & _FAIL:
            _steps[key] = _KNOWN | _BAD
            return _KNOWN | _BAD
        if flags & _EMIT:
            packed |= sym << (8 + 8 * n)
            n += 1
    packed |= (n << _N_SHIFT) | (_OK if flags & _ACCEPT else 0) | (state << 24)
    _steps[key] = packed
    return packed


def _huffman_decode(data: bytes) -> bytes:
    state, step = 0, _OK
    out = bytearray()
    steps = _steps
    for byte in data:
        key = (state << 8) | byte
        step = steps[key] or _step(key)
        if step & _BAD:
            raise HPACKError("invalid Huffman-coded string")
        n = step & _N_MASK
        if n:
            out.append((step >> 8) & 0xFF)
            if n == 0x10:
                out.append((step >> 16) & 0xFF)
        state = step >> 24
    if not step & _OK:
        raise HPACKError("Huffman-coded string ends mid-symbol")
    return bytes(out)


class Decoder:
    """Header blocks -> [(name, value)] (bytes). Not thread-safe: one connection's reader."""

    __slots__ = ("_dynamic", "_limit", "_max", "_max_list", "_size")

    def __init__(self, max_table_size: int = 4096, max_header_list_size: int = 256 * 1024) -> None:
        self._dynamic: deque[tuple[bytes, bytes]] = deque()
        self._size = 0
        self._limit = max_table_size  # our SETTINGS_HEADER_TABLE_SIZE: the peer may not exceed it
        self._max = max_table_size
        self._max_list = max_header_list_size

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        headers: list[tuple[bytes, bytes]] = []
        i, n, total = 0, len(block), 0
        try:
            while i < n:
                b = block[i]
                if b & 0x80:  # indexed
                    idx, i = self._uint(block, i, 7)
                    pair = self._get(idx)
                elif b & 0x40:  # literal with incremental indexing
                    pair, i = self._literal(block, i, 6)
                    self._add(pair)
                elif b & 0x20:  # dynamic table size update
                    size, i = self._uint(block, i, 5)
                    if size > self._limit:
                        raise HPACKError(f"table size update to {size} over our limit {self._limit}")
                    self._max = size
                    self._shrink()
                    continue
                else:  # literal without indexing (0000) or never indexed (0001)
                    pair, i = self._literal(block, i, 4)
                total += len(pair[0]) + len(pair[1]) + _ENTRY_OVERHEAD
                if total > self._max_list:
                    raise HPACKError(f"header list over {self._max_list} bytes")
                headers.append(pair)
        except IndexError:
            raise HPACKError("truncated header block") from None
        return headers

    @staticmethod
    def _uint(data: bytes, i: int, bits: int) -> tuple[int, int]:
        limit = (1 << bits) - 1
        value = data[i] & limit
        i += 1
        if value < limit:
            return value, i
        shift = 0
        while True:
            b = data[i]
            i += 1
            value += (b & 0x7F) << shift
            if not b & 0x80:
                return value, i
            shift += 7
            if shift > 28:
                raise HPACKError("integer too large")

    def _string(self, data: bytes, i: int) -> tuple[bytes, int]:
        huffman = data[i] & 0x80
        length, i = self._uint(data, i, 7)
        end = i + length
        if end > len(data):
            raise HPACKError("string runs past the end of the header block")
        raw = data[i:end]
        return (_huffman_decode(raw) if huffman else raw), end

    def _literal(self, data: bytes, i: int, bits: int) -> tuple[tuple[bytes, bytes], int]:
        idx, i = self._uint(data, i, bits)
        if idx:
            name = self._get(idx)[0]
        else:
            name, i = self._string(data, i)
        value, i = self._string(data, i)
        return (name, value), i

    def _get(self, idx: int) -> tuple[bytes, bytes]:
        if 0 < idx <= 61:
            return _STATIC[idx - 1]
        pos = idx - 62
        if idx == 0 or pos >= len(self._dynamic):
            raise HPACKError(f"header index {idx} out of range")
        return self._dynamic[pos]

    def _add(self, pair: tuple[bytes, bytes]) -> None:
        size = len(pair[0]) + len(pair[1]) + _ENTRY_OVERHEAD
        if size > self._max:  # section 4.4: an entry larger than the table empties it
            self._dynamic.clear()
            self._size = 0
            return
        self._dynamic.appendleft(pair)
        self._size += size
        self._shrink()

    def _shrink(self) -> None:
        while self._size > self._max and self._dynamic:
            name, value = self._dynamic.pop()
            self._size -= len(name) + len(value) + _ENTRY_OVERHEAD
