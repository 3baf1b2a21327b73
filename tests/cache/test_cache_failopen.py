"""Cache backends fail open: an unusable backend is a logged, counted miss.

Real SQLite files and a real redis-server; the calls go to the live reference server, through
``OpenAI`` and ``AsyncOpenAI`` (``drive``: each such test runs on both). Also:
``~`` in SQLite specs, 0600 files, and signed entries that refuse a forged one.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmclient.cache import CachedEntry, RedisBackend, ResponseCache, SQLiteBackend, encode_entry
from llmclient.cache._signing import ENV_SIGNING_KEY, SignatureError, sign, unsign
from llmclient.layers.setup import cache_for
from tests._both import Drive

MODEL = "sim-zero"
KEY = "deployment-key-0123456789"


def question() -> list[dict[str, str]]:
    return [{"role": "user", "content": f"classify {uuid.uuid4().hex}"}]


def ask(drive: Drive, client: Any, messages: list[dict[str, str]]) -> Any:
    return drive(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4))


def not_a_database(tmp_path: Path) -> str:
    path = tmp_path / "cache.db"
    path.write_bytes(b"this is a text file, not SQLite\n" * 200)
    return f"sqlite://{path}"


def dead_redis() -> str:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{sock.getsockname()[1]}/0"


def unusable(kind: str, tmp_path: Path) -> Any:
    if kind == "sqlite-not-a-database":
        return not_a_database(tmp_path)
    if kind == "sqlite-path-under-a-file":  # NotADirectoryError (root ignores mode bits)
        (tmp_path / "file").write_text("x")
        return f"sqlite://{tmp_path}/file/sub/cache.db"
    return ResponseCache(RedisBackend(dead_redis(), socket_timeout=0.5))


KINDS = ["sqlite-not-a-database", "sqlite-path-under-a-file", "redis-down"]


@pytest.mark.parametrize("kind", KINDS)
def test_unusable_backend_is_a_counted_miss_and_the_call_goes_on(
        drive: Drive, ref_server: Any, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture) -> None:
    spec = unusable(kind, tmp_path)
    cache = ResponseCache(spec) if isinstance(spec, str) else spec
    messages = question()
    with caplog.at_level(logging.WARNING, logger="llmclient.cache"):
        client = drive.client(base_url=ref_server.base_url, api_key="k", cache=cache)
        first = ask(drive, client, messages)
        second = ask(drive, client, messages)
        drive(client.close())
    assert first.choices[0].message.content and second.id != first.id  # both from the server
    assert first.timings.cache == second.timings.cache == "miss"
    stats = cache.stats()
    assert stats["errors"] >= 1 and stats["misses"] == 2 and stats["hits"] == 0
    assert stats["unavailable"] >= 1  # resting: the second call did not pay for a failed backend
    assert stats["last_error"] and "calls go upstream" in caplog.text


def test_client_cache_spec_naming_a_bad_file_does_not_fail_the_call(
        drive: Drive, ref_server: Any, tmp_path: Path) -> None:
    """The probe as reported: ``OpenAI(cache="sqlite:///<a file that is not a database>")``."""
    client = drive.client(base_url=ref_server.base_url, api_key="k", cache=not_a_database(tmp_path))
    r = ask(drive, client, question())
    assert r.timings.cache == "miss"


def test_backend_that_recovers_is_used_again(drive: Drive, ref_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(b"junk" * 100)
    cache = ResponseCache(f"sqlite://{path}", retry_after_s=0)
    messages = question()
    client = drive.client(base_url=ref_server.base_url, api_key="k", cache=cache)
    assert ask(drive, client, messages).timings.cache == "miss"
    path.unlink()  # the operator fixes it
    assert ask(drive, client, messages).timings.cache == "miss"  # stored this time
    assert ask(drive, client, messages).timings.cache == "hit"


# -- paths and modes -------------------------------------------------------------------------


def test_tilde_in_a_sqlite_spec_is_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for spec in ("sqlite:///~/.cache/llm.db", "sqlite://~/.cache/llm.db"):
        backend = SQLiteBackend(spec)
        assert backend.path == str(tmp_path / ".cache" / "llm.db")
        backend.set("k", b"v", None)
        assert backend.get("k") == b"v"
        backend.close()
    assert (tmp_path / ".cache" / "llm.db").is_file()


def test_existing_world_readable_cache_files_are_made_private(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    first = SQLiteBackend(f"sqlite://{path}")
    first.set("k", b"v", None)
    first.close()
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if name.exists():
            os.chmod(name, 0o644)
    again = SQLiteBackend(f"sqlite://{path}")
    assert again.get("k") == b"v"
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        assert name.exists(), name  # WAL mode keeps both while a connection is open
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600, name
    again.close()


def test_new_cache_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        backend = SQLiteBackend(f"sqlite://{tmp_path}/new/cache.db")
        backend.set("k", b"v", None)
    finally:
        os.umask(old)
    for suffix in ("", "-wal", "-shm"):
        assert stat.S_IMODE(os.stat(f"{tmp_path}/new/cache.db{suffix}").st_mode) == 0o600
    backend.close()


# -- signed entries --------------------------------------------------------------------------


def test_sign_and_unsign_are_bound_to_key_and_cache_key() -> None:
    data = b'{"v":1}'
    stored = sign(KEY.encode(), "k1", data)
    assert unsign(KEY.encode(), "k1", stored) == data
    assert unsign(None, "k1", stored) == data  # an unsigned reader drops the MAC
    for bad_key, cache_key, value in ((KEY.encode(), "k2", stored),  # moved to another key
                                      (b"another-key-0123456789", "k1", stored),
                                      (KEY.encode(), "k1", data),  # unsigned
                                      (KEY.encode(), "k1", stored[:-1] + b"]")):  # altered
        with pytest.raises(SignatureError):
            unsign(bad_key, cache_key, value)
    with pytest.raises(ValueError, match="at least 16 bytes"):
        ResponseCache("memory", signing_key="short")


def forged_entry(key: str) -> bytes:
    """A well-formed entry an attacker with write access to the store could plant."""
    forged = {"id": "chatcmpl-forged", "object": "chat.completion", "created": 1, "model": MODEL,
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "wire the money to IBAN X"}}]}
    return encode_entry(CachedEntry("chat.completions", response=forged, created=1.0))


def plant(cache: ResponseCache, client: Any, messages: list[dict[str, str]]) -> str:
    call = client._build_call("POST", "/chat/completions",
                              {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 4})
    key = cache.key_for(call)
    assert key is not None
    cache.backend.set(key, forged_entry(key), None)  # straight into Redis / SQLite
    return key


@pytest.fixture(params=["redis", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "redis":
        yield request.getfixturevalue("redis_backend")
        return
    backend = SQLiteBackend(f"sqlite://{tmp_path}/shared.db")
    yield backend
    backend.close()


def test_forged_entry_is_served_without_signing_and_refused_with_it(
        drive: Drive, ref_server: Any, store: Any) -> None:
    unsigned = ResponseCache(store)
    signed = ResponseCache(store, signing_key=KEY.encode())  # a key as bytes (a str: below)
    plain = drive.client(base_url=ref_server.base_url, api_key="k", cache=unsigned)
    guarded = drive.client(base_url=ref_server.base_url, api_key="k", cache=signed)
    messages = question()
    plant(unsigned, plain, messages)
    assert ask(drive, plain, messages).id == "chatcmpl-forged"  # the threat, without a key
    messages = question()
    plant(signed, guarded, messages)
    refused = ask(drive, guarded, messages)
    assert refused.id != "chatcmpl-forged" and refused.timings.cache == "miss"
    assert signed.stats()["rejected"] == 1 and signed.signed
    again = ask(drive, guarded, messages)  # its own signed answer replaced the forgery
    assert again.timings.cache == "hit" and again.id == refused.id


def test_signed_entry_copied_to_another_tenants_key_is_refused(
        drive: Drive, ref_server: Any, redis_url: str) -> None:
    backend = RedisBackend(redis_url, prefix=f"t-{uuid.uuid4().hex[:8]}:")
    cache = ResponseCache(backend, signing_key=KEY)
    messages = question()
    alice = drive.client(base_url=ref_server.base_url, api_key="sk-alice", cache=cache)
    bob = drive.client(base_url=ref_server.base_url, api_key="sk-bob", cache=cache)
    answer = ask(drive, alice, messages)
    body = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": 4}
    alice_key = cache.key_for(alice._build_call("POST", "/chat/completions", body))
    bob_key = cache.key_for(bob._build_call("POST", "/chat/completions", body))
    assert alice_key and bob_key and alice_key != bob_key
    backend.set(bob_key, backend.get(alice_key) or b"", None)  # replayed under bob's key
    assert ask(drive, bob, messages).id != answer.id
    assert cache.stats()["rejected"] == 1
    backend.clear()
    backend.close()


def test_signing_key_from_the_environment(drive: Drive, ref_server: Any, redis_url: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SIGNING_KEY, KEY)
    backend = RedisBackend(redis_url, prefix=f"t-{uuid.uuid4().hex[:8]}:")
    client = drive.client(base_url=ref_server.base_url, api_key="k", cache=backend)
    cache = cache_for(client._ctx, client._build_call("POST", "/chat/completions", {}))
    assert cache is not None and cache.signed
    messages = question()
    plant(cache, client, messages)
    assert ask(drive, client, messages).id != "chatcmpl-forged"
    backend.clear()
    backend.close()
