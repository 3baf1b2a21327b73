# Generated from llmclient/features/_async/batch.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The batcher's I/O: a call joins the open batch or opens one, the batch goes out once, each
caller gets its part (``Batcher`` mixes this in; which calls may share a request and how the
answer is split back are ``features/batch.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._errors import APIStatusError
from ..._synchronization import Event, shield, sleep

if TYPE_CHECKING:
    from ..batch import BatchConfig, _Batch, _Pending

__all__ = ["BatcherIO"]


class BatcherIO:
    config: BatchConfig

    if TYPE_CHECKING:  # Batcher's own, used here
        def _pending(self, body: dict[str, Any], done: Any) -> _Pending: ...
        def _join(self, key: tuple[Any, ...], pending: _Pending) -> tuple[_Batch, bool, bool]: ...
        def _close(self, key: tuple[Any, ...], batch: _Batch) -> None: ...
        @staticmethod
        def _combined(batch: _Batch) -> dict[str, Any]: ...
        @staticmethod
        def _share(batch: _Batch, answer: dict[str, Any], carrier: Any) -> None: ...
        @staticmethod
        def _refused_whole(batch: _Batch, exc: APIStatusError) -> bool: ...

    def submit(self, key: tuple[Any, ...], body: dict[str, Any], send: Callable[[dict[str, Any]], Any]) -> Any:
        """One call of the batch for ``key``: ``(its part of the answer, the carrier, how many
        calls shared the request)``, or the error its request ended with."""
        pending = self._pending(body, Event())
        batch, lead, full = self._join(key, pending)
        if lead:  # the batch goes out whole even if this caller is cancelled meanwhile
            shield(self._flush_sync, key, batch, send, full)
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _flush_sync(
            self, key: tuple[Any, ...], batch: _Batch, send: Callable[[dict[str, Any]], Any], full: bool) -> None:
        if not full and self.config.window_ms > 0:
            sleep(self.config.window_ms / 1000.0)
        self._close(key, batch)
        self._run_sync(batch, send)

    def _run_sync(self, batch: _Batch, send: Callable[[dict[str, Any]], Any]) -> None:
        # Every caller wakes with an answer or an error, whatever ends the request: a
        # cancellation or an interrupt included (BaseException), or its callers would wait forever.
        try:
            if len(batch.calls) == 1:
                batch.calls[0].result = (*send(batch.calls[0].body), 1)
            else:
                answer, carrier = send(self._combined(batch))
                self._share(batch, answer, carrier)
        except APIStatusError as exc:
            if self._refused_whole(batch, exc):
                for pending in batch.calls:  # refused unprocessed: each alone, its error its own
                    try:
                        pending.result = (*send(pending.body), 1)
                    except BaseException as own:
                        pending.error = own
            else:
                for pending in batch.calls:
                    pending.error = exc
        except BaseException as exc:
            for pending in batch.calls:
                pending.error = exc
        finally:
            for pending in batch.calls:
                pending.done.set()
