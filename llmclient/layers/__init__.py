"""The chain of layers one call goes through (docs/ARCHITECTURE.md, "The chain").

Each feature is one layer around the next, down to the transport: a class whose
``__call__(call)`` does its part and calls the layer it wraps. The chain is declared once, in
``_async/chain.py`` (the sync twin is generated), built once per client from its settings; a
layer that is off is not in the chain. Each layer asks a pure policy for its decisions
(``pipeline/retry.py``, ``features/hedge.py``, ``features/route/``, ``features/admit/``) and
keeps its own state in the client's :class:`~llmclient.layers.context.Context`.
"""
