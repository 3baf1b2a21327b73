# Generated from llmclient/layers/_async/batch.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Embedding micro-batching (``embedding_batch=``): embedding calls made within a few
milliseconds of each other, for the same model and credentials, go as one request; each caller
gets its own slice of the answer (``features/batch.py`` decides what may merge, and splits the
answer). The merged request runs through the rest of the chain as a call of its own (its trace
id and timings are the answer's). In the chain only when asked; a call with ``extra_*`` of its
own, or for its raw response, goes alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...pipeline.reply import Reply

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Batch", "Layer", "wanted"]

EMBEDDINGS_PATH = "/embeddings"


def wanted(ctx: Context, options: CallOptions) -> bool:
    return ctx.batcher is not None


class Batch:
    __slots__ = ("_ctx", "_inner")

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner, self._ctx = inner, ctx

    def __call__(self, call: Call) -> Reply:
        batcher = self._ctx.batcher
        assert batcher is not None
        key = None
        if call.path == EMBEDDINGS_PATH and not call.raw and call.body is not None:
            key = batcher.key(call.base_url, call.scope, call.body, not call.extras)
        if key is None or call.body is None:
            return self._inner(call)
        ctx, inner = self._ctx, self._inner

        def send(body: dict[str, Any]) -> Any:  # one request of the batch: (its answer as data, its Call)
            sent = ctx.build("POST", EMBEDDINGS_PATH, dict(body), timeout=call.timeout)
            sent.make = dict
            reply: Reply = inner(sent)
            return reply.value, sent

        value, sent, shared = batcher.submit(key, call.body, send)
        sent.record.batched = shared  # the answer's timings and trace id: the request that carried it
        return Reply(None, value, ctx.finish(sent, call.make(value), None))


Layer = Batch
