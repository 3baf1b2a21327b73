"""llmclient's clients and errors become the official ``openai`` classes' kind when ``openai`` is
imported, so ``isinstance(client, openai.OpenAI)`` (instructor's ``from_openai``, ...) and
``except openai.NotFoundError`` (pydantic-ai, langchain-openai, retry wrappers) hold.

Why this mechanism (docs/ARCHITECTURE.md, "The official classes' kind"):

* ``isinstance`` against the official classes and ``except openai.X`` need real inheritance:
  the official classes are not ABCs (no virtual base), and an ``except`` clause never asks a
  ``__subclasscheck__`` anyway.
* Subclassing the official classes at definition time would import ``openai`` with
  ``import llmclient`` (about 4x the import time of llmclient itself).

So each registered class of llmclient (``register``) gains the official class of the same
name as its last base (``cls.__bases__ += (official,)``) at the moment ``openai`` finishes
importing: at once when it is imported already, else from a one-shot import hook
(``_Finder``), whoever imports it. Every class and every instance, made before or after,
is then of the official kind, ``issubclass(llmclient.NotFoundError, openai.NotFoundError)``
included, and ``import llmclient`` imports nothing more. llmclient's own classes come first
in the method resolution order, so its pipeline, attributes and figures are unchanged; the
official client's attributes that llmclient's client does not have are hidden
(``_Hidden``) so that one of them never runs on a client the official ``__init__`` did not
set up (``client.base_url`` stays llmclient's instance attribute, not the official property).
Without ``openai`` installed nothing is patched and the hook never fires.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import importlib.machinery

__all__ = ["adopted", "register"]

# (our class, whether to hide the official attributes it lacks), parents before children
_REGISTERED: list[tuple[type, bool]] = []
_lock = threading.Lock()
_openai: types.ModuleType | None = None  # set once openai is imported and the classes adopted


def register(*classes: type, hide: bool = False) -> None:
    """Give each class the official ``openai`` class of its name as a base once ``openai`` is
    imported (now, if it is). ``hide``: the official attributes it lacks read as missing."""
    with _lock:
        _REGISTERED.extend((cls, hide) for cls in classes)
        module = _openai
    if module is not None:
        for cls in classes:
            _adopt(cls, module, hide)


def adopted() -> bool:
    """Whether the registered classes are the official kind (``openai`` was imported)."""
    return _openai is not None


def official_twin(cls: type, module: types.ModuleType) -> type | None:
    """The official class ``cls`` stands for: the one of its name in ``openai``, if any."""
    official = module.__dict__.get(cls.__name__)
    return official if isinstance(official, type) and official is not cls else None


def _adopt_all(module: types.ModuleType) -> None:
    global _openai
    with _lock:
        if _openai is not None:
            return
        _openai = module
        registered = list(_REGISTERED)
    for cls, hide in registered:
        _adopt(cls, module, hide)


def _adopt(cls: type, module: types.ModuleType, hide: bool) -> None:
    official = official_twin(cls, module)
    if official is None or issubclass(cls, official):
        return
    # A base the official class derives from already (Exception, object) gives way to it.
    bases = tuple(base for base in cls.__bases__ if not issubclass(official, base))
    if hide:
        bases += (_hiding(cls, official),)
    cls.__bases__ = (*bases, official)


class _Hidden:
    """A non-data descriptor standing before an official attribute llmclient's class lacks: it
    reads as missing (AttributeError), and an instance attribute of that name still wins."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.name)
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}")


def _hiding(cls: type, official: type) -> type:
    theirs_classes = set(official.__mro__)
    ours = {name for klass in cls.__mro__ if klass not in theirs_classes for name in vars(klass)}
    theirs = {name for klass in official.__mro__ if klass is not object for name in vars(klass)}
    hidden = {name: _Hidden(name) for name in theirs - ours
              if not (name.startswith("__") and name.endswith("__"))}
    return type(f"_Hidden{official.__name__}", (), {"__module__": __name__, "__slots__": (), **hidden})


class _Loader:
    """Wraps the loader of ``openai`` for its import only: runs it, then adopts. (Duck-typed,
    as the import system allows: ``importlib.abc`` would add six modules to ``import llmclient``.)"""

    def __init__(self, loader: Any, finder: _Finder) -> None:
        self.loader, self.finder = loader, finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        module: types.ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self.loader.exec_module(module)
        finally:  # the package's spec and __loader__ are the real loader's again
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader
            module.__loader__ = self.loader
        self.finder.remove()
        _adopt_all(module)

    def __getattr__(self, name: str) -> Any:  # is_package, get_resource_reader, ...
        return getattr(self.loader, name)


class _Finder:
    """One-shot: finds ``openai`` with the other finders and wraps its loader (``_Loader``)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "openai":
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self)  # type: ignore[assignment]  # duck-typed
                return spec
        return None

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _install() -> None:
    module = sys.modules.get("openai")
    if module is not None and hasattr(module, "OpenAI"):
        _adopt_all(module)
    else:
        sys.meta_path.insert(0, _Finder())


_install()
