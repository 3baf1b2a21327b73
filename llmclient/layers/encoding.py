"""The body as it goes on the wire, and what the answers teach about the server (no I/O): the
decisions of the encode layer (``_async/encode.py``).

JSON unless the call asks for protobuf and the server is known to read it (the Responses API has
no protobuf schema); request bodies of 1 KiB and more compressed for servers that said (an
``Accept-Encoding`` in a response, RFC 7694) they read zstd or gzip; and two fields llmclient
adds on its own where they help and the server takes them: a derived ``prompt_cache_key`` (one
origin that routes by it: ``features/route/cache_key``) and vLLM's ``priority`` on a low call
(``features/admit/priority``). A server that refuses our wire, our coding or one of our fields
is remembered in the client's :class:`~llmclient.pipeline.knowledge.Knowledge` and sent the body
once more in the plainer form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from .. import wire
from ..features.admit.priority import FIELD as PRIORITY_FIELD
from ..features.admit.priority import body_value as priority_body_value
from ..features.admit.priority import refused as refused_priority
from ..features.route.cache_key import FIELD as CACHE_KEY_FIELD
from ..features.route.cache_key import derive as derive_cache_key
from ..features.route.cache_key import refused as refused_cache_key
from ..features.route.cache_key import wanted as wants_cache_key
from ..wire.codec import JSON_CODEC, RESPONSES_PATH, Codec
from ..wire.compression import (
    MIN_COMPRESS_BYTES,
    choose_request_encoding,
    compress,
    parse_accept_encoding,
)

if TYPE_CHECKING:
    import httpx

    from ..pipeline.call import Call
    from ..pipeline.knowledge import Knowledge, ServerRecord

__all__ = ["REFUSABLE_STATUSES", "Encoder"]

# A field the server does not take comes back as one of these, naming it (a 400 or 422 proves
# the request was not run).
REFUSABLE_STATUSES: Final = frozenset({400, 422})


class Encoder:
    """One client's encoding settings and knowledge."""

    __slots__ = ("_last", "compress", "knowledge", "priority_field", "routed")

    def __init__(self, knowledge: Knowledge, *, compress: bool, priority_field: bool, routed: bool) -> None:
        self.knowledge = knowledge
        # The record last asked for, with its (base URL, scope): a client's calls go to one or a
        # few origins, and each call asks twice (encode, then its answer's headers). One tuple,
        # replaced whole: threads reading it see one record or another, never half of each.
        self._last: tuple[str, str, ServerRecord] | None = None
        self.compress = compress  # False: every body as it is
        self.priority_field = priority_field  # vLLM's body priority on low calls: opt-in
        self.routed = routed  # several replicas route by their own key: no derived cache key

    def server(self, call: Call) -> ServerRecord:
        last, base_url, scope = self._last, call.base_url, call.scope
        if last is not None and last[0] == base_url and last[1] == scope:
            return last[2]
        record = self.knowledge.server(base_url, scope)
        self._last = (base_url, scope, record)
        return record

    def codec_for(self, call: Call) -> Codec:
        mode = call.options.wire
        if mode == "json" or call.path == RESPONSES_PATH:
            return JSON_CODEC
        state = self.server(call).wire or wire.WireState()
        chosen = wire.choose_wire(mode, state)
        call.record.wire = chosen
        return wire.PROTOBUF_CODEC if chosen == "protobuf" else JSON_CODEC

    def encode(self, call: Call) -> None:
        """Set the call's codec (once) and its content: codec-encoded, fields added, compressed."""
        codec = call.codec
        if codec is None:
            codec = call.codec = self.codec_for(call)
        if call.body is None:
            call.content = None
            return
        body = call.body
        record = call.record
        record.cache_key = None
        server = self.server(call)
        if codec is JSON_CODEC and not self.routed and wants_cache_key(call.options.auto_cache_key, call.base_url):
            key = derive_cache_key(call.path, body, call.scope) if server.cache_key else None
            if key is not None:
                body = {**body, CACHE_KEY_FIELD: key}
                record.cache_key = key
        record.priority_field = None
        if self.priority_field and codec is JSON_CODEC:  # vLLM's priority on a low call
            value = priority_body_value(call.headers, call.path, body, server.priority_field)
            if value is not None:
                body = {**body, PRIORITY_FIELD: value}
                record.priority_field = value
        content = codec.encode(call.path, body)
        record.request_encoding = None
        if self.compress and len(content) >= MIN_COMPRESS_BYTES:
            caps = server.codings
            if caps:
                coding = choose_request_encoding(len(content), caps)
                if coding is not None:
                    content = compress(content, coding)
                    record.request_encoding = coding
        call.content = content

    def learn(self, call: Call, response: httpx.Response) -> bool:
        """Note what the answer's headers say about the server; True when the body must be sent
        again in a plainer form (as JSON after a protobuf refusal, or uncompressed after a
        coding refusal)."""
        headers = response.headers
        status = response.status_code
        server = self.server(call)
        resend = False
        if server.codings is None:
            # Learned from the first answer that speaks for the server: one that says what it
            # reads (RFC 7694), or any success. A proxy's error page (nginx's 413 or 502, with
            # no Accept-Encoding) says nothing about the server behind it.
            accept = headers.get("accept-encoding")
            if accept is not None or status < 400:
                server.codings = parse_accept_encoding(accept)
        if call.options.wire != "json":
            state = server.wire or wire.WireState()
            sent: Literal["json", "protobuf"] = "protobuf" if call.record.wire == "protobuf" else "json"
            seen = wire.observe_response(state, sent, status, headers)
            server.wire = seen.state
            if seen.retry_as_json:
                resend = True
                call.record.wire = "json"
        if status == 415 and call.record.request_encoding is not None:
            server.codings = frozenset()  # it said it reads codings; it does not
            resend = True
        return resend

    def plainer(self, call: Call) -> None:
        """The body once more, in the form the server's refusal asked for."""
        if call.record.wire == "json":
            call.codec = JSON_CODEC
        self.encode(call)

    def refused_field(self, call: Call, status: int, raw: bytes) -> str | None:
        """The field llmclient added that this error answer refuses (remembered: never sent to
        this server again), or None."""
        record = call.record
        if record.cache_key is not None and refused_cache_key(status, raw):
            self.server(call).cache_key = False
            return "prompt_cache_key"
        if record.priority_field is not None and refused_priority(status, raw):
            self.server(call).priority_field = False
            return "priority field"
        return None
