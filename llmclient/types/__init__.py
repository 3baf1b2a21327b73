"""``llmclient.types``: the official ``openai.types`` module tree, under llmclient's name.

With ``openai`` installed, ``llmclient.types`` and every module under it
(``llmclient.types.chat``, ``llmclient.types.chat.chat_completion``, ...) are the official
modules themselves, so ``llmclient.types.chat.ChatCompletion is openai.types.chat.ChatCompletion``
and code annotated with the official types switches by its import line alone. Without
``openai``, the response classes llmclient returns then (its light views) are here under the
same names: ``ChatCompletion``, ``ChatCompletionChunk``, ``Completion``,
``CreateEmbeddingResponse``, ``Model`` and ``chat.ChatCompletion`` / ``chat.ChatCompletionChunk``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types as _pytypes
from typing import Any

_official: Any
try:
    import openai.types as _official
except ImportError:  # llmclient works without openai; its own response classes stand in
    _official = None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> _pytypes.ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: _pytypes.ModuleType) -> None:
        pass  # the official module ran when it was imported


class _AliasFinder(importlib.abc.MetaPathFinder):
    """``llmclient.types.X.Y`` is imported as ``openai.types.X.Y`` (the same module object)."""

    prefix = __name__ + "."

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.prefix):
            return None
        official = "openai.types." + fullname[len(self.prefix):]
        try:
            spec = importlib.util.find_spec(official)
        except ModuleNotFoundError:
            return None
        if spec is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(official),
                                              is_package=spec.submodule_search_locations is not None)


if _official is not None:
    import importlib.util

    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())

    def __getattr__(name: str) -> Any:
        try:
            return getattr(_official, name)
        except AttributeError:
            pass
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return sorted(set(dir(_official)))

else:
    from ..api.models import (
        ChatCompletion,
        ChatCompletionChunk,
        Completion,
        CreateEmbeddingResponse,
        Model,
    )

    chat = _pytypes.SimpleNamespace(ChatCompletion=ChatCompletion, ChatCompletionChunk=ChatCompletionChunk)
    __all__ = ["ChatCompletion", "ChatCompletionChunk", "Completion", "CreateEmbeddingResponse", "Model", "chat"]
