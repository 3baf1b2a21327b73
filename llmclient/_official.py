"""llmclient's clients and errors become the official packages' classes' kind when ``openai`` or
``anthropic`` is imported, so ``isinstance(client, openai.OpenAI)`` (instructor's
``from_openai``, ...), ``isinstance(client, anthropic.Anthropic)`` (``from_anthropic``,
pydantic-ai's ``AnthropicModel``), ``except openai.NotFoundError`` and ``except
anthropic.RateLimitError`` (pydantic-ai, langchain, retry wrappers) hold.

Why this mechanism (docs/ARCHITECTURE.md, "The official classes' kind"):

* ``isinstance`` against the official classes and ``except openai.X`` need real inheritance:
  the official classes are not ABCs (no virtual base), and an ``except`` clause never asks a
  ``__subclasscheck__`` anyway.
* Subclassing the official classes at definition time would import ``openai`` (and
  ``anthropic``) with ``import llmclient`` (about 4x the import time of llmclient itself).

So each registered class of llmclient (``register``) gains the official class of the same
name in each package it is registered for as a base (``cls.__bases__ += (official,)``) at the
moment that package finishes importing: at once when it is imported already, else from a
one-shot import hook (``_Finder``), whoever imports it. Every class and every instance, made
before or after, is then of the official kind, ``issubclass(llmclient.NotFoundError,
openai.NotFoundError)`` included, and ``import llmclient`` imports nothing more. The error
classes are registered for both packages: one tree of errors, each the official class of its
name in both (the two official trees are parallel, so the classes' order stays consistent),
the root ``OpenAIError`` standing for ``anthropic.AnthropicError`` (:data:`ALIASES`).
llmclient's own classes come first in the method resolution order, so its pipeline,
attributes and figures are unchanged; the official client's attributes that llmclient's client
does not have are hidden (``_Hidden``) so that one of them never runs on a client the official
``__init__`` did not set up (``client.base_url`` stays llmclient's instance attribute, not the
official property). Without a package installed nothing is patched for it and its hook never
fires.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import importlib.machinery
    from collections.abc import Iterable

__all__ = ["ALIASES", "PACKAGES", "adopted", "register"]

# The official packages llmclient's classes stand in for.
PACKAGES = ("openai", "anthropic")
# Where the official class of a name is called otherwise in a package (llmclient's error root is
# named as openai's).
ALIASES: dict[str, dict[str, str]] = {"anthropic": {"OpenAIError": "AnthropicError"}}

# (our class, whether to hide the official attributes it lacks, its packages), parents first
_REGISTERED: list[tuple[type, bool, tuple[str, ...]]] = []
_lock = threading.Lock()
_modules: dict[str, types.ModuleType] = {}  # each package once imported and its classes adopted


def register(*classes: type, hide: bool = False, packages: Iterable[str] = ("openai",)) -> None:
    """Give each class the official class of its name in each of ``packages`` as a base once
    that package is imported (now, if it is). ``hide``: the official attributes it lacks read
    as missing."""
    names = tuple(packages)
    with _lock:
        _REGISTERED.extend((cls, hide, names) for cls in classes)
        modules = [(name, _modules[name]) for name in names if name in _modules]
    for name, module in modules:
        for cls in classes:
            _adopt(cls, module, name, hide)


def adopted(package: str = "openai") -> bool:
    """Whether the classes registered for ``package`` are its official kind (it was imported)."""
    return package in _modules


def official_twin(cls: type, module: types.ModuleType, package: str = "openai") -> type | None:
    """The official class ``cls`` stands for in ``module``: the one of its name, if any."""
    name = ALIASES.get(package, {}).get(cls.__name__, cls.__name__)
    official = module.__dict__.get(name)
    return official if isinstance(official, type) and official is not cls else None


def _adopt_all(package: str, module: types.ModuleType) -> None:
    with _lock:
        if package in _modules:
            return
        _modules[package] = module
        registered = [(cls, hide) for cls, hide, names in _REGISTERED if package in names]
    for cls, hide in registered:
        _adopt(cls, module, package, hide)


def _adopt(cls: type, module: types.ModuleType, package: str, hide: bool) -> None:
    official = official_twin(cls, module, package)
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
    """Wraps the loader of an official package for its import only: runs it, then adopts.
    (Duck-typed, as the import system allows: ``importlib.abc`` would add six modules to
    ``import llmclient``.)"""

    def __init__(self, loader: Any, finder: _Finder, package: str) -> None:
        self.loader, self.finder, self.package = loader, finder, package

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
        self.finder.done(self.package)
        _adopt_all(self.package, module)

    def __getattr__(self, name: str) -> Any:  # is_package, get_resource_reader, ...
        return getattr(self.loader, name)


class _Finder:
    """One-shot per package: finds an official package with the other finders and wraps its
    loader (``_Loader``); gone once every package it waits for was imported."""

    def __init__(self, packages: Iterable[str]) -> None:
        self.pending = set(packages)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.pending:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self, fullname)  # type: ignore[assignment]  # duck-typed
                return spec
        return None

    def done(self, package: str) -> None:
        self.pending.discard(package)
        if not self.pending:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass


# The attribute that tells an official package imported whole from one being imported.
_MARKERS = {"openai": "OpenAI", "anthropic": "Anthropic"}


def _install() -> None:
    pending = []
    for package in PACKAGES:
        module = sys.modules.get(package)
        if module is not None and hasattr(module, _MARKERS[package]):
            _adopt_all(package, module)
        else:
            pending.append(package)
    if pending:
        sys.meta_path.insert(0, _Finder(pending))


_install()
