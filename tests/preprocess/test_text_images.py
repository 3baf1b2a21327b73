"""Screenshots, charts and text-heavy images keep their text: prepared for ``openai-high``
and read back by a real OCR engine (Tesseract, Debian's ``tesseract-ocr`` through
``pytesseract``; scripts/ensure-system-deps.sh installs it). Text in DejaVu Sans, the font
Debian ships, or Pillow's own bundled font where DejaVu is missing."""

from __future__ import annotations

import functools
import io
import re
import shutil
from collections.abc import Callable

import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from benchmarks.fixtures.photos import camera_pixels
from llmclient.preprocess import (
    SIMILARITY_THRESHOLD,
    _encode,
    _quality,
    prepare_image,
    prepare_pixels,
    ssim,
)

pytesseract = pytest.importorskip("pytesseract", reason="the test extra installs pytesseract")
if shutil.which("tesseract") is None:
    pytest.skip("tesseract-ocr not installed (scripts/ensure-system-deps.sh)",
                allow_module_level=True)

LINES = [
    "Quarterly revenue grew by seventeen percent",
    "Invoice number 48213 is due on Friday",
    "Restart the server before deploying version",
    "Temperature sensor reported normal values",
    "Customer feedback mentions faster checkout",
    "Backup completed without errors tonight",
]


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for path in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(path, size)
        except OSError:
            continue
    return ImageFont.load_default(size)


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z0-9]{3,}", text)}


EXPECTED = words(" ".join(LINES))


def write_lines(img: Image.Image, colour: tuple[int, int, int], size: int = 20,
                top: int = 40, left: int = 40) -> Image.Image:
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(LINES):
        draw.text((left, top + i * int(size * 1.8)), line, fill=colour, font=font(size))
    return img


def ui_screenshot() -> Image.Image:
    """Flat UI: a title bar, a side panel and lines of text (few colours: a graphic)."""
    img = Image.new("RGB", (1600, 1000), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, 1600, 60), fill=(26, 115, 232))
    draw.rectangle((0, 60, 300, 1000), fill=(245, 246, 248))
    return write_lines(img, (32, 33, 36), size=30, top=120, left=360)


def bar_chart() -> Image.Image:
    """Bars, axes and text labels in colour."""
    img = Image.new("RGB", (1400, 1000), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.line((100, 900, 1350, 900), fill=(0, 0, 0), width=3)
    draw.line((100, 900, 100, 480), fill=(0, 0, 0), width=3)
    for i, h in enumerate((300, 180, 380, 240, 120)):
        x = 160 + i * 230
        draw.rectangle((x, 900 - h, x + 150, 900), fill=((200, 40, 40), (40, 120, 200))[i % 2])
    return write_lines(img, (180, 0, 0), size=28, top=40, left=120)


def text_over_photo() -> Image.Image:
    """White text on a blurred camera-like photo: tens of thousands of colours (a photo to
    the format rule), so it goes lossy and its quality is measured."""
    base = camera_pixels(5, (1600, 1200)).filter(ImageFilter.GaussianBlur(4))
    shade = Image.new("RGB", base.size, (0, 0, 0))
    base = Image.blend(base, shade, 0.45)
    return write_lines(base, (255, 255, 255), size=30, top=120, left=80)


def scanned_page() -> Image.Image:
    """Dark text on noisy, uneven paper, slightly soft, as a phone photo of a page."""
    paper = Image.merge("RGB", [Image.effect_noise((1400, 1050), 12).point(lambda v: 190 + v // 6)
                                for _ in range(3)])
    page = write_lines(paper, (30, 30, 40), size=28, top=100, left=90)
    return page.filter(ImageFilter.GaussianBlur(0.6))


CASES: dict[str, Callable[[], Image.Image]] = {
    "ui_screenshot": ui_screenshot,
    "bar_chart": bar_chart,
    "text_over_photo": text_over_photo,
    "scanned_page": scanned_page,
}


def png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def ocr(img: Image.Image) -> set[str]:
    return words(pytesseract.image_to_string(img.convert("RGB"), config="--psm 6"))


def decoded(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.usefixtures("unhurried_quality_search")
def test_prepared_text_stays_readable(name: str) -> None:
    source = png(CASES[name]())
    reference = prepare_pixels(source, "openai-high")
    readable = ocr(reference) & EXPECTED
    assert len(readable) >= 0.8 * len(EXPECTED), f"the test image itself is unreadable: {name}"

    out = prepare_image(source, "openai-high")
    seen = ocr(decoded(out.data)) & EXPECTED
    lost = readable - seen
    assert len(lost) <= 1, f"{name}: {out.format} q{out.quality} lost {sorted(lost)}"
    if out.format != "PNG":
        assert out.quality_source == "measured"
        assert ssim(reference, decoded(out.data)) >= SIMILARITY_THRESHOLD


@pytest.mark.parametrize("name", ["ui_screenshot", "bar_chart"])
def test_screenshots_and_charts_stay_lossless(name: str) -> None:
    source = png(CASES[name]())
    out = prepare_image(source, "openai-high")
    assert out.format == "PNG"
    assert decoded(out.data).convert("RGB").tobytes() == prepare_pixels(source).tobytes()


@pytest.mark.parametrize("name", ["text_over_photo", "scanned_page"])
def test_text_heavy_photos_are_lossy_at_a_measured_quality(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the search finds, whatever the machine's load: its wall-clock budget (a safeguard of
    # its own, tested in test_quality.py) may not cut it short here, not even before its first
    # rung (on a loaded 2-core machine it did: "fallback").
    monkeypatch.setattr(_encode, "search_quality", functools.partial(_quality.search_quality, budget_ms=60_000.0))
    out = prepare_image(png(CASES[name]()), "openai-high")
    assert out.format == "JPEG" and out.quality_source in ("measured", "budget")
    assert out.similarity is not None and out.similarity >= SIMILARITY_THRESHOLD


def test_ocr_check_catches_text_destroyed_by_low_quality() -> None:
    # The check above can fail: the same page at quality 5 loses words to OCR.
    img = prepare_pixels(png(scanned_page()), "openai-high")
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=5, subsampling=2)
    readable = ocr(img) & EXPECTED
    assert len(readable - ocr(decoded(buf.getvalue()))) > 1
