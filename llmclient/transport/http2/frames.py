"""HTTP/2 on the wire (RFC 9113 sections 4, 6 and 7): the connection preface, frame types and
flags, error codes, settings identifiers, and the one function that lays out a frame."""

from __future__ import annotations

import struct
from typing import Final

__all__ = [
    "ACK", "CANCEL", "COMPRESSION_ERROR", "CONTINUATION", "DATA", "END_HEADERS", "END_STREAM",
    "ENHANCE_YOUR_CALM", "FLOW_CONTROL_ERROR", "FRAME_HEADER", "FRAME_SIZE_ERROR", "GOAWAY",
    "HEADERS", "INTERNAL_ERROR", "NO_ERROR", "PADDED", "PING", "PREFACE", "PRIORITY",
    "PRIORITY_FLAG", "PROTOCOL_ERROR", "PUSH_PROMISE", "REFUSED_STREAM", "RST_STREAM", "SETTINGS",
    "STREAM_CLOSED", "S_ENABLE_PUSH", "S_HEADER_TABLE_SIZE", "S_INITIAL_WINDOW_SIZE",
    "S_MAX_CONCURRENT_STREAMS", "S_MAX_FRAME_SIZE", "S_MAX_HEADER_LIST_SIZE", "WINDOW_UPDATE",
    "code_name", "frame",
]

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # section 3.4

# Frame types (section 6).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
# Flags: END_STREAM (DATA, HEADERS) and ACK (SETTINGS, PING) share a bit.
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20

# Error codes (section 7).
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 5, 6, 7, 8, 9
ENHANCE_YOUR_CALM = 11

# Settings identifiers (section 6.5.2).
S_HEADER_TABLE_SIZE, S_ENABLE_PUSH, S_MAX_CONCURRENT_STREAMS = 1, 2, 3
S_INITIAL_WINDOW_SIZE, S_MAX_FRAME_SIZE, S_MAX_HEADER_LIST_SIZE = 4, 5, 6

FRAME_HEADER: Final = struct.Struct(">BHBBI")  # 24-bit length (as 8 + 16), type, flags, stream id

_CODE_NAMES: Final = {
    0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
    4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM",
    8: "CANCEL", 9: "COMPRESSION_ERROR", 10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM",
    12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED",
}


def code_name(code: int) -> str:
    """An error code's name (section 7), or its hex value for one RFC 9113 does not define."""
    return _CODE_NAMES.get(code, f"0x{code:x}")


def frame(ftype: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One frame: the 9-byte header, then ``payload``."""
    n = len(payload)
    return FRAME_HEADER.pack(n >> 16, n & 0xFFFF, ftype, flags, stream_id) + payload
