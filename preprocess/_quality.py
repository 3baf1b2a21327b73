"""Choose the lossy quality per image by measurement: the fewest bytes the model cannot tell.

The rule: the lowest rung of ``QUALITY_LADDER`` whose decoded result keeps a luma SSIM of at
least ``SIMILARITY_THRESHOLD`` against the resized original (``_similarity``), found by
interpolation search, with 4:2:0 chroma only where the colour planes survive it
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
encode and the cost per step is a fraction of the image's. Where the probe is large, a
sparser one (about a quarter of its rows) finds the neighbourhood first, and the probe
settles it in about two steps from there. The steps are placed by interpolation
(``plan_interpolated``): SSIM is nearly linear in the quality between rungs. The answer is
what bisection over the probe finds (the lowest rung that passes above one that fails); only
the number of encodes falls. An image under ``SEARCH_MIN_PIXELS`` is not searched (the
search would cost more than the rest of its preparation, to save a few hundred bytes): it
goes at ``SMALL_IMAGE_QUALITY``. The search stops when its time budget
(``SEARCH_BUDGET_MS``) would be exceeded and then takes the lowest rung already seen to pass,
or the target's fixed quality (the safe default) when none has.

Two cases get another rule. Content whose full-resolution SSIM still fails at
``RUNAWAY_QUALITY`` (noise, grain, a star field: detail at the scale of single pixels that
JPEG cannot keep cheaply) has its rung chosen on 2x-reduced copies against
``HALF_SCALE_THRESHOLD`` (``QualityPlan.scale`` is 2). A photograph that shows lines of text
(``_content.has_text_lines``) is searched against ``TEXT_SIMILARITY_THRESHOLD``.

``plan_interpolated`` (and ``plan_quality``, plain bisection) hold the decision and take the
scoring function and the clock as arguments, so they are tested without encoding anything;
``search_quality`` is the thin I/O side.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from PIL import Image

from ._similarity import LumaReference, chroma_survives_subsampling

__all__ = [
    "HALF_SCALE_THRESHOLD",
    "PROBE_MAX_PIXELS",
    "QUALITY_LADDER",
    "RUNAWAY_QUALITY",
    "SEARCH_BUDGET_MS",
    "SEARCH_MIN_PIXELS",
    "SIMILARITY_THRESHOLD",
    "SMALL_IMAGE_QUALITY",
    "TEXT_SIMILARITY_THRESHOLD",
    "QualityPlan",
    "encode_lossy",
    "plan_interpolated",
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
# Below this many pixels (128x128) the quality is not searched: a search costs several
# encodes of the image where one is all the rest of the preparation needs, to save at most a
# few hundred bytes. Such an image goes at SMALL_IMAGE_QUALITY, the yardstick's quality
# (camera photos measure q84-86), its chroma still judged (``chroma_survives_subsampling``).
SEARCH_MIN_PIXELS = 128 * 128
SMALL_IMAGE_QUALITY = 85
# Interpolation's slope where only one side of the threshold is known (SSIM per quality
# step; camera and sample photos have 0.0003-0.0018 between q74 and q86).
TYPICAL_SLOPE = 0.0008
# The search runs first on a sparser probe of about 1/COARSE_SHARE of the probe's pixels (not
# under COARSE_MIN_PIXELS) to find the neighbourhood, then settles on the probe itself with
# two encodes when the coarse rung was right or one off (``_prior``): the answer is the
# probe's, for a fraction of the cost. Smaller probes are searched on their own.
COARSE_SHARE = 4
COARSE_MIN_PIXELS = 40_000
# The sparse probe's search stops at a rung scored this close to the threshold: the probe's
# own scores differ from the sparse one's by about as much, so it settles it from there.
COARSE_NEAR = 0.001
_BLOCK_ROW = 16  # one JPEG MCU row at 4:2:0


@dataclass(frozen=True)
class QualityPlan:
    """The quality chosen, and how it was chosen."""

    quality: int
    subsample: bool  # 4:2:0 chroma; False keeps full-resolution chroma (4:4:4)
    similarity: float | None  # the probe's SSIM at ``quality``; None when not measured
    steps: int  # candidate encodes scored
    # "searched", "budget" (search cut short), "fallback" (nothing measured), "small" (an
    # image under SEARCH_MIN_PIXELS: SMALL_IMAGE_QUALITY, not searched)
    reason: str
    # The SSIM's scale: 1 at full resolution, 2 when chosen on 2x-reduced copies (noise-like
    # content, see RUNAWAY_QUALITY); ``similarity`` is at that scale.
    scale: int = 1
    # Every rung scored by an interpolated search, with its score (``plan_interpolated``).
    scores: tuple[tuple[int, float], ...] = ()
    # The encode at ``quality`` when the search already made it of the whole image (a probe
    # that is the image itself): the final encode need not be repeated.
    data: bytes | None = field(default=None, repr=False, compare=False)


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


def plan_interpolated(
    score: Callable[[int], float],
    *,
    subsample: bool,
    fallback: int,
    ladder: Sequence[int] = QUALITY_LADDER,
    threshold: float = SIMILARITY_THRESHOLD,
    budget_ms: float = SEARCH_BUDGET_MS,
    clock: Callable[[], float] = time.perf_counter,
    first: int = FIRST_GUESS,
    slope: float = TYPICAL_SLOPE,
    near: float = 0.0,
) -> QualityPlan:
    """``plan_quality``'s answer, with the steps after the first placed by interpolation.

    The first step tries ``first``. Each next one tries the lowest rung left at or above the
    quality where the scores cross the threshold on a straight line: through the closest
    rungs measured either side of it, or with one side measured, through its two closest
    rungs, or from its closest with ``slope`` (SSIM per quality step); when no rung left is
    that high, the rung just below the lowest pass. SSIM is close to linear in the JPEG
    quality between neighbouring rungs, so a photo
    usually settles in two to four steps where bisection takes five. When two interpolated
    steps in a row have not halved the range left between them, a bisection step comes next
    (scores with no slope to read: a step, a plateau), so the worst case stays within about
    twice ``plan_quality``'s. Same budget rule and result as ``plan_quality``.

    ``near`` > 0 makes it a guide for another search rather than an answer: it stops as soon
    as a rung scores within ``near`` of the threshold (reason ``"near"``, that rung's score
    as ``similarity`` whichever side it is on); ``scores`` says what it measured.
    """
    start = clock()
    n = len(ladder)
    fail_max, pass_min = -1, n  # highest rung index known to fail, lowest known to pass
    values: dict[int, float] = {}
    slowest = 0.0
    steps = 0
    widths: list[int] = []  # the range left before each interpolated step in a row
    bisect = False
    while pass_min - fail_max > 1:
        if (clock() - start) * 1000.0 + slowest > budget_ms:
            return _settle(_passed(values, ladder, threshold), subsample, fallback, steps,
                           "budget")
        width = pass_min - fail_max - 1
        interpolated = False
        if steps == 0 and first in ladder:
            index = ladder.index(first)
        elif bisect:
            index = (fail_max + pass_min) // 2
        else:
            target = _crossing(ladder, values, fail_max, pass_min, threshold, slope)
            index = next((i for i in range(fail_max + 1, pass_min) if ladder[i] >= target),
                         pass_min - 1)
            interpolated = True
        before = clock()
        values[index] = score(ladder[index])
        slowest = max(slowest, (clock() - before) * 1000.0)
        steps += 1
        passed = values[index] >= threshold
        if abs(values[index] - threshold) < near:
            return QualityPlan(ladder[index], subsample, values[index], steps, "near",
                               scores=tuple(sorted((ladder[i], v) for i, v in values.items())))
        if passed:
            pass_min = index
        else:
            fail_max = index
        # Two interpolated steps in a row that did not halve the range: bisect next.
        widths = [*widths, width] if interpolated else []
        bisect = len(widths) >= 2 and pass_min - fail_max - 1 > widths[-2] // 2
        if bisect:
            widths = []
    scores = tuple(sorted((ladder[i], v) for i, v in values.items()))
    if pass_min == n:  # even the best rung falls short: give the most the ladder has
        return QualityPlan(ladder[-1], subsample, None, steps, "searched", scores=scores)
    return QualityPlan(ladder[pass_min], subsample, values[pass_min], steps, "searched",
                       scores=scores)


def _crossing(ladder: Sequence[int], values: dict[int, float], fail_max: int, pass_min: int,
              threshold: float, slope: float) -> float:
    """The quality where the score is predicted to reach ``threshold``: on the line through
    the closest rungs measured either side of it; with one side measured, on the line
    through its two closest rungs, or from its closest with ``slope``."""
    if fail_max >= 0 and pass_min < len(ladder):
        near = [fail_max, pass_min]
    else:
        side = sorted(values, reverse=pass_min == len(ladder))  # closest to the threshold first
        near = side[:2]
    if len(near) == 2 and values[near[0]] != values[near[1]]:
        (qa, va), (qb, vb) = ((ladder[i], values[i]) for i in near)
        measured = (vb - va) / (qb - qa)
        if measured > 0:
            return qa + (threshold - va) / measured
    i = near[0]
    return ladder[i] + (threshold - values[i]) / slope


def _passed(values: dict[int, float], ladder: Sequence[int], threshold: float
            ) -> dict[int, float]:
    return {ladder[i]: v for i, v in values.items() if v >= threshold}


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
    start = time.perf_counter()
    if img.width * img.height < SEARCH_MIN_PIXELS:
        subsample = fmt == "WEBP" or chroma_survives_subsampling(img)
        return QualityPlan(SMALL_IMAGE_QUALITY, subsample, None, 0, "small")
    probe = probe_rows(img)
    seams = _BLOCK_ROW if probe is not img else None
    # Lossy WebP has no 4:4:4 mode.
    subsample = fmt == "WEBP" or chroma_survives_subsampling(probe, seams)
    margin = PROBE_MARGIN if probe is not img else 0.0
    full = [q for q in ladder if q <= RUNAWAY_QUALITY] or list(ladder)
    kept: dict[int, bytes] | None = {} if probe is img else None  # encodes of the image
    pair = _Scorers.of(img, probe, seams, fmt, subsample, 1, kept)
    plan = pair.plan(full, threshold + margin, subsample, fallback, budget_ms)
    if plan.similarity is None and plan.reason == "searched" and full != list(ladder):
        # Even RUNAWAY_QUALITY fails at full resolution: choose on 2x-reduced copies instead.
        left = budget_ms - (time.perf_counter() - start) * 1000.0
        half = _Scorers.of(img, probe, seams, fmt, subsample, 2, kept)
        chosen = half.plan(list(ladder), HALF_SCALE_THRESHOLD, subsample, fallback,
                           max(HALF_SCALE_BUDGET_MS, left))
        plan = QualityPlan(chosen.quality, chosen.subsample, chosen.similarity,
                           plan.steps + chosen.steps, chosen.reason, scale=2)
    if kept and plan.subsample == subsample and plan.quality in kept:
        plan = replace(plan, data=kept[plan.quality])
    return plan


@dataclass(frozen=True)
class _Scorers:
    """The SSIM of a candidate quality on the probe (``full``) and, where the probe is large
    enough for it to pay, on a sparser probe of the same image (``coarse``, about a quarter
    of the pixels): the coarse one finds the neighbourhood, the probe settles it from the
    coarse rung closest to the threshold (``_prior``)."""

    full: Callable[[int], float]
    coarse: Callable[[int], float] | None

    @classmethod
    def of(cls, img: Image.Image, probe: Image.Image, seams: int | None, fmt: str,
           subsample: bool, scale: int, kept: dict[int, bytes] | None = None) -> _Scorers:
        full = _scorer(probe, seams, fmt, subsample, scale, kept)
        pixels = probe.width * probe.height
        if pixels < 2 * COARSE_MIN_PIXELS:
            return cls(full, None)
        sparse = probe_rows(img, max(COARSE_MIN_PIXELS, pixels // COARSE_SHARE))
        if sparse.height >= probe.height:
            return cls(full, None)
        return cls(full, _scorer(sparse, _BLOCK_ROW, fmt, subsample, scale))

    def plan(self, ladder: list[int], threshold: float, subsample: bool, fallback: int,
             budget_ms: float) -> QualityPlan:
        start = time.perf_counter()
        if self.coarse is None:
            return plan_interpolated(self.full, subsample=subsample, fallback=fallback,
                                ladder=ladder, threshold=threshold, budget_ms=budget_ms)
        guess = plan_interpolated(self.coarse, subsample=subsample, fallback=fallback,
                                  ladder=ladder, threshold=threshold, budget_ms=budget_ms,
                                  near=COARSE_NEAR)
        left = budget_ms - (time.perf_counter() - start) * 1000.0
        if guess.reason not in ("searched", "near"):  # out of time: nothing was verified
            return QualityPlan(fallback, False, None, guess.steps, "fallback")
        first, slope = _prior(guess.scores, threshold)
        near = plan_interpolated(self.full, subsample=subsample, fallback=fallback,
                                 ladder=ladder, threshold=threshold, budget_ms=left,
                                 first=first, slope=slope)
        return QualityPlan(near.quality, near.subsample, near.similarity,
                           guess.steps + near.steps, near.reason)


def _prior(scores: tuple[tuple[int, float], ...], threshold: float) -> tuple[int, float]:
    """Where to start the probe's search from the coarse one's scores, and the slope to
    extrapolate with: the rung scored closest to the threshold (either side), and the slope
    between the two rungs that bracket it (else ``TYPICAL_SLOPE``)."""
    first = min(scores, key=lambda qv: abs(qv[1] - threshold))[0]
    below = [qv for qv in scores if qv[1] < threshold]
    above = [qv for qv in scores if qv[1] >= threshold]
    slope = TYPICAL_SLOPE
    if below and above:
        (qa, va), (qb, vb) = max(below), min(above)
        if qb > qa and vb > va:
            slope = (vb - va) / (qb - qa)
    return first, slope


def _scorer(probe: Image.Image, seams: int | None, fmt: str, subsample: bool, scale: int,
            kept: dict[int, bytes] | None = None) -> Callable[[int], float]:
    """``quality -> SSIM`` of ``probe`` encoded at it (luma; at 1/``scale`` resolution); each
    encode is kept in ``kept`` when given."""
    def encoded(quality: int) -> bytes:
        data = encode_lossy(probe, fmt, quality, subsample)
        if kept is not None:
            kept[quality] = data
        return data

    if scale == 1:
        reference = LumaReference.of(probe, seams)

        def score(quality: int) -> float:
            return reference.ssim(_luma(encoded(quality)))
        return score
    reduced = LumaReference.of(probe.reduce(scale), seams // scale if seams is not None else None)

    def score_reduced(quality: int) -> float:
        decoded = Image.open(io.BytesIO(encoded(quality)))
        decoded.load()
        return reduced.ssim(decoded.reduce(scale))
    return score_reduced


def _gray(img: Image.Image) -> Image.Image:
    return img if img.mode == "L" else img.convert("L")


def _luma(data: bytes) -> Image.Image:
    """The luma plane of an encoded candidate, as ``LumaReference`` reads the reference:
    decoded to its colour mode, then converted (straight from the JPEG's Y plane scores
    colour photos up to 0.0003 apart, enough to move one from a rung it sat on)."""
    img = Image.open(io.BytesIO(data))
    img.load()
    return _gray(img)
