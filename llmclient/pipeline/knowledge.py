"""What a client has learned about each server it called: one :class:`Knowledge` per client.

One :class:`ServerRecord` per (base URL, credential scope) holds what the server's answers
showed: whether it speaks our protobuf (``wire``, from ``x-llm-wire``, ``Accept-Post`` and
refusals), which request content-codings it reads (``codings``, from its ``Accept-Encoding``,
RFC 7694; emptied by a 415), and whether it takes a derived ``prompt_cache_key``
(``cache_key``) or vLLM's ``priority`` (``priority_field``): a 400 or 422 naming the field says
no. Nothing is probed with a request of its own, and a refusal is remembered, so no body is sent
in a form the server already turned down.

The knowledge belongs to the client that learned it, and to its ``with_options`` copies (they
share the object, as they share the replicas' router): a second client in the same process
starts from nothing, and one tenant's refusal (a gateway that rejects ``prompt_cache_key`` for
one key) changes nothing for another credential. Records are per base URL, not per host: two
servers behind one proxy at different paths (``/a/v1``, ``/b/v1``) learn apart.

The connection-level facts about a host (HTTP/2 or HTTP/1.1, its lanes, its proxy) are the
transport's (``transport/lanes.py``'s ``OriginRecord``), shared by the clients that share the
connections; the hedge delay is learned per client (``layers/_async/hedge.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Knowledge", "ServerRecord"]

# A client that talks to this many (server, credential) pairs starts over rather than grow
# without end (a gateway client minting a credential per end user, say).
MAX_RECORDS: Final = 4096


@dataclass(slots=True)
class ServerRecord:
    base_url: str
    wire: Any = None  # a wire.protobuf.WireState once a response said something; else None
    codings: frozenset[str] | None = None  # the request codings it reads; None: not known yet
    cache_key: bool = True  # False once it refused a derived prompt_cache_key (400/422 naming it)
    priority_field: bool = True  # False once it refused vLLM's body priority (400/422 naming it)


class Knowledge:
    """The records of one client and its copies, per (base URL, credential scope)."""

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], ServerRecord] = {}

    def server(self, base_url: str, scope: str) -> ServerRecord:
        """The record of ``base_url`` under the credential ``scope`` (made on first use)."""
        key = (base_url, scope)
        record = self._records.get(key)
        if record is None:
            if len(self._records) >= MAX_RECORDS:
                self._records.clear()
            record = self._records.setdefault(key, ServerRecord(base_url))
        return record

    def __len__(self) -> int:
        return len(self._records)
