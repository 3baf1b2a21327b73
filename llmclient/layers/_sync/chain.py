# Generated from llmclient/layers/_async/chain.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The chain of layers, declared once: the order one call goes through them, outermost first.

Each layer's module (named in :data:`LAYERS`) says when the layer is in the chain (``wanted(ctx, options)``) and gives its
class (``Layer(inner, ctx)``: it does its part and calls ``inner``, the layer it wraps). The chain
is built once per client from its settings (:class:`Chain`), and once more for a call whose own
options turn a layer on or off (``create(..., hedge=True)``): a layer that is off is not in the
chain, so the calls that do not use a feature pay nothing for it. A layer whose ``needs`` names
another gets that layer's service too (``decode`` needs ``retry``: what a stream goes on with
after a failure). Adding a feature is one module in this package and one line in :data:`LAYERS`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from . import send

if TYPE_CHECKING:
    from ..context import Context
    from ..options import CallOptions

__all__ = ["LAYERS", "Chain"]

# Each name is a module of this package; one line here puts its layer in the chain.
LAYERS: Final = (
    "batch",     # embeddings made together go as one request
    "trace",     # the trace id on log lines; the OpenTelemetry span
    "images",    # image parts prepared before upload
    "cache",     # response cache and speculation: hit, join, adopt a prefetch; store; plan follow-ups
    "decode",    # the answer made into the face's object, or a stream that can go on after a failure
    "gate",      # adaptive concurrency: a slot per origin until the body is closed
    "hedge",     # a second copy of a late call
    "retry",     # the attempt loop
    "encode",    # the body on the wire; a plainer form after a refusal
    "route",     # which replica each attempt goes to
    "pace",      # rate-limit budget before each attempt
    "inflight",  # the client's attempts to the origin awaiting an answer, for the timings
)
_MODULES: Final[tuple[ModuleType, ...]] = tuple(importlib.import_module(f"{__package__}.{name}") for name in LAYERS)


class Chain:
    """One client's chains: its default one, and one per set of layers a call's own options ask
    for (built on first use)."""

    __slots__ = ("_by_layers", "_ctx", "default", "defaults", "send")

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self.defaults = ctx.defaults  # the client's own options: a call with these takes ``default``
        self._by_layers: dict[tuple[bool, ...], Any] = {}
        ctx.rebuild = self._rebuild
        self._rebuild()

    def _rebuild(self) -> None:
        self._by_layers.clear()
        ctx = self._ctx
        on = tuple(module.wanted(ctx, self.defaults) for module in _MODULES)
        built: dict[str, Any] = {}
        self.default = self._by_layers[on] = build(ctx, [m for m, w in zip(_MODULES, on, strict=True) if w], built)
        # A call sent on its own (a warm-up): the attempt loop and below, no cache, no hedge.
        self.send = built["retry"]

    def for_options(self, options: CallOptions) -> Any:
        """The chain for a call with these options."""
        if options is self.defaults:
            return self.default
        ctx = self._ctx
        on = tuple(module.wanted(ctx, options) for module in _MODULES)
        service = self._by_layers.get(on)
        if service is None:
            service = self._by_layers[on] = build(ctx, [m for m, wanted in zip(_MODULES, on, strict=True) if wanted])
        return service

    def layers(self, options: CallOptions | None = None) -> list[str]:
        """The names of the layers a call with ``options`` goes through, outermost first."""
        ctx = self._ctx
        return [name for name, m in zip(LAYERS, _MODULES, strict=True) if m.wanted(ctx, options or self.defaults)]


def build(ctx: Context, modules: list[ModuleType], built: dict[str, Any] | None = None) -> Any:
    """The service of these layers around the transport, outermost first (``built``: each
    layer's service by its module's name, filled in)."""
    service: Any = send.Send(ctx)
    built = {} if built is None else built
    for module in reversed(modules):
        layer = module.Layer
        needs = getattr(layer, "needs", None)
        service = layer(service, ctx) if needs is None else layer(service, ctx, built[needs])
        built[module.__name__.rsplit(".", 1)[-1]] = service
    return service
