"""Image uploads: 12-megapixel camera photos sent raw vs prepared on the client.

Each photo (benchmarks.fixtures.photos: compresses like a camera JPEG, carries EXIF and GPS) goes to
the reference server as a data URL, which really decodes and resizes it (benchmarks/server/
vision.py), through whatever network the suite emulates:
  (a) ``raw``: llmclient with ``images=False, compress=False``: the original bytes, base64
      encoded, as apps send them today (same transport as the others, so only the body differs);
  (b) ``q95``: the earlier fixed-quality preparation: resized, stripped, re-encoded at a fixed
      quality 95 with full-resolution chroma (``images={"quality": 95}``);
  (c) ``prepared``: llmclient's default: the same, at the quality measured per image
      (``llmclient.preprocess._quality``); (b) and (c) clear llmclient's per-content cache
      before every request, so each one pays a first preparation;
  (d) ``openai``: the official client, raw (outside quick mode, when it is installed).
Interleaved photo by photo, the order flipped each round; one extra photo warms up first.

Beside the latency rows it reports, per photo and side by side in the same run
(``benchmarks/image_prep.py``'s ``measure_photo``, on one pinned core):
  * bytes of each upload, and of a plain quality-85 4:2:0 JPEG of the same pixels;
  * the luma SSIM (``llmclient.preprocess.ssim``) of what the model sees from each upload
    against the resized original (``llmclient.preprocess.prepare_pixels``);
  * the quality chosen, and the preparation ms (median of interleaved runs) of (b) and (c),
    beside a plain full decode + Lanczos resize.
Targets: latency <= 0.25x of raw on ``wan`` and preparation <= 0.45x of the plain path;
bytes <= 1.1x of the plain q85 JPEG on every photo, SSIM >= ``SIMILARITY_THRESHOLD`` on every
prepared upload, preparation <= 100 ms per photo on one core.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..harness._scenario import ChatRequest, Context, Driver, RequestRecord, Row, ScenarioResult

ORDER = 60

PROMPT = "Describe this photo in one sentence."
TARGET = "openai-high"  # what llmclient infers for a part without ``detail: low``
QUICK_PHOTOS = 5
FULL_PHOTOS = 12
# Quick mode stops adding rounds once this much time went by (raw uploads over ``mobile``
# take seconds each); at least MIN_ROUNDS are always measured.
QUICK_DEADLINE_S = 24.0
MIN_ROUNDS = 5
# Interleaved preparation runs per photo for the ms figures (their median counts).
PREP_RUNS = 3
# The quick pass measures bytes, SSIM and preparation ms (notes, not rows) on this many of its
# photos: ~3.5 s each on a busy core, the scenario's largest cost after the raw uploads.
QUICK_PREP_PHOTOS = 2
FIXED_QUALITY = 95  # the earlier fixed-quality preparation (4:4:4: preprocess keeps it at >= 90)


class ImageUpload:
    name = "images"
    description = ("12 MP camera photos (EXIF+GPS) as data URLs: raw upload vs llmclient's "
                   "client-side preparation at a fixed q95 and at the measured quality; the "
                   "server decodes and resizes them all")
    requires = ("llmclient", "llmclient.images", "vision")
    quick_s = 21  # measured: 6 raw uploads of ~1.9 s over wan, 2 photos' CPU figures (~3.5 s each)

    def run(self, ctx: Context) -> ScenarioResult:
        from llmclient.features import images as _images

        count = QUICK_PHOTOS if ctx.quick else FULL_PHOTOS
        ctx.progress(f"  images: {count + 1} photos of 12 MP (cached on disk after the first run)")
        photos = [photo_bytes(ctx.seed * 1000 + i) for i in range(count + 1)]
        drivers: dict[str, Driver] = {
            # As apps send photos today: the caller's bytes, no request compression either.
            "raw": ctx.driver("llmclient", variant="raw", images=False,
                              client_options={"compress": False}),
            "q95": uncached(ctx.driver("llmclient", variant="q95",
                                       images={"quality": FIXED_QUALITY}), _images.clear_cache),
            "prepared": uncached(ctx.driver("llmclient", variant="prepared"), _images.clear_cache),
        }
        if not ctx.quick and "openai" in ctx.capabilities:
            drivers["openai"] = ctx.driver("openai", variant="openai")

        ctx.progress(f"  images: warm-up, then {count} photos x {len(drivers)} variants "
                     f"over {ctx.network}")
        interleave_one(ctx, drivers, request_for(photos[0]), flip=False)  # dropped
        records: dict[str, list[RequestRecord]] = {name: [] for name in drivers}
        started = time.perf_counter()
        for i, data in enumerate(photos[1:]):
            for name, record in interleave_one(ctx, drivers, request_for(data), i % 2 == 1).items():
                records[name].append(record)
            if ctx.quick and i + 1 >= MIN_ROUNDS and time.perf_counter() - started > QUICK_DEADLINE_S:
                break
        measured = photos[1:1 + len(records["raw"])]

        ctx.progress("  images: bytes, SSIM, quality and preparation ms per photo on one core")
        quality = prep_and_quality(measured[:QUICK_PREP_PHOTOS] if ctx.quick else measured)
        series = {**quality, **upload_figures(records, measured)}
        rows = [Row("images 12MP: raw upload -> prepared", "raw", "prepared",
                    technique="image preparation (12 MP photo)"),
                Row("images 12MP (TTFT): raw -> prepared", "raw", "prepared", metric="ttft_ms",
                    technique="image preparation (12 MP photo), stream"),
                Row("images 12MP: fixed q95 4:4:4 -> measured quality", "q95", "prepared",
                    technique="measured JPEG quality vs a fixed q95")]
        if "openai" in records:
            rows.append(Row("images 12MP: openai raw -> llmclient prepared", "openai", "prepared",
                            technique="image preparation vs the official client"))
        notes = [f"{len(measured)} photos of 4000x3000 (about {mean_mb(measured):.1f} MB each) per "
                 f"variant, interleaved, 1 warm-up photo dropped; target {TARGET}",
                 *describe(series, ctx.network), *describe_photos(series)]
        if ctx.quick:
            notes.append(f"quick mode: {len(measured)} photos, not {FULL_PHOTOS}; bytes, SSIM and "
                         f"preparation ms of the first {QUICK_PREP_PHOTOS}")
        return ScenarioResult.of(self, records, rows=rows, notes=notes, series=series)


# -- workload ---------------------------------------------------------------------------------


def photo_bytes(seed: int) -> bytes:
    """A 12 MP camera JPEG, generated once per seed, Pillow build and generator version (about
    2 s each on a busy core) and kept in the temp directory; orientation 1, so the raw upload's
    server view and the prepared one are comparable pixel for pixel."""
    from PIL import __version__ as pillow

    from ..fixtures import photos

    generator = hashlib.sha256(Path(photos.__file__).read_bytes()).hexdigest()[:12]
    folder = f"llmclient-bench-photos-pillow{pillow}-{generator}"
    path = Path(tempfile.gettempdir()) / folder / f"{seed}.jpg"
    with contextlib.suppress(OSError):
        return path.read_bytes()
    data = photos.camera_photo(seed, orientation=1, gps=True)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(data)
        partial.replace(path)  # atomic: a concurrent run never reads half a file
    return data


def request_for(photo: bytes) -> ChatRequest:
    url = "data:image/jpeg;base64," + base64.b64encode(photo).decode("ascii")
    content = [{"type": "text", "text": PROMPT}, {"type": "image_url", "image_url": {"url": url}}]
    # Streamed, so each request gives both rows: time to first token (what the upload and the
    # server's image decode delay) and end to end (the same plus 8 tokens of generation).
    return ChatRequest(messages=[{"role": "user", "content": content}], max_tokens=8, stream=True)


def uncached(driver: Driver, clear: Any) -> Driver:
    """Every request prepares its photo afresh (no help from an earlier identical one)."""

    async def send(request: ChatRequest, scheduled: float | None) -> RequestRecord:
        clear()
        return await driver(request, scheduled)

    return send


def interleave_one(ctx: Context, drivers: Mapping[str, Driver], request: ChatRequest,
                   flip: bool) -> dict[str, RequestRecord]:
    """One request through every variant, in reversed order when ``flip``."""
    names = list(drivers)[::-1] if flip else list(drivers)

    async def go() -> dict[str, RequestRecord]:
        out = {}
        for name in names:
            record = await drivers[name](request, None)
            record.variant = name
            out[name] = record
        return out

    result: dict[str, RequestRecord] = ctx.run(go())
    return result


# -- figures (CPU, beside the network runs) -----------------------------------------------------


@contextlib.contextmanager
def one_core() -> Iterator[int | None]:
    """Pin the calling thread to one core for the duration (Linux: pid 0 is this thread)."""
    if not hasattr(os, "sched_getaffinity"):
        yield None
        return
    allowed = os.sched_getaffinity(0)
    core = min(allowed)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, allowed)


def prep_and_quality(photos: list[bytes]) -> dict[str, Any]:
    """Per photo, on one pinned core: every upload's bytes, model-view SSIM, quality and prep
    ms, beside a plain q85 JPEG and a plain full decode + Lanczos (image_prep.measure_photo).

    Keeps the keys earlier runs had (``prep_ms``, ``plain_ms``, ``psnr_db``...: the measured
    upload's figures) and adds ``photos`` (per photo, every upload) and ``photo_targets``
    (``image_prep.summary``: the targets checked over the photos)."""
    from llmclient.preprocess import prepare_image

    from ..image_prep import measure_photo, summary

    with one_core() as core:
        prepare_image(photos[0], TARGET)  # lazy imports and codec tables, not measured
        figures = [measure_photo(data, TARGET, PREP_RUNS) for data in photos]
    prep_ms = [f.uploads["prepared"].prep_ms for f in figures]
    plain_ms = [f.plain_ms for f in figures]
    q95_ms = [f.uploads["q95"].prep_ms for f in figures]
    psnr_db = [f.psnr_db for f in figures]
    prep, plain = statistics.median(prep_ms), statistics.median(plain_ms)
    return {"prep_ms": prep_ms, "plain_ms": plain_ms, "prep_ms_p50": prep,
            "plain_ms_p50": plain, "prep_vs_plain": prep / plain, "psnr_db": psnr_db,
            "psnr_db_min": min(psnr_db), "prepared_size": figures[0].size, "pinned_core": core,
            "prep_ms_q95": q95_ms, "prep_ms_p50_q95": statistics.median(q95_ms),
            "prep_runs": PREP_RUNS, "photos": [f.as_dict() for f in figures],
            "photo_targets": summary(figures)}


def upload_figures(records: Mapping[str, list[RequestRecord]],
                   photos: list[bytes]) -> dict[str, Any]:
    from ..harness.stats import percentile

    out: dict[str, Any] = {"photo_bytes": [len(p) for p in photos]}
    lat: dict[str, dict[str, float]] = {}
    for name, recs in records.items():
        ok = [r for r in recs if r.ok]
        if ok:
            values = [r.latency_ms for r in ok]
            lat[name] = {"p50": percentile(values, 50), "p99": percentile(values, 99)}
            ttft = [r.ttft_ms for r in ok if r.ttft_ms is not None]
            if ttft:
                lat[name].update(ttft_p50=percentile(ttft, 50), ttft_p99=percentile(ttft, 99))
        sent = [r.bytes_sent for r in ok if r.bytes_sent]
        if sent:
            out[f"bytes_sent_{name}"] = statistics.median(sent)
        server_image = [r.breakdown["server.image"] for r in ok if "server.image" in r.breakdown]
        if server_image:
            out[f"server_image_ms_{name}"] = statistics.median(server_image)
    out["latency_ms"] = lat
    if "raw" in lat and "prepared" in lat:
        out["latency_ratio_p50"] = lat["prepared"]["p50"] / lat["raw"]["p50"]
        out["latency_ratio_p99"] = lat["prepared"]["p99"] / lat["raw"]["p99"]
        if "ttft_p50" in lat["raw"] and "ttft_p50" in lat["prepared"]:
            out["ttft_ratio_p50"] = lat["prepared"]["ttft_p50"] / lat["raw"]["ttft_p50"]
    for name in ("prepared", "q95"):
        in_run = [r.breakdown["image_prep"] for r in records.get(name, [])
                  if "image_prep" in r.breakdown]
        if in_run:
            key = "" if name == "prepared" else f"_{name}"
            out[f"client_image_prep_ms_in_run_p50{key}"] = statistics.median(in_run)
    out["failed"] = {name: sum(not r.ok for r in recs) for name, recs in records.items()}
    return out


def describe(series: Mapping[str, Any], network: str) -> list[str]:
    lines = []
    lat = series.get("latency_ms", {})
    if "latency_ratio_p50" in series:
        lines.append(
            f"e2e p50 raw {lat['raw']['p50']:.0f} ms -> prepared {lat['prepared']['p50']:.0f} ms "
            f"({series['latency_ratio_p50']:.3f}x), p99 {lat['raw']['p99']:.0f} -> "
            f"{lat['prepared']['p99']:.0f} ms ({series['latency_ratio_p99']:.3f}x) on {network}"
            + (" (target <= 0.25x)" if network == "wan" else ""))
    if "q95" in lat and "prepared" in lat:
        lines.append(f"e2e p50 fixed q95 {lat['q95']['p50']:.0f} ms -> measured quality "
                     f"{lat['prepared']['p50']:.0f} ms "
                     f"({lat['prepared']['p50'] / lat['q95']['p50']:.3f}x) on {network}")
    if "ttft_ratio_p50" in series:
        lines.append(f"TTFT p50 raw {lat['raw']['ttft_p50']:.0f} ms -> prepared "
                     f"{lat['prepared']['ttft_p50']:.0f} ms ({series['ttft_ratio_p50']:.3f}x)")
    if "openai" in lat:
        lines.append(f"e2e p50 openai raw {lat['openai']['p50']:.0f} ms")
    q95 = (f" (fixed q95: {series['prep_ms_p50_q95']:.0f} ms)"
           if "prep_ms_p50_q95" in series else "")
    lines.append(
        f"client prep {series['prep_ms_p50']:.0f} ms/photo on one core{q95} (target <= 100), plain "
        f"decode+Lanczos {series['plain_ms_p50']:.0f} ms, ratio {series['prep_vs_plain']:.3f}x "
        f"(target <= 0.45); in-run image_prep_ms p50 "
        f"{series.get('client_image_prep_ms_in_run_p50', float('nan')):.0f}")
    if "bytes_sent_raw" in series and "bytes_sent_prepared" in series:
        q95 = (f", fixed q95 {series['bytes_sent_q95'] / 1e6:.3f} MB"
               if "bytes_sent_q95" in series else "")
        lines.append(
            f"uploaded (request body, median) {series['bytes_sent_raw'] / 1e6:.2f} MB raw -> "
            f"{series['bytes_sent_prepared'] / 1e6:.3f} MB prepared "
            f"({series['bytes_sent_prepared'] / series['bytes_sent_raw']:.3f}x){q95}; server "
            f"image decode p50 {series.get('server_image_ms_raw', float('nan')):.0f} -> "
            f"{series.get('server_image_ms_prepared', float('nan')):.0f} ms")
    if "photo_targets" in series:
        from ..image_prep import describe_summary

        lines.append(describe_summary(series["photo_targets"]))
    lines.append(f"sent {series['prepared_size'][0]}x{series['prepared_size'][1]}; model-view "
                 f"PSNR measured quality vs raw: min {series['psnr_db_min']:.1f} dB (for "
                 f"reference; the bar is SSIM now)")
    failed = {k: v for k, v in series.get("failed", {}).items() if v}
    if failed:
        lines.append(f"failed requests: {failed}")
    return lines


def describe_photos(series: Mapping[str, Any]) -> list[str]:
    """One line per upload per photo: bytes, SSIM, quality, prep ms (image_prep's format)."""
    from ..image_prep import describe_photo, figures_from_dict

    lines = []
    for n, photo in enumerate(series.get("photos", []), 1):
        lines += describe_photo(n, figures_from_dict(photo))
    return lines


def mean_mb(photos: list[bytes]) -> float:
    return statistics.mean(len(p) for p in photos) / 1e6


SCENARIOS = (ImageUpload(),)
