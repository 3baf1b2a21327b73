"""Choose the lossy quality per image by measurement: the fewest bytes the model cannot tell.

The rule: the lowest rung of ``QUALITY_LADDER`` whose decoded result keeps a luma SSIM of at
least ``SIMILARITY_THRESHOLD`` against the resized original (``_similarity``), found by
binary search, with 4:2:0 chroma only where the colour planes survive it
(``chroma_survives_subsampling``). Why SSIM and this threshold:

* Vision models are far less sensitive to moderate JPEG compression than to blur or noise:
  Dodge & Karam ("Understanding How Image Quality Affects Deep Neural Networks", QoMEX 2016,
  arXiv:1604.04004) found ImageNet classifiers hold their accuracy until quality falls to
  the 10-20 range; Ehrlich et al. ("Analyzing and Mitigating JPEG Compression Defects in
  Deep Learning", ICCVW 2021) see a significant penalty only at high compression. Benchmarks
  of vision-language models on compressed images (e.g. "Benchmarking and Enhancing VLM for
  Compressed Image Understanding", 2025) find text recognition (OCRBench) the most sensitive
  task, so fine strokes are what the metric must protect, and SSIM's structure term sees
  them where PSNR does not.
* 0.97 is about what a plain quality-85 4:2:0 JPEG (the common library default, and the
  benchmark's yardstick for bytes) scores on camera-like photos at the model's size (its
  figures are in the README); text over a photo needs a higher quality to reach it. Every image
  keeps at least that fidelity, far above the range where the studies above see models lose
  accuracy; smooth images go lower, detailed or text-heavy ones higher.

The search runs on a probe (``probe_rows``): whole 16-pixel JPEG block rows sampled evenly
through the image, pasted together, so each sampled block is coded exactly as in the full
encode and the cost per step is a fraction of the image's. It stops when its time budget
(``SEARCH_BUDGET_MS``) would be exceeded and then takes the lowest rung already seen to pass,
or the target's fixed quality (the safe default) when none has.

Two cases get another rule. Content whose full-resolution SSIM still fails at
``RUNAWAY_QUALITY`` (noise, grain, a star field: detail at the scale of single pixels that
JPEG cannot keep cheaply) has its rung chosen on 2x-reduced copies against
``HALF_SCALE_THRESHOLD`` (``QualityPlan.scale`` is 2). A photograph that shows lines of text
(``_content.has_text_lines``) is searched against ``TEXT_SIMILARITY_THRESHOLD``.

``plan_quality`` holds the decision and takes the scoring function and the clock as
arguments, so it is tested without encoding anything; ``search_jpeg`` is the thin I/O side.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from ._similarity import LumaReference, chroma_survives_subsampling

__all__ = [
    "HALF_SCALE_THRESHOLD",
    "PROBE_MAX_PIXELS",
    "QUALITY_LADDER",
    "RUNAWAY_QUALITY",
    "SEARCH_BUDGET_MS",
    "SIMILARITY_THRESHOLD",
    "TEXT_SIMILARITY_THRESHOLD",
    "QualityPlan",
    "encode_lossy",
    "plan_quality",
    "probe_rows",
    "search_quality",
]

SIMILARITY_THRESHOLD = 0.97
# For photographs that show lines of text (``_content.has_text_lines``): on a photographed
# page the blank paper lifts the mean SSIM, and 0.97 let OCR (Tesseract) lose 2 of the 19
# words it read on scikit-image's page.png (q60, SSIM 0.971); at 0.985 (q70) it lost none.
TEXT_SIMILARITY_THRESHOLD = 0.985
# Lowest first. Below 60 the studies above start to see losses and bytes shrink slowly;
# 95 is the ceiling (above it JPEG bytes grow fast for nothing a model sees).
QUALITY_LADDER: tuple[int, ...] = (60, 65, 70, 74, 78, 80, 82, 84, 86, 88, 90, 92, 95)
# Wall-clock budget for the search (probe encodes, decodes and scores), on top of the decode,
# resize and final encode; the README's results give the measured cost per photo.
SEARCH_BUDGET_MS = 40.0
# The first rung tried: where camera-like photos land, so a search cut short by a loaded
# machine has usually seen a rung pass already and need not fall back.
FIRST_GUESS = 86
# The probe keeps at most this many pixels (about a quarter of a 1024x768 image).
PROBE_MAX_PIXELS = 200_000
# A sampled probe must beat the threshold by this much: on photos its SSIM is within 0.001 of
# the whole image's (measured at 1024x768 and 1237x928), so the whole image stays above it.
PROBE_MARGIN = 0.002
# The full-resolution search stops here. An image that still fails at this rung is paying
# for detail at the scale of single pixels that JPEG cannot keep cheaply: sensor noise, film
# grain, a star field (whose q85 SSIM is 0.94; even q95 scores 0.978). Its rung is chosen on
# 2x-reduced copies instead (``HALF_SCALE_THRESHOLD``): what is left of the image once
# pixel-scale noise is averaged. No colour photo of the labelled set asks for more than 86
# at full resolution, so they keep their rungs; the README gives the figures.
RUNAWAY_QUALITY = 88
# At half resolution, camera photos score 0.994-0.997 at q84-86 (the yardstick's quality);
# 0.99 keeps the structure a q85 JPEG keeps (stars, galaxies, grain's pattern) without its
# per-pixel noise.
HALF_SCALE_THRESHOLD = 0.99
# The half-scale search's own floor of time, when the full-resolution one used up the budget:
# without it a loaded machine would send the star field at the top rung again.
HALF_SCALE_BUDGET_MS = 20.0
_BLOCK_ROW = 16  # one JPEG MCU row at 4:2:0


@dataclass(frozen=True)
class QualityPlan:
    """The quality chosen, and how it was chosen."""

    quality: int
    subsample: bool  # 4:2:0 chroma; False keeps full-resolution chroma (4:4:4)
    similarity: float | None  # the probe's SSIM at ``quality``; None when not measured
    steps: int  # candidate encodes scored
    reason: str  # "searched", "budget" (search cut short), "fallback" (nothing measured)
    # The SSIM's scale: 1 at full resolution, 2 when chosen on 2x-reduced copies (noise-like
    # content, see RUNAWAY_QUALITY); ``similarity`` is at that scale.
    scale: int = 1


def plan_quality(
    score: Callable[[int], float],
    *,
    subsample: bool,
    fallback: int,
    ladder: Sequence[int] = QUALITY_LADDER,
    threshold: float = SIMILARITY_THRESHOLD,
    budget_ms: float = SEARCH_BUDGET_MS,
    clock: Callable[[], float] = time.perf_counter,
    first: int = FIRST_GUESS,
) -> QualityPlan:
    """Binary search for the lowest rung of ``ladder`` with ``score(q) >= threshold``.

    The first step tries ``first`` (when on the ladder), the second its neighbour on the side
    the first result points to (the rung below after a pass, above after a failure): where
    most images land next to the guess, those two steps settle it. Then it halves the
    remaining range.
    Assumes the score grows with quality (true of JPEG and WebP). Before each step the time
    spent is checked against ``budget_ms`` (the slowest step so far must still fit), so the
    search ends within about one step of it; cut short, it settles on the lowest rung that
    passed, else on ``fallback``. When even the top rung fails, the top rung is used.
    """
    start = clock()
    lo, hi = 0, len(ladder) - 1
    passed: dict[int, float] = {}
    slowest = 0.0
    steps = 0
    while lo <= hi:
        spent = (clock() - start) * 1000.0
        if spent + slowest > budget_ms:
            return _settle(passed, subsample, fallback, steps, "budget")
        if steps == 0 and first in ladder:
            mid = ladder.index(first)
        elif steps == 1 and first in ladder:
            mid = hi if passed else lo  # the guess's neighbour
        else:
            mid = (lo + hi) // 2
        before = clock()
        value = score(ladder[mid])
        slowest = max(slowest, (clock() - before) * 1000.0)
        steps += 1
        if value >= threshold:
            passed[ladder[mid]] = value
            hi = mid - 1
        else:
            lo = mid + 1
    if not passed:  # even the best rung falls short: give the most the ladder has
        return QualityPlan(ladder[-1], subsample, None, steps, "searched")
    return _settle(passed, subsample, fallback, steps, "searched")


def _settle(passed: dict[int, float], subsample: bool, fallback: int, steps: int,
            reason: str) -> QualityPlan:
    if not passed:
        return QualityPlan(fallback, False, None, steps, "fallback")
    best = min(passed)
    return QualityPlan(best, subsample, passed[best], steps, reason)


def probe_rows(img: Image.Image, max_pixels: int = PROBE_MAX_PIXELS) -> Image.Image:
    """Evenly spaced whole JPEG block rows of ``img`` pasted together (the image itself when
    it is small enough). Rows start on 16-pixel boundaries, so a sampled block is quantised
    exactly as in the full image."""
    rows = img.height // _BLOCK_ROW
    if img.width * img.height <= max_pixels or rows < 2:
        return img
    keep = max(1, min(rows, max_pixels // (img.width * _BLOCK_ROW)))
    picks = sorted({(i * rows) // keep for i in range(keep)})
    probe = Image.new(img.mode, (img.width, len(picks) * _BLOCK_ROW))
    for n, row in enumerate(picks):
        y = row * _BLOCK_ROW
        probe.paste(img.crop((0, y, img.width, y + _BLOCK_ROW)), (0, n * _BLOCK_ROW))
    return probe


def encode_lossy(img: Image.Image, fmt: str, quality: int, subsample: bool,
                 icc: bytes | None = None) -> bytes:
    """JPEG or WebP bytes; nothing from the source travels unless passed here."""
    buf = io.BytesIO()
    params: dict[str, object] = {"quality": quality}
    if icc:
        params["icc_profile"] = icc
    if fmt == "JPEG":
        params["subsampling"] = 2 if subsample else 0
    elif fmt == "WEBP":
        params["method"] = 4  # WebP is always 4:2:0; method trades encode time for bytes
    else:
        raise ValueError(f"not a lossy format: {fmt}")
    img.save(buf, fmt, **params)
    return buf.getvalue()


def search_quality(
    img: Image.Image,
    fmt: str,
    fallback: int,
    *,
    threshold: float = SIMILARITY_THRESHOLD,
    budget_ms: float = SEARCH_BUDGET_MS,
    ladder: Sequence[int] = QUALITY_LADDER,
) -> QualityPlan:
    """Measure ``img``'s probe at candidate qualities of ``fmt`` and plan (see module doc)."""
    probe = probe_rows(img)
    seams = _BLOCK_ROW if probe is not img else None
    # Lossy WebP has no 4:4:4 mode.
    subsample = fmt == "WEBP" or chroma_survives_subsampling(probe, seams)
    reference = LumaReference.of(probe, seams)

    def score(quality: int) -> float:
        return reference.ssim(_decoded(encode_lossy(probe, fmt, quality, subsample)))

    start = time.perf_counter()
    margin = PROBE_MARGIN if probe is not img else 0.0
    full = [q for q in ladder if q <= RUNAWAY_QUALITY] or list(ladder)
    plan = plan_quality(score, subsample=subsample, fallback=fallback, ladder=full,
                        threshold=threshold + margin, budget_ms=budget_ms)
    if plan.similarity is not None or plan.reason != "searched" or full == list(ladder):
        return plan
    # Even RUNAWAY_QUALITY fails at full resolution: choose on 2x-reduced copies instead.
    left = budget_ms - (time.perf_counter() - start) * 1000.0
    return _at_half_scale(probe, seams, fmt, subsample, fallback, ladder, plan.steps, left)


def _at_half_scale(probe: Image.Image, seams: int | None, fmt: str, subsample: bool,
                   fallback: int, ladder: Sequence[int], steps: int,
                   budget_ms: float) -> QualityPlan:
    """The lowest rung whose 2x-reduced decode keeps ``HALF_SCALE_THRESHOLD`` against the
    2x-reduced probe (see ``RUNAWAY_QUALITY``)."""
    reference = LumaReference.of(probe.reduce(2), seams // 2 if seams is not None else None)

    def score(quality: int) -> float:
        decoded = _decoded(encode_lossy(probe, fmt, quality, subsample))
        return reference.ssim(decoded.reduce(2))

    half = plan_quality(score, subsample=subsample, fallback=fallback, ladder=ladder,
                        threshold=HALF_SCALE_THRESHOLD,
                        budget_ms=max(HALF_SCALE_BUDGET_MS, budget_ms))
    return QualityPlan(half.quality, half.subsample, half.similarity, steps + half.steps,
                       half.reason, scale=2)


def _decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img
