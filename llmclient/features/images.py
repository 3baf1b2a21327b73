"""Prepare stage: image parts of a chat payload go through ``preprocess`` before encoding.

For every ``{"type": "image_url", "image_url": {"url": ...}}`` part whose url is a data URL,
a ``pathlib.Path``, an open binary file object or a PIL image, the image is resized for its
target, stripped of metadata and re-encoded, and the url replaced by the prepared data URL.
``http(s)`` URLs are left for the server unless the options ask to fetch them.

Local files only from the caller's code: message content often comes from end users, so a
*string* is never read as a file. ``"../../etc/passwd"``, ``"/dev/zero"`` or
``"file:///proc/self/environ"`` in a message are sent to the server as they are (it rejects
them). A ``Path`` or file object can only have been put there by the program. Paths must name
regular files (no devices, FIFOs, /proc or /sys) of at most ``preprocess.MAX_SOURCE_BYTES``.
The ``local_paths=True`` option (``images={"local_paths": True}``) also reads path strings
and ``file://`` URLs, for programs whose messages never hold end-user text.

Options (``CallOptions.images``, or the value itself): ``None``/``True`` on, target inferred
from ``detail`` (``"low"`` -> ``openai-low``, else ``openai-high``); ``False`` off; a target
name or ``preprocess.Target``; or a dict with any of ``target``, ``fetch``, ``webp``,
``quality``, ``max_input_pixels``, ``local_paths``.

Preparation is cached per process by (content SHA-256, settings) in a bounded LRU, so a
conversation that resends its image every turn pays once (a data URL is also found by the
digest of its text, without decoding it); a prepared image sent again is recognised by its own
digest and passes unchanged. ``cache_info()`` counts hits and misses. Pillow and ``preprocess`` are imported
only when a payload has images, so ``import llmclient`` stays cheap.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit

import httpx

from .image_settings import ImageSettings, resolve_settings

__all__ = [
    "CacheInfo",
    "ImageSettings",
    "ImageStats",
    "cache_info",
    "clear_cache",
    "prepare_payload",
    "resolve_settings",
]

_CACHE_MAX_ENTRIES = 256
_CACHE_MAX_BYTES = 64 * 1024 * 1024  # data URLs held; a 1024x768 photo is ~0.5-0.8 MB
_FETCH_MAX_BYTES = 50 * 1024 * 1024
_FETCH_TIMEOUT_S = 30.0
_MAX_WORKERS = 4


@dataclass(frozen=True)
class ImageStats:
    """What the prepare stage did for one call."""

    count: int = 0  # images prepared (cache hits included)
    # Bytes in and out, over the images whose source size is known (not PIL images).
    bytes_before: int = 0
    bytes_after: int = 0
    prep_ms: float = 0.0  # wall time of the whole stage (images run in parallel)
    cache_hits: int = 0
    # Per image, in message order: the JPEG/WebP quality used (None: PNG) and how it was
    # chosen ("measured", "budget", "fallback", "small", "fixed"; None: PNG).
    qualities: tuple[int | None, ...] = ()
    quality_sources: tuple[str | None, ...] = ()

    @property
    def bytes_saved(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)


def prepare_payload(body: dict[str, Any], options: Any = None) -> tuple[dict[str, Any], ImageStats]:
    """Prepare every local image part of a chat ``body``; returns a new body and the stats.

    The caller's body is never mutated. A bad image raises a ``preprocess.ImageError``
    subclass whose message starts with ``messages[i].content[j]``.
    """
    started = time.perf_counter()
    settings = resolve_settings(options)
    jobs = _find_jobs(body, settings) if settings.enabled else []
    if not jobs:
        return body, ImageStats()
    results = _run(jobs, settings)
    new_body = _rewrite(body, jobs, [r.data_url for r in results])
    stats = ImageStats(
        count=len(results),
        bytes_before=sum(r.bytes_before or 0 for r in results),
        bytes_after=sum(r.bytes_after for r in results if r.bytes_before is not None),
        prep_ms=(time.perf_counter() - started) * 1000.0,
        cache_hits=sum(r.hit for r in results),
        qualities=tuple(r.quality for r in results),
        quality_sources=tuple(r.quality_source for r in results),
    )
    return new_body, stats


# -- finding the parts (pure) ---------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    message: int
    part: int
    source: Any  # data URL, PurePath, file object, PIL image, or http(s) URL to fetch
    target: Any
    remote: bool

    @property
    def where(self) -> str:
        return f"messages[{self.message}].content[{self.part}]"


def _find_jobs(body: dict[str, Any], settings: ImageSettings) -> list[_Job]:
    jobs = []
    for mi, message in enumerate(body.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for pi, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "image":  # Anthropic's image block
                data_url = _anthropic_data_url(part)
                if data_url is not None:
                    jobs.append(_Job(mi, pi, data_url, settings.target or "anthropic", remote=False))
                continue
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            image_url = part.get("image_url")
            url = image_url.get("url") if isinstance(image_url, dict) else image_url
            detail = image_url.get("detail") if isinstance(image_url, dict) else None
            kind = _classify(url, settings.fetch, settings.local_paths)
            if kind is None:
                continue
            target = settings.target or ("openai-low" if detail == "low" else "openai-high")
            source = _as_path(url) if kind == "path-string" and isinstance(url, str) else url
            jobs.append(_Job(mi, pi, source, target, remote=kind == "remote"))
    return jobs


def _anthropic_data_url(part: dict[str, Any]) -> str | None:
    """An Anthropic ``{"type": "image", "source": {"type": "base64", ...}}`` block as a data URL
    (a ``url`` or ``file`` source is the server's to fetch: left alone)."""
    source = part.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return None
    media, data = source.get("media_type"), source.get("data")
    if not isinstance(media, str) or not isinstance(data, str):
        return None
    return f"data:{media};base64,{data}"


def _classify(url: Any, fetch: bool, local_paths: bool = False) -> str | None:
    """"local" (prepare), "path-string" (a path string, read only when opted in), "remote"
    (fetch, then prepare) or None (leave the part alone: the server's to resolve or reject).

    A string is a URL, never a file name, unless ``local_paths``: only the program itself can
    put a ``Path``, a file object or a PIL image into a message."""
    if isinstance(url, str):
        if url.startswith("data:"):
            return "local"
        if url.startswith(("http://", "https://")):
            return "remote" if fetch else None
        if local_paths and (url.startswith(("file:///", "file://localhost/")) or "://" not in url):
            return "path-string"
        return None  # a path, file://, gs://, s3://...: sent as it is
    if isinstance(url, (PurePath, os.PathLike)):
        return "local"
    if type(url).__module__.startswith("PIL."):
        return "local"
    if isinstance(url, io.IOBase) or callable(getattr(url, "read", None)):
        return "local"  # an open binary file object
    return None


def _as_path(url: str) -> Path:
    """A path string or local ``file://`` URL (RFC 8089: ``file:///abs/path``) as a Path."""
    if url.startswith("file://"):
        return Path(unquote(urlsplit(url).path))
    return Path(url)


def _rewrite(body: dict[str, Any], jobs: list[_Job], urls: list[str]) -> dict[str, Any]:
    """A copy of ``body`` with the given parts' urls replaced (copy on write, shallow)."""
    messages = list(body["messages"])
    contents: dict[int, list[Any]] = {}
    for job, url in zip(jobs, urls, strict=True):
        if job.message not in contents:
            message = dict(messages[job.message])
            contents[job.message] = message["content"] = list(message["content"])
            messages[job.message] = message
        part = dict(contents[job.message][job.part])
        if part.get("type") == "image":  # Anthropic's block: the data URL back into its source
            media, _, data = url[5:].partition(";base64,")
            part["source"] = {**part["source"], "media_type": media, "data": data}
            contents[job.message][job.part] = part
            continue
        old = part.get("image_url")
        part["image_url"] = {**old, "url": url} if isinstance(old, dict) else {"url": url}
        contents[job.message][job.part] = part
    return {**body, "messages": messages}


# -- preparing (I/O + CPU, in threads) ------------------------------------------------------


@dataclass(frozen=True)
class _Result:
    data_url: str
    bytes_before: int | None
    bytes_after: int
    hit: bool = False
    quality: int | None = None
    quality_source: str | None = None


class CacheInfo(NamedTuple):
    """Process-wide counters of the prepared-image cache (like ``functools`` ``cache_info``)."""

    hits: int
    misses: int
    entries: int
    bytes: int  # size of the data URLs held


class _LRU:
    """Bounded by entry count and by the bytes of the data URLs held. Several keys (content
    digest, data-URL digest, our own output's digest) share one data URL string, which is
    counted once while any of them holds it."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self._items: OrderedDict[tuple[Any, ...], _Result] = OrderedDict()
        self._refs: dict[int, int] = {}  # id(data_url) -> entries holding it
        self._lock = threading.Lock()
        self._bytes = 0
        self.hits = self.misses = 0
        self.max_entries, self.max_bytes = max_entries, max_bytes

    def get(self, key: tuple[Any, ...], count: bool = True) -> _Result | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            if count:
                self._count(item is not None)
            return item

    def count(self, hit: bool) -> None:
        with self._lock:
            self._count(hit)

    def _count(self, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.hits, self.misses, len(self._items), self._bytes)

    def put(self, key: tuple[Any, ...], value: _Result) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._release(old)
            self._items[key] = value
            refs = self._refs.get(id(value.data_url), 0)
            self._refs[id(value.data_url)] = refs + 1
            if refs == 0:
                self._bytes += len(value.data_url)
            while self._items and (
                len(self._items) > self.max_entries or self._bytes > self.max_bytes
            ):
                self._release(self._items.popitem(last=False)[1])

    def _release(self, item: _Result) -> None:
        refs = self._refs.pop(id(item.data_url)) - 1
        if refs:
            self._refs[id(item.data_url)] = refs
        else:
            self._bytes -= len(item.data_url)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._refs.clear()
            self._bytes = 0
            self.hits = self.misses = 0


_cache = _LRU(_CACHE_MAX_ENTRIES, _CACHE_MAX_BYTES)
_executor: Executor | None = None
_executor_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every prepared image and reset the counters (tests, or to free memory)."""
    _cache.clear()


def cache_info() -> CacheInfo:
    """Hits, misses, entries and bytes of the process-wide prepared-image cache."""
    return _cache.info()


def _pool() -> Executor:
    global _executor
    with _executor_lock:
        if _executor is None:
            workers = min(_MAX_WORKERS, os.cpu_count() or 1)
            _executor = ThreadPoolExecutor(workers, thread_name_prefix="llmclient-images")
        return _executor


def _run(jobs: list[_Job], settings: ImageSettings) -> list[_Result]:
    # llmclient.preprocess loads Pillow: only a call that carries an image loads it
    from llmclient.preprocess import ImageError

    def one(job: _Job) -> _Result:
        try:
            return _prepare_one(job, settings)
        except ImageError as exc:
            raise exc.at(job.where) from exc

    if len(jobs) == 1:
        return [one(jobs[0])]
    # Pillow releases the GIL while decoding, resampling and encoding: threads overlap.
    futures = [_pool().submit(one, job) for job in jobs]
    return [f.result() for f in futures]  # the first failing part, in message order


def _prepare_one(job: _Job, settings: ImageSettings) -> _Result:
    # llmclient.preprocess loads Pillow: only a call that carries an image loads it
    from llmclient.preprocess import (
        DEFAULT_MAX_INPUT_PIXELS,
        get_target,
        prepare_image,
        read_source,
    )

    target = get_target(job.target)
    limit = DEFAULT_MAX_INPUT_PIXELS if settings.max_input_pixels == -1 else settings.max_input_pixels
    key_tail = (target, settings.webp, settings.quality, limit)
    # A data URL resent as is (every turn of a conversation) is found by the digest of its
    # text, which skips the base64 decode: most of a hit's cost for a 12 MP photo.
    url_key = _url_digest(job.source)
    if url_key is not None:
        cached = _cache.get((url_key, *key_tail), count=False)
        if cached is not None:
            _cache.count(hit=True)
            return _hit(cached)
    raw = _fetch(job.source) if job.remote else read_source(job.source)
    digest = _digest(raw)
    cached = _cache.get((digest, *key_tail))
    if cached is not None:
        if url_key is not None:
            _cache.put((url_key, *key_tail), cached)
        return _hit(cached)
    prepared = prepare_image(
        raw, target, quality=settings.quality, webp=settings.webp, max_input_pixels=limit
    )
    result = _Result(prepared.data_url, prepared.bytes_before, prepared.bytes_after,
                     quality=prepared.quality, quality_source=prepared.quality_source)
    _cache.put((digest, *key_tail), result)
    if url_key is not None:
        _cache.put((url_key, *key_tail), result)
    # Our own output sent again (e.g. copied from an earlier request) passes unchanged.
    own = _Result(result.data_url, prepared.bytes_after, prepared.bytes_after,
                  quality=prepared.quality, quality_source=prepared.quality_source)
    _cache.put((hashlib.sha256(prepared.data).hexdigest(), *key_tail), own)
    _cache.put((_url_digest(result.data_url), *key_tail), own)
    return result


def _hit(cached: _Result) -> _Result:
    return _Result(cached.data_url, cached.bytes_before, cached.bytes_after, hit=True,
                   quality=cached.quality, quality_source=cached.quality_source)


def _url_digest(source: Any) -> str | None:
    if not (isinstance(source, str) and source.startswith("data:")):
        return None
    return "url:" + hashlib.sha256(source.encode("ascii", "surrogateescape")).hexdigest()


def _digest(raw: Any) -> str:
    if isinstance(raw, bytes):
        return hashlib.sha256(raw).hexdigest()
    h = hashlib.sha256(f"{raw.mode}:{raw.size}".encode())
    h.update(raw.tobytes())
    return h.hexdigest()


def _fetch(url: str) -> bytes:
    """Download an http(s) image (only when the caller asked for it)."""
    # llmclient.preprocess loads Pillow: only a call that carries an image loads it
    from llmclient.preprocess import ImageSourceError

    try:
        with httpx.stream("GET", url, timeout=_FETCH_TIMEOUT_S, follow_redirects=True) as resp:
            resp.raise_for_status()
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > _FETCH_MAX_BYTES:
                    raise ImageSourceError(f"image at {url} is larger than {_FETCH_MAX_BYTES:,} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
    except httpx.HTTPError as exc:
        raise ImageSourceError(f"cannot fetch image {url}: {exc}") from exc
