# Generated from llmclient/features/_async/prefetch.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""Speculation's sends and waits: an app call's lookup around a prefetch, the prefetches and
warm-ups in the background, ``client.warm(...)`` and its keep-warm timer, and close
(``features/prefetch.py`` tells the whole story; the state and decisions are
``features/prefetch_state.py``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from llmclient.speculative import Prefetch, run_in_thread

from ..._synchronization import Background, Event
from ...pipeline.call import Call
from .. import otel as _otel
from ..prefetch_state import (
    CLOSE_WAIT_S,
    SpeculationState,
    _build_prefetch_call,
    _chain,
    _Claim,
    _completion_tokens,
    _count_warm,
    _failure,
    _identity,
    _keep_warm_ttl,
    _keeper,
    _KeepWarm,
    _match_for,
    _next_wait,
    _refresh_failed,
    _settle,
    _single_use,
    _stop,
    _warm_call,
    _warm_tokens,
    log,
)

if TYPE_CHECKING:
    from ..port import Port

__all__ = ["close", "lookup", "warm"]


# -- lookup: every app call ---------------------------------------------------------------

def lookup(port: Port, state: SpeculationState, call: Call) -> Any:
    """The cache stage with speculation around it."""
    observed = _match_for(state, call)
    if observed is None:
        return port.lookup(call)
    match, wasted = observed
    for item in wasted:
        if item.single_use:
            _discard_sync(item.cache, item.cache_key)
    if match is not None and match.prefetch is not None and call.stream:
        # Streams do not join in the cache; wait on the prefetch's flight, then replay it.
        flight = match.cache.flights.begin(match.cache_key)
        if flight.leader:
            flight.fail()
        else:
            flight.wait(call.timeout.read)
    handle = port.lookup(call)
    if match is not None:
        handle, discard = _settle(state, call, match, handle)
        if discard:
            _discard_sync(match.cache, match.cache_key)
    _chain(port, state, call, handle, _start_sync)
    return handle


def _discard_sync(cache: Any, key: str) -> None:
    try:
        cache.backend.delete(key)
    except Exception:
        log.warning("speculation: could not delete single-use entry %s", key, exc_info=True)


# -- after: start prefetches ---------------------------------------------------------------

def _start_sync(port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch) -> None:
    """Start one planned prefetch in the background (``run_in_thread``)."""
    pcall = _build_prefetch_call(port, state, origin, prefetch)
    if prefetch.kind == "warm":
        run_in_thread(state.speculator, prefetch, lambda p: _send_warm(port, state, origin, pcall))
        return
    claimed = _claim(port, state, prefetch, pcall)
    if claimed is not None:
        plan, claim, flight = claimed
        run_in_thread(
            state.speculator, prefetch, lambda p: _send_followup(port, state, origin, p, pcall, plan, claim, flight))


def _claim(port: Port, state: SpeculationState, prefetch: Prefetch, pcall: Call) -> tuple[Any, _Claim, Any] | None:
    """Lead the prefetch's single-flight now, before the app can ask: its identical call joins."""
    cache = port.cache_for(pcall)
    plan = cache.plan(pcall) if cache is not None else None
    if plan is None:
        state.refuse("no cache plan for the prefetch")
        state.speculator.done(prefetch, tokens=0, error=None)
        return None
    flight = cache.flights.begin(plan.key)
    if not flight.leader:
        state.refuse("already in flight")
        state.speculator.done(prefetch, tokens=0, error=None)
        return None
    claim = _Claim(plan.key, _single_use(port, pcall.body or {}), cache, pcall.scope)
    state.claim(prefetch, claim)
    prefetch.token.on_cancel(flight.fail)
    return plan, claim, flight


def _send_followup(
        port: Port, state: SpeculationState, origin: Call, prefetch: Prefetch, pcall: Call, plan: Any,
        claim: _Claim, flight: Any) -> int:
    started = time.perf_counter()
    chunks: list[dict[str, Any]] = []
    resolved = False
    try:
        if prefetch.token.cancelled:
            return 0
        stream = port.request(pcall, _identity, False, _identity)
        it = iter(stream)
        try:
            for chunk in it:
                chunks.append(chunk)
                if prefetch.token.cancelled:
                    break  # closing below resets the stream: the server stops generating
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
            stream.close()
        tokens = _completion_tokens(chunks)
        if prefetch.token.cancelled:
            state.speculator.note_wasted(tokens)
            _otel.prefetch_wasted(1)
            return tokens
        entry = type(claim.cache).entry_for_stream(plan, chunks)
        if entry is not None:
            flight.resolve(entry)
            resolved = True
            state.land(prefetch, claim, tokens, (time.perf_counter() - started) * 1000.0)
        return tokens
    except Exception as exc:
        raise _failure(state, pcall, origin.trace.trace_id, exc) from exc
    except BaseException:
        # Cancelled or interrupted mid-stream (a task is cancelled with its token; a thread only
        # sees the token): the stream's own cleanup has reset it (RST_STREAM); what came was wasted.
        state.speculator.note_wasted(_completion_tokens(chunks))
        _otel.prefetch_wasted(1)
        raise
    finally:
        if not resolved:
            flight.fail()
            state.unclaim(prefetch, pcall.scope)


def _send_warm(port: Port, state: SpeculationState, origin: Call, wcall: Call) -> int:
    try:
        return _warm_tokens(port.request(wcall, _identity))
    except Exception as exc:
        raise _failure(state, wcall, origin.trace.trace_id, exc) from exc


# -- client.warm(...) ----------------------------------------------------------------------

def warm(port: Port, state: SpeculationState, keep_warm: bool | float, args: dict[str, Any]) -> Any:
    """``client.warm(...)``: send the prefix now (raises on failure); maybe keep it warm."""
    ttl = _keep_warm_ttl(state, keep_warm)
    result = port.request(_warm_call(port, state, args), port.chat_completion)
    _count_warm(state)
    if ttl is not None:
        keeper = _keeper(args, ttl, Event())
        state.keep(keeper)
        keeper.runner = Background(_refresh_loop_sync, port, state, keeper, name="llmclient-keep-warm")
    return result


def _refresh_loop_sync(port: Port, state: SpeculationState, keeper: _KeepWarm) -> None:
    while not keeper.stop.wait(_next_wait(keeper)):
        if time.monotonic() - keeper.last_used < keeper.interval_s:
            continue
        keeper.last_used = time.monotonic()
        try:
            port.request(_warm_call(port, state, keeper.call_args), _identity)
            _count_warm(state)
        except Exception as exc:
            _refresh_failed(state, exc)


# -- close ---------------------------------------------------------------------------------

def close(state: SpeculationState) -> None:
    """Stop keep-warm timers and cancel prefetches in flight (``client.close()``)."""
    for keeper in _stop(state):
        if keeper.runner is not None:  # a refresh in progress ends (its own timeout bounds it)
            keeper.runner.close(CLOSE_WAIT_S)
