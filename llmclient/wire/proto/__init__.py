"""Owns the protobuf wire schema: ``llmclient.proto`` (the ``llmclient.v1`` messages) and its
generated module ``llmclient_pb2``; the codec that maps them to dicts is
``llmclient.wire.protobuf``.

Importing this package does not import ``google.protobuf``; ``llmclient_pb2`` is loaded on
first use (``from llmclient.wire.proto import llmclient_pb2``), so ``import llmclient`` stays
light. Regenerate the module with ``regen.sh`` after editing the schema: it compiles from this
folder, so the descriptor's file name stays ``llmclient.proto`` wherever the folder lives.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

__all__ = ["PROTO_PATH", "llmclient_pb2"]

PROTO_PATH = Path(__file__).with_name("llmclient.proto")


def __getattr__(name: str) -> ModuleType:
    if name == "llmclient_pb2":
        return importlib.import_module(f"{__name__}.llmclient_pb2")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
