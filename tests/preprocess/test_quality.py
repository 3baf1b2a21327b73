"""The measured quality: the pure search, the SSIM it relies on, the probe, and the
result on camera-like photos (real Pillow encoders throughout)."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from benchmarks.fixtures.photos import camera_photo, camera_pixels, compression_at
from llmclient.preprocess import (
    OPENAI_HIGH,
    QUALITY_LADDER,
    SIMILARITY_THRESHOLD,
    plan_quality,
    plan_resize,
    prepare_image,
    prepare_pixels,
    search_quality,
    ssim,
)
from llmclient.preprocess._quality import (
    PROBE_MARGIN,
    SEARCH_MIN_PIXELS,
    SMALL_IMAGE_QUALITY,
    TYPICAL_SLOPE,
    encode_lossy,
    plan_interpolated,
    probe_rows,
)
from llmclient.preprocess._similarity import LumaReference, chroma_survives_subsampling


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


@pytest.fixture(scope="module")
def photo_pixels() -> Image.Image:
    """A camera-like photo at the size openai-high keeps (1024x768)."""
    img = camera_pixels(2)
    return img.resize(plan_resize(*img.size, OPENAI_HIGH), Image.Resampling.BICUBIC)


# -- the pure search ----------------------------------------------------------------------


class Clock:
    """Time that moves only when a score is computed: ``step_ms`` per step."""

    def __init__(self, step_ms: float) -> None:
        self.now, self.step_s = 0.0, step_ms / 1000.0

    def __call__(self) -> float:
        return self.now


def scorer(first_pass: int, clock: Clock | None = None, seen: list[int] | None = None):  # type: ignore[no-untyped-def]
    def score(q: int) -> float:
        if clock is not None:
            clock.now += clock.step_s
        if seen is not None:
            seen.append(q)
        return 0.99 if q >= first_pass else 0.90
    return score


@pytest.mark.parametrize("first_pass", QUALITY_LADDER)
def test_search_finds_the_lowest_passing_rung_in_log_steps(first_pass: int) -> None:
    seen: list[int] = []
    plan = plan_quality(scorer(first_pass, seen=seen), subsample=True, fallback=95)
    assert plan.quality == first_pass and plan.reason == "searched"
    assert plan.similarity == 0.99 and plan.subsample
    assert seen[0] == 86  # the first guess, where camera photos land
    # Binary search, plus at most one step for starting at the guess.
    assert plan.steps == len(seen) <= math.ceil(math.log2(len(QUALITY_LADDER) + 1)) + 1


@pytest.mark.parametrize(("first_pass", "probes"), [(86, [86, 84]), (88, [86, 88])])
def test_search_next_to_its_guess_settles_in_two_steps(first_pass: int, probes: list[int]) -> None:
    # Camera photos land at or next to the guess: the neighbour on the side the guess points
    # to settles it without a binary search.
    seen: list[int] = []
    plan = plan_quality(scorer(first_pass, seen=seen), subsample=True, fallback=95)
    assert (plan.quality, seen) == (first_pass, probes)


def test_search_gives_the_top_rung_when_nothing_passes() -> None:
    plan = plan_quality(lambda q: 0.5, subsample=True, fallback=95)
    assert plan.quality == QUALITY_LADDER[-1] and plan.similarity is None


def test_search_stops_within_its_budget_and_keeps_what_passed() -> None:
    clock = Clock(step_ms=10.0)
    plan = plan_quality(scorer(60, clock), subsample=True, fallback=95, budget_ms=25.0, clock=clock)
    assert plan.reason == "budget" and plan.steps == 2 and clock.now * 1000 <= 25.0
    assert plan.similarity == 0.99 and plan.quality in QUALITY_LADDER and plan.quality < 95


def test_search_out_of_time_before_a_pass_falls_back_to_the_safe_default() -> None:
    clock = Clock(step_ms=10.0)
    plan = plan_quality(scorer(95, clock), subsample=True, fallback=95, budget_ms=15.0, clock=clock)
    assert (plan.quality, plan.subsample, plan.reason, plan.similarity) == (95, False, "fallback", None)
    nothing = plan_quality(scorer(60), subsample=True, fallback=90, budget_ms=0.0)
    assert (nothing.quality, nothing.steps, nothing.reason) == (90, 0, "fallback")


# No budget where the test is about the steps, not the clock (a busy machine could stall).
UNTIMED = float("inf")


def linear(crossing: float, slope: float, seen: list[int] | None = None):  # type: ignore[no-untyped-def]
    """A score that is SSIM-like: a straight line in the quality, 0.97 at ``crossing``."""
    def score(q: int) -> float:
        if seen is not None:
            seen.append(q)
        return SIMILARITY_THRESHOLD + slope * (q - crossing)
    return score


@pytest.mark.parametrize("first_pass", QUALITY_LADDER)
def test_interpolated_search_finds_the_lowest_passing_rung_of_a_step(first_pass: int) -> None:
    # A score with no slope to read (a step) is the worst case: the bisection steps bound it.
    seen: list[int] = []
    plan = plan_interpolated(scorer(first_pass, seen=seen), subsample=True, fallback=95,
                             budget_ms=UNTIMED)
    assert (plan.quality, plan.reason, plan.similarity) == (first_pass, "searched", 0.99)
    assert seen[0] == 86 and len(seen) == len(set(seen)) == plan.steps
    assert plan.steps <= 2 * math.ceil(math.log2(len(QUALITY_LADDER) + 1))
    assert dict(plan.scores) == {q: (0.99 if q >= first_pass else 0.90) for q in seen}


@pytest.mark.parametrize("crossing", [59.0, 61.5, 67.0, 72.3, 77.0, 79.0, 83.5, 85.2, 91.0, 94.0])
@pytest.mark.parametrize("steeper", [1, 2])
def test_interpolated_search_settles_a_straight_line_in_few_steps(crossing: float,
                                                                   steeper: int) -> None:
    # Bisection takes 4-5 steps on this ladder. A line as steep as TYPICAL_SLOPE settles in
    # 2-3 (the first step's extrapolation lands on or next to the answer); twice as steep,
    # the second step lands further off and the interpolation between the two settles it.
    seen: list[int] = []
    plan = plan_interpolated(linear(crossing, TYPICAL_SLOPE * steeper, seen), subsample=True,
                             fallback=95, budget_ms=UNTIMED)
    assert plan.quality == min(q for q in QUALITY_LADDER if q >= crossing)
    assert plan.steps <= 2 + steeper


def test_interpolated_search_from_a_good_guess_and_slope_takes_two_steps() -> None:
    # How the probe is searched after the sparse probe: started at the rung the sparse one
    # scored closest to the threshold, extrapolating with the slope it measured there.
    seen: list[int] = []
    plan = plan_interpolated(linear(79.0, slope=0.004, seen=seen), subsample=True, fallback=95,
                             budget_ms=UNTIMED, first=80, slope=0.004)
    assert (plan.quality, seen) == (80, [80, 78])


def test_interpolated_search_as_a_guide_stops_near_the_threshold() -> None:
    # The sparse probe's use: any rung that close is where the probe's search starts.
    seen: list[int] = []
    plan = plan_interpolated(linear(79.3, TYPICAL_SLOPE, seen), subsample=True, fallback=95,
                             budget_ms=UNTIMED, near=0.001)
    assert (plan.reason, plan.quality, seen) == ("near", 80, [86, 80])
    assert plan.similarity is not None and abs(plan.similarity - SIMILARITY_THRESHOLD) < 0.001
    assert [q for q, _ in plan.scores] == [80, 86]


@given(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 0.05)), min_size=len(QUALITY_LADDER),
                max_size=len(QUALITY_LADDER)), st.floats(0.9, 1.1),
       st.sampled_from(QUALITY_LADDER), st.sampled_from([0.0001, TYPICAL_SLOPE, 0.01]))
def test_interpolated_search_agrees_with_bisection_on_monotone_scores(
        rises: list[float], threshold: float, first: int, slope: float) -> None:
    # Plateaus (no rise) and a slope far off the scores' own are where interpolation walks
    # a rung at a time; the bisection steps keep it within the bound.
    values: dict[int, float] = {}
    total = 0.9
    for q, rise in zip(QUALITY_LADDER, rises, strict=True):
        total += rise
        values[q] = total
    fast = plan_interpolated(values.__getitem__, subsample=True, fallback=95,
                             budget_ms=UNTIMED, threshold=threshold, first=first, slope=slope)
    slow = plan_quality(values.__getitem__, subsample=True, fallback=95, budget_ms=UNTIMED,
                        threshold=threshold)
    assert (fast.quality, fast.similarity) == (slow.quality, slow.similarity)
    assert fast.steps <= 2 * math.ceil(math.log2(len(QUALITY_LADDER) + 1))


def test_interpolated_search_keeps_the_budget_rule() -> None:
    clock = Clock(step_ms=10.0)
    plan = plan_interpolated(scorer(60, clock), subsample=True, fallback=95, budget_ms=25.0,
                             clock=clock)
    assert plan.reason == "budget" and plan.steps == 2 and clock.now * 1000 <= 25.0
    assert plan.similarity == 0.99 and plan.quality < 95
    nothing = plan_interpolated(scorer(60), subsample=True, fallback=90, budget_ms=0.0)
    assert (nothing.quality, nothing.subsample, nothing.steps, nothing.reason) == (
        90, False, 0, "fallback")
    top = plan_interpolated(lambda q: 0.5, subsample=True, fallback=95)
    assert (top.quality, top.similarity, top.reason) == (QUALITY_LADDER[-1], None, "searched")


# -- the metric ---------------------------------------------------------------------------


def test_ssim_is_one_for_identical_and_falls_with_quality(photo_pixels: Image.Image) -> None:
    assert ssim(photo_pixels, photo_pixels) == pytest.approx(1.0, abs=1e-6)
    scores = [ssim(photo_pixels, decoded(encode_lossy(photo_pixels, "JPEG", q, True)))
              for q in (30, 60, 85, 95)]
    assert scores == sorted(scores) and scores[0] < 0.95 < scores[-1] < 1.0


def test_chroma_subsampling_kept_for_photos_refused_for_coloured_text(
        photo_pixels: Image.Image) -> None:
    assert chroma_survives_subsampling(photo_pixels)
    text = Image.new("RGB", (600, 300), (250, 250, 250))
    draw = ImageDraw.Draw(text)
    for i in range(12):
        draw.text((10, 10 + 24 * i), "red and blue text " * 4, fill=((220, 0, 0), (0, 0, 200))[i % 2])
    assert not chroma_survives_subsampling(text)
    assert chroma_survives_subsampling(text.convert("L"))


def test_probe_is_whole_block_rows_and_tracks_the_full_image(photo_pixels: Image.Image) -> None:
    probe = probe_rows(photo_pixels)
    assert probe.width == photo_pixels.width and probe.height % 16 == 0
    assert probe.width * probe.height <= 200_000 < photo_pixels.width * photo_pixels.height
    assert probe_rows(photo_pixels.crop((0, 0, 300, 200))).size == (300, 200)
    reference = LumaReference.of(probe, seams=16)
    for q in (70, 85):
        full = ssim(photo_pixels, decoded(encode_lossy(photo_pixels, "JPEG", q, True)))
        part = reference.ssim(decoded(encode_lossy(probe, "JPEG", q, True)))
        assert abs(full - part) < PROBE_MARGIN


def test_zero_budget_search_is_the_fallback(photo_pixels: Image.Image) -> None:
    plan = search_quality(photo_pixels, "JPEG", 95, budget_ms=0.0)
    assert (plan.quality, plan.subsample, plan.reason) == (95, False, "fallback")


def test_search_gives_what_bisection_on_the_probe_gives(photo_pixels: Image.Image) -> None:
    # The sparse probe only guides the search: the rung is the one bisection over the probe
    # itself finds (the search before the sparse probe and interpolation).
    probe = probe_rows(photo_pixels)
    subsample = chroma_survives_subsampling(probe, 16)
    reference = LumaReference.of(probe, seams=16)

    def score(q: int) -> float:
        return reference.ssim(decoded(encode_lossy(probe, "JPEG", q, subsample)))

    for threshold in (0.95, SIMILARITY_THRESHOLD, 0.972):  # all reached under RUNAWAY_QUALITY
        fast = search_quality(photo_pixels, "JPEG", 95, threshold=threshold, budget_ms=10_000)
        slow = plan_quality(score, subsample=subsample, fallback=95, budget_ms=10_000,
                            threshold=threshold + PROBE_MARGIN,
                            ladder=[q for q in QUALITY_LADDER if q <= 88])
        assert (fast.quality, fast.subsample, fast.similarity) == (
            slow.quality, slow.subsample, slow.similarity)


@pytest.mark.usefixtures("unhurried_quality_search")
def test_search_hands_over_its_encode_of_a_whole_image(photo_pixels: Image.Image) -> None:
    # A probe that is the image itself: the encode at the chosen quality is the upload.
    small = photo_pixels.crop((0, 0, 400, 300))
    plan = search_quality(small, "JPEG", 95, budget_ms=10_000)
    assert plan.data == encode_lossy(small, "JPEG", plan.quality, plan.subsample)
    out = prepare_image(small, "openai-high")
    assert out.data == plan.data
    assert search_quality(photo_pixels, "JPEG", 95, budget_ms=10_000).data is None  # a probe


def test_small_image_goes_at_the_small_image_quality_unsearched(
        photo_pixels: Image.Image) -> None:
    small = photo_pixels.resize((120, 90))
    assert small.width * small.height < SEARCH_MIN_PIXELS
    plan = search_quality(small, "JPEG", 95)
    assert (plan.quality, plan.steps, plan.reason, plan.similarity) == (
        SMALL_IMAGE_QUALITY, 0, "small", None)
    assert plan.subsample == chroma_survives_subsampling(small)  # still judged
    out = prepare_image(small, "openai-high")
    assert (out.quality, out.quality_source, out.similarity) == (SMALL_IMAGE_QUALITY, "small", None)


# -- camera-like photos -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_generated_photos_compress_like_camera_photos(seed: int) -> None:
    # Camera JPEGs at quality 85 reach about 38-42 dB PSNR and ~1-2 bits per pixel at full
    # resolution; the earlier generator gave 37.7 dB and 1.7 bpp (33 dB at 1024x768).
    db, bpp = compression_at(camera_pixels(seed))
    assert 38.0 <= db <= 42.0 and 0.8 <= bpp <= 1.6


@pytest.mark.parametrize("target", ["openai-high", "anthropic"])
@pytest.mark.usefixtures("unhurried_quality_search")
def test_photo_bytes_near_plain_q85_and_similarity_above_threshold(target: str) -> None:
    # The search runs to its end here and is judged on its result; its wall-clock budget is
    # tested on a virtual clock above.
    data = camera_photo(3, orientation=6, gps=True)
    reference = prepare_pixels(data, target)
    out = prepare_image(data, target)
    assert out.format == "JPEG" and out.quality_source == "measured"
    assert out.subsampled
    assert out.quality is not None and out.quality < 95
    assert ssim(reference, decoded(out.data)) >= SIMILARITY_THRESHOLD
    plain = io.BytesIO()
    reference.save(plain, "JPEG", quality=85, subsampling=2)
    assert out.bytes_after <= 1.1 * len(plain.getvalue())
    fixed = prepare_image(data, target, quality=95)  # the caller's fixed quality: as before
    assert (fixed.quality, fixed.subsampled, fixed.quality_source) == (95, False, "fixed")
    assert out.bytes_after < 0.6 * fixed.bytes_after
    img = decoded(out.data)
    assert img.size == (out.width, out.height) and out.height > out.width  # orientation 6
    assert len(img.getexif()) == 0 and b"GPS" not in out.data


def test_heic_input_where_pillow_heif_is_installed() -> None:
    pillow_heif = pytest.importorskip("pillow_heif", reason="the heic extra installs pillow-heif")
    from benchmarks.fixtures.photos import camera_exif

    pillow_heif.register_heif_opener()
    upright = Image.new("RGB", (320, 200), (128, 128, 128))
    ImageDraw.Draw(upright).rectangle((0, 0, 80, 50), fill=(255, 0, 0))
    buf = io.BytesIO()
    stored = upright.transpose(Image.Transpose.ROTATE_90)  # shown upright by orientation 6
    stored.save(buf, "HEIF", quality=90, exif=camera_exif(6, gps=True).tobytes())
    out = prepare_image(buf.getvalue(), "openai-high")
    img = decoded(out.data).convert("RGB")
    assert out.original_format == "HEIF" and img.size == (320, 200)
    assert len(img.getexif()) == 0 and b"GPS" not in out.data
    r, g, b = img.getpixel((20, 12))  # type: ignore[misc]
    assert r > 200 and g < 60 and b < 60
