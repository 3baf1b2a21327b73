"""Owns body compression (``Content-Encoding``): compressing request bodies only where it pays,
decompressing (capped against bombs), and reading and choosing the codings an origin accepts.

A server says which codings it reads in request bodies by sending ``Accept-Encoding`` in a
response (RFC 7694, section 3); we compress a request body only for such an origin and only
above :data:`MIN_COMPRESS_BYTES`, below which the coding's framing and CPU cost more than the
bytes they save (``python -m benchmarks.wire_bytes`` prints the crossover table: a short chat
request saves less than one TCP segment, a long conversation shrinks several-fold; figures in
README, What it measured). Responses are decompressed by httpx, which reads gzip always and
zstd when ``zstandard`` is installed; we advertise only what it can read, and only for whole
bodies: a stream asks for ``identity``, as a compressor in a proxy may hold chunks back to fill
its window. Servers pick the coding by the same rule as ours for requests
(``benchmarks/server/wire.response_encoding``).

zstd needs the ``zstd`` extra (``pip install 'llmclient[zstd]'``); gzip is the stdlib fallback.
"""

from __future__ import annotations

import functools
import threading
import zlib
from collections.abc import Collection
from typing import Any, Final

__all__ = [
    "MIN_COMPRESS_BYTES",
    "ZSTD_LEVEL",
    "CompressionError",
    "DecompressedTooLarge",
    "accept_encoding",
    "choose_request_encoding",
    "compress",
    "decompress",
    "parse_accept_encoding",
    "supported_encodings",
]

# Below this a body goes uncompressed: with headers it fits one TCP segment (MSS ~1448 B on
# Ethernet) compressed or not, so the saving buys no packet and no round trip. Above it zstd-1
# halves chat JSON for ~10 us per KiB (benchmarks/wire_bytes.py crossover table).
MIN_COMPRESS_BYTES: Final = 1024
# zstd level 1: on a 16 KB conversation it is within 1% of level 3's size for ~20% less CPU
# (benchmarks/wire_bytes.py), and several times faster than gzip-6 for a similar ratio.
ZSTD_LEVEL: Final = 1
GZIP_LEVEL: Final = 6
# A decompressed body larger than this is refused (a compression bomb guard for servers).
MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024


class CompressionError(ValueError):
    """A body could not be (de)compressed with the coding it claims."""


class DecompressedTooLarge(CompressionError):
    """A body that decompresses to more than the cap (a compression bomb, or a body past a
    server's size limit): a server answers it 413, as it would the same body sent plain."""


_local = threading.local()  # zstd (de)compressor objects are not safe to share across threads


def _zstd() -> Any | None:
    try:
        import zstandard  # the zstd extra, optional: None without it
    except ImportError:
        return None
    return zstandard


def supported_encodings() -> tuple[str, ...]:
    """Codings this process can write and read, best first."""
    return ("zstd", "gzip") if _zstd() is not None else ("gzip",)


@functools.cache
def accept_encoding() -> str:
    """Our ``Accept-Encoding`` request header value (for whole bodies; streams ask for none)."""
    return ", ".join(supported_encodings())


def parse_accept_encoding(value: str | None) -> frozenset[str]:
    """Codings an ``Accept-Encoding`` value accepts (q > 0; RFC 9110, section 12.5.3)."""
    accepted: set[str] = set()
    for item in (value or "").split(","):
        coding, _, params = item.strip().partition(";")
        coding = coding.strip().lower()
        if not coding or coding == "*":
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, val = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(val)
                except ValueError:
                    q = 0.0
        if q > 0:
            accepted.add(coding)
    return frozenset(accepted)


def choose_request_encoding(size: int, origin_caps: Collection[str]) -> str | None:
    """The coding for a request body of ``size`` bytes to an origin that reads ``origin_caps``.

    None (send it plain) for small bodies and for origins that never said they read a coding.
    """
    if size < MIN_COMPRESS_BYTES:
        return None
    for coding in supported_encodings():
        if coding in origin_caps:
            return coding
    return None


def compress(data: bytes, encoding: str) -> bytes:
    if encoding == "zstd":
        zstd = _zstd()
        if zstd is None:
            raise CompressionError("zstd needs the zstandard package: pip install 'llmclient[zstd]'")
        comp = getattr(_local, "zc", None)
        if comp is None:
            comp = _local.zc = zstd.ZstdCompressor(level=ZSTD_LEVEL)
        out: bytes = comp.compress(data)
        return out
    if encoding == "gzip":
        # wbits=31: a gzip member (RFC 1952); zlib.compressobj avoids gzip.compress's mtime.
        c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    raise CompressionError(f"unsupported content-coding {encoding!r}; use one of {supported_encodings()}")


def decompress(data: bytes, encoding: str, max_size: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Undo ``Content-Encoding``; refuses output over ``max_size`` and corrupt input."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return data
    if coding == "gzip":
        d = zlib.decompressobj(31)
        try:
            out = d.decompress(data, max_size + 1)
        except zlib.error as exc:
            raise CompressionError(f"corrupt gzip body: {exc}") from None
        if not d.eof:
            raise _short_or_big(len(out), max_size, "gzip")
    elif coding == "zstd":
        zstd = _zstd()
        if zstd is None:
            raise CompressionError("zstd body but zstandard is not installed: pip install 'llmclient[zstd]'")
        out = _zstd_decompress(zstd, data, max_size)
    else:
        raise CompressionError(f"unsupported content-coding {encoding!r}")
    if len(out) > max_size:
        raise _short_or_big(len(out), max_size, coding)
    return out


def _zstd_decompress(zstd: Any, data: bytes, max_size: int) -> bytes:
    try:
        declared = zstd.frame_content_size(data)
        if declared > max_size:
            raise _short_or_big(declared, max_size, "zstd")
        if declared >= 0:  # size known (our compressor writes it): one bounded call
            d = zstd.ZstdDecompressor().decompressobj()
            out: bytes = d.decompress(data)
            if not d.eof:
                raise CompressionError("truncated zstd body")
            return out
        # Size not in the frame header (streamed frames): read at most max_size + 1 bytes.
        with zstd.ZstdDecompressor().stream_reader(data) as reader:
            out = reader.read(max_size + 1)
        return out
    except zstd.ZstdError as exc:
        raise CompressionError(f"corrupt zstd body: {exc}") from None


def _short_or_big(n: int, max_size: int, coding: str) -> CompressionError:
    if n > max_size:
        return DecompressedTooLarge(f"{coding} body decompresses to more than {max_size} bytes")
    return CompressionError(f"truncated {coding} body")
