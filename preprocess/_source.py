"""Turn whatever the caller has (path, bytes, file object, PIL image, data URL) into bytes or
an already-open PIL image. Pure I/O, no decoding."""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote_to_bytes

from PIL import Image

from ._errors import ImageSourceError

__all__ = ["MAX_SOURCE_BYTES", "ImageSource", "parse_data_url", "read_source"]

# The largest image file or file object read (a 12 MP JPEG is ~5 MB, an uncompressed 24 MP
# PNG ~70 MB before compression, ~35 MB after): a cap, so a device or a runaway stream named
# by mistake is refused instead of read until memory runs out.
MAX_SOURCE_BYTES = 50 * 1024 * 1024
# Pseudo file systems whose "regular files" are kernel state, not images.
_PSEUDO_ROOTS = ("/proc/", "/sys/", "/dev/")

ImageSource = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes] | Image.Image


def parse_data_url(url: str) -> tuple[str, bytes]:
    """``data:[<mediatype>][;base64],<data>`` (RFC 2397) -> (media type, bytes)."""
    if not url.startswith("data:"):
        raise ImageSourceError(f"not a data URL: {url[:40]!r}")
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise ImageSourceError("malformed data URL: no ',' between header and data")
    params = header.split(";")
    media_type = params[0] or "text/plain"
    if "base64" in params[1:]:
        try:
            # validate=False tolerates line breaks some encoders insert.
            return media_type, base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ImageSourceError(f"malformed base64 in data URL: {exc}") from exc
    return media_type, unquote_to_bytes(payload)


def read_source(source: Any) -> bytes | Image.Image:
    """The bytes behind ``source``, or the PIL image itself when it is one."""
    if isinstance(source, Image.Image):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, str) and source.startswith("data:"):
        return parse_data_url(source)[1]
    if isinstance(source, str) and source.startswith("file://"):
        source = source[len("file://") :]
    if isinstance(source, (str, os.PathLike)):
        return _read_path(Path(source))
    read = getattr(source, "read", None)
    if callable(read):
        data = read(MAX_SOURCE_BYTES + 1)
        if not isinstance(data, (bytes, bytearray)):
            raise ImageSourceError(f"file object returned {type(data).__name__}, expected bytes")
        if len(data) > MAX_SOURCE_BYTES:
            raise ImageSourceError(f"image file object holds more than {MAX_SOURCE_BYTES:,} bytes")
        return bytes(data)
    raise ImageSourceError(
        f"unsupported image source type {type(source).__name__}: expected a path, bytes, "
        "a binary file object, a PIL image or a data: URL"
    )


def _read_path(path: Path) -> bytes:
    """A regular file's bytes, at most MAX_SOURCE_BYTES; devices, FIFOs, sockets and kernel
    pseudo files (/proc, /sys) are refused without reading them."""
    real = os.path.realpath(path)
    if real.startswith(_PSEUDO_ROOTS):
        raise ImageSourceError(f"image path is not a regular file: {str(path)!r}")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before fstat can refuse it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ImageSourceError(f"image file not found: {str(path)!r}") from None
    except IsADirectoryError:
        raise ImageSourceError(f"image path is a directory: {str(path)!r}") from None
    except OSError as exc:
        raise ImageSourceError(f"cannot read image file {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ImageSourceError(f"image path is a directory: {str(path)!r}")
        if not stat.S_ISREG(info.st_mode):
            raise ImageSourceError(f"image path is not a regular file: {str(path)!r}")
        if info.st_size > MAX_SOURCE_BYTES:
            raise ImageSourceError(
                f"image file {str(path)!r} is {info.st_size:,} bytes, more than {MAX_SOURCE_BYTES:,}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise ImageSourceError(f"cannot read image file {str(path)!r}: {exc.strerror or exc}") from exc
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:  # grew while we read it
        raise ImageSourceError(f"image file {str(path)!r} is larger than {MAX_SOURCE_BYTES:,} bytes")
    return data
