# Generated from llmclient/layers/_async/images.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Image parts prepared on the client before upload (``images=``, on by default): orientation,
resized to what the provider keeps, metadata (GPS) stripped, re-encoded (``features/images.py``
over ``llmclient.preprocess``, Pillow; loaded by the first call that carries an image). The
sync client prepares off its event loop: a photo takes about 100 ms of CPU. In the chain unless
``images=False``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..._synchronization import off_loop
from ...features.image_settings import has_image_part

if TYPE_CHECKING:
    from ...pipeline.call import Call
    from ...pipeline.reply import Reply
    from ..context import Context
    from ..options import CallOptions

__all__ = ["Images", "Layer", "prepare", "wanted"]


def wanted(ctx: Context, options: CallOptions) -> bool:
    return options.images is not False


def prepare(call: Call) -> Call:
    """Image parts through ``llmclient.preprocess`` (orientation, resize, metadata, format)."""
    # with Pillow: loaded by the first call that carries an image
    from ...features import images as _images

    started = time.perf_counter()
    body, stats = _images.prepare_payload(call.body or {}, call.options)
    call.body = body
    call.record.image_prep_ms = (time.perf_counter() - started) * 1000.0
    call.record.image_bytes_saved = int(getattr(stats, "bytes_saved", 0) or 0)
    return call


class Images:
    __slots__ = ("_inner",)

    def __init__(self, inner: Any, ctx: Context) -> None:
        self._inner = inner

    def __call__(self, call: Call) -> Reply:
        if call.body is not None and has_image_part(call.body):
            call = off_loop(prepare, call)
        return self._inner(call)


Layer = Images
