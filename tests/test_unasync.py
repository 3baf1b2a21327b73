"""scripts/unasync.py: the sync twins of every ``_async`` folder under llmclient/ are generated, and current."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["unasync"] = module
    spec.loader.exec_module(module)
    return module


unasync = _load()

ASYNC = '''"""The async client: ``await AsyncOpenAI().aclose()``."""
import asyncio

from .._streaming import AsyncStream


class AsyncPipeline:
    async def _send(self, call: int) -> int:  # AsyncOpenAI only
        async with self._lock:
            response = await self._transport.send(call)
        async for chunk in response.aiter_bytes():
            pass
        await asleep(0.1)
        x = await race_async(shared_async_transport)  # unasync: sync=x = race_sync(hand_written)
        return AsyncStream(response)

    async def __aenter__(self) -> "AsyncPipeline":
        raise StopAsyncIteration

    def loop(self) -> None:
        asyncio.get_running_loop()
'''

SYNC = '''"""The sync client: ``OpenAI().close()``."""
import asyncio

from .._streaming import Stream


class Pipeline:
    def _send(self, call: int) -> int:  # OpenAI only
        with self._lock:
            response = self._transport.send(call)
        for chunk in response.iter_bytes():
            pass
        sleep(0.1)
        x = race_sync(hand_written)
        return Stream(response)

    def __enter__(self) -> "Pipeline":
        raise StopIteration

    def loop(self) -> None:
        asyncio.get_running_loop()
'''


def test_a_module_becomes_its_sync_twin_line_for_line() -> None:
    out = unasync.unasync_source(ASYNC)
    assert out == SYNC
    assert len(out.splitlines()) == len(ASYNC.splitlines())
    ast.parse(out)


@pytest.mark.parametrize(("name", "sync"), [
    ("AsyncOpenAI", "OpenAI"), ("AsyncTransport", "SyncTransport"), ("aclose_all", "close_all"),
    ("__aexit__", "__exit__"), ("shared_async_transport", "shared_sync_transport"),
    ("asyncio", "asyncio"), ("Asyncio", "Asyncio"), ("abegin", "begin"), ("anext", "next"),
    ("_AsyncAttempts", "_Attempts"), ("StopAsyncIteration", "StopIteration"), ("async_", "sync_"),
    ("async_parse", "parse"), ("async_models_page", "models_page"),
])
def test_names(name: str, sync: str) -> None:
    assert unasync.rename(name) == sync


def test_check_fails_on_a_stale_or_orphaned_twin_and_run_fixes_it(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    source, target = tmp_path / "_async", tmp_path / "_sync"
    source.mkdir()
    (source / "client.py").write_text(ASYNC)
    assert unasync.run(source, target, check=True) == 1  # missing
    assert unasync.run(source, target, check=False) == 0
    assert (target / "client.py").read_text().endswith(SYNC)
    assert unasync.run(source, target, check=True) == 0
    (target / "client.py").write_text((target / "client.py").read_text() + "# edited by hand\n")
    (target / "orphan.py").write_text("")
    capsys.readouterr()
    assert unasync.run(source, target, check=True) == 1
    out = capsys.readouterr().out
    assert "-# edited by hand" in out and "orphan.py has no source" in out
    assert unasync.run(source, target, check=False) == 0
    assert not (target / "orphan.py").exists()
    assert unasync.run(source, target, check=True) == 0


def test_the_repository_twins_are_current() -> None:
    found = unasync.pairs(ROOT / "llmclient")
    assert found, "no _async source folder under llmclient/"
    for source, target in found:
        assert unasync.run(source, target, check=True) == 0, source


def test_every_async_folder_under_a_package_is_a_source(tmp_path: Path) -> None:
    for folder in ("pkg/_async", "pkg/sub/_async", "pkg/sub/_sync", "pkg/other"):
        (tmp_path / folder).mkdir(parents=True)
    assert unasync.pairs(tmp_path / "pkg") == [
        (tmp_path / "pkg/_async", tmp_path / "pkg/_sync"),
        (tmp_path / "pkg/sub/_async", tmp_path / "pkg/sub/_sync"),
    ]
