"""The photo / graphic / text decision (``preprocess._content``): the pure rule, and its
result on the labelled set (real photographs from scikit-image's wheel, colour and
grayscale; screenshots, charts, diagrams and text rendered in both modes)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from benchmarks.fixtures.sample_images import (
    Sample,
    dashboard,
    real_photo,
    real_photos,
    synthetic_images,
    wheel_graphics,
)
from llmclient.preprocess import ContentStats, classify_content, measure_content
from llmclient.preprocess._content import SAMPLE_MAX_PIXELS, sample_strips
from llmclient.preprocess._decode import normalise_mode

pytest.importorskip("skimage", reason="the test extra installs scikit-image (its sample photos)")


def pixels(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return normalise_mode(img)


def decide(sample: Sample) -> str:
    return classify_content(measure_content(pixels(sample.data)))


# -- the pure rule ------------------------------------------------------------------------


@pytest.mark.parametrize(("stats", "expect"), [
    (ContentStats(noise=0.6, spike=0.05, strokes=0.01), "photo"),  # noise: a photograph
    (ContentStats(noise=0.3, spike=0.06, strokes=0.0), "photo"),  # smooth, spread-out levels
    (ContentStats(noise=0.0, spike=1.0, strokes=0.001), "graphic"),  # flat fills, few strokes
    (ContentStats(noise=0.0, spike=1.0, strokes=0.03), "text"),  # flat fills, many strokes
    (ContentStats(noise=0.4, spike=0.7, strokes=0.0), "graphic"),  # gradients on palette fills
    (ContentStats(noise=0.7, spike=0.7, strokes=0.0), "photo"),  # a clipped background
    # The same middle ground with a photograph's colour count: photographic content in it.
    (ContentStats(noise=0.4, spike=0.7, strokes=0.0, many_colours=True), "photo"),
    (ContentStats(noise=0.0, spike=1.0, strokes=0.0, many_colours=True), "graphic"),
])
def test_rule(stats: ContentStats, expect: str) -> None:
    assert classify_content(stats) == expect


# -- the labelled set ---------------------------------------------------------------------


@pytest.mark.parametrize("sample", real_photos(), ids=lambda s: s.name)
def test_every_real_photograph_is_a_photo(sample: Sample) -> None:
    assert decide(sample) == "photo"


@pytest.mark.parametrize("sample", synthetic_images((0, 1)), ids=lambda s: s.name)
def test_rendered_text_and_graphics_are_told_apart_in_colour_and_gray(sample: Sample) -> None:
    assert decide(sample) == sample.label


def test_the_wheels_graphics() -> None:
    decided = {s.name: decide(s) for s in wheel_graphics()}
    # The hue wheel is a smooth synthetic gradient with no flat fill: it reads as a photo,
    # and JPEG is the better format for it anyway (as before: 86k colours).
    assert decided.pop("color.png") == "photo"
    assert set(decided.values()) == {"graphic"}


@pytest.mark.parametrize("name", ["chelsea.png", "camera.png"])
def test_a_photo_on_a_white_page_is_judged_by_the_photo(name: str) -> None:
    photo = pixels(real_photo(name))
    page = Image.new(photo.mode, (1600, 1200), 255 if photo.mode == "L" else (255, 255, 255))
    page.paste(photo, (600, 400))  # three quarters of the pixels are flat white
    assert classify_content(measure_content(page)) == "photo"


def test_the_sample_is_bounded_whole_rows() -> None:
    img = pixels(real_photo("camera.png")).resize((4000, 3000))
    strips = sample_strips(img)
    assert strips.width == 4000 and strips.height % 8 == 0
    assert strips.width * strips.height <= SAMPLE_MAX_PIXELS
    assert strips.crop((0, 0, 4000, 8)).tobytes() == img.crop((0, 0, 4000, 8)).tobytes()
    small = pixels(real_photo("microaneurysms.png"))
    assert sample_strips(small) is small


def _jpeg(img: Image.Image, quality: int) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def test_colour_pages_with_photographic_content_stay_lossy() -> None:
    # A screenshot saved as JPEG, and a page with a real photograph in it: their noise and
    # flat fills sit in the middle; tens of thousands of colours settle them as photos,
    # the lossy JPEG they always were (as PNG the page would be 4.3x the q85 bytes).
    page = dashboard(3)
    hero = pixels(real_photo("astronaut.png")).convert("RGB").resize((900, 600))
    page.paste(hero, (500, 420))
    for img in (pixels(_jpeg(dashboard(0), 90)), page):
        stats = measure_content(img)
        assert stats.many_colours and classify_content(stats) == "photo"
    # The same screenshot in gray has no colour count to go by: a graphic.
    gray = pixels(_jpeg(dashboard(0).convert("L"), 90))
    assert classify_content(measure_content(gray)) == "graphic"
