"""Engines behind the reference server: ``sim`` (a calibrated simulated GPU) and ``torch``.

The interface lives in :mod:`.base`; :func:`create_engine` picks an implementation by name.
``torch`` (real forward passes, optional extra ``torch``) is imported only when asked for.
"""

from __future__ import annotations

from typing import Any

from ..profiles import Profile, list_profiles, load_profile
from .base import (
    ContextLengthError,
    Engine,
    EngineError,
    EngineNotReady,
    EngineOOM,
    EngineOverloaded,
    EngineRequest,
    EngineStats,
    RequestTiming,
    TokenEvent,
)
from .scheduler import Scheduler, StepOutput, StepPlan
from .sim import SimEngine

__all__ = [
    "ENGINES",
    "ContextLengthError",
    "Engine",
    "EngineError",
    "EngineNotReady",
    "EngineOOM",
    "EngineOverloaded",
    "EngineRequest",
    "EngineStats",
    "Profile",
    "RequestTiming",
    "Scheduler",
    "SimEngine",
    "StepOutput",
    "StepPlan",
    "TokenEvent",
    "create_engine",
    "list_profiles",
    "load_profile",
]

ENGINES = ("sim", "torch")


def create_engine(name: str, profile: Profile | str, **kwargs: Any) -> Engine:
    """An engine by name.

    ``sim``: ``profile`` is a :class:`Profile`, a shipped profile name or a JSON path; ``kwargs``
    go to :class:`SimEngine` (``cold_start_s``, ``rng``). ``torch``: a ``profile`` string that
    is not a shipped sim profile names the torch model config (``tiny``, ``1b``, ...; otherwise
    ``auto``); ``kwargs`` go to ``TorchEngine``.
    """
    if name == "sim":
        return SimEngine(profile if isinstance(profile, Profile) else load_profile(profile),
                         **kwargs)
    if name == "torch":
        try:
            from .torch_engine import TorchEngine
        except ImportError as exc:
            raise ImportError(
                f"the torch engine needs the 'torch' extra: pip install 'llmclient[torch]' ({exc})"
            ) from exc
        if isinstance(profile, str) and profile not in list_profiles() and "config" not in kwargs:
            kwargs["config"] = profile
        engine: Engine = TorchEngine(**kwargs)
        return engine
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
