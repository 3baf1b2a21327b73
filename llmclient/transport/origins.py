"""What llmclient has learned about each server it called, for the whole process.

One :class:`ServerRecord` per base URL holds what its responses showed: whether it speaks our
protobuf (``wire``, from ``x-llm-wire``, ``Accept-Post`` and refusals) and which request
content-codings it reads (``codings``, from its ``Accept-Encoding``, RFC 7694; emptied by a 415),
and whether it takes a derived ``prompt_cache_key`` (``cache_key``) or vLLM's ``priority``
(``priority_field``): a 400 or 422 naming the field says no.
Nothing is probed with a request of its own, and a refusal is remembered, so no body is sent in a
form the server already turned down. Records are per base URL, not per host: two servers behind
one proxy at different paths (``/a/v1``, ``/b/v1``) learn apart.

The connection-level facts about a host (HTTP/2 or HTTP/1.1, its lanes, its proxy) are the
transport's (``_transport.OriginRecord``); the hedge delay is learned per client, because each
client has its own hedge settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ServerRecord", "forget_all", "record_for"]


@dataclass(slots=True)
class ServerRecord:
    base_url: str
    wire: Any = None  # a wire.protobuf.WireState once a response said something; else None
    codings: frozenset[str] | None = None  # the request codings it reads; None: not known yet
    cache_key: bool = True  # False once it refused a derived prompt_cache_key (400/422 naming it)
    priority_field: bool = True  # False once it refused vLLM's body priority (400/422 naming it)


_records: dict[str, ServerRecord] = {}


def record_for(base_url: str) -> ServerRecord:
    """The record of ``base_url`` (made on first use; shared by every client of the process)."""
    record = _records.get(base_url)
    if record is None:
        record = _records.setdefault(base_url, ServerRecord(base_url))
    return record


def forget_all() -> None:
    """Forget every server (tests start from nothing)."""
    _records.clear()
