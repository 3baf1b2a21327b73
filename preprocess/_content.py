"""What an image is: a photograph, a graphic, or rendered text. Decides PNG or JPEG.

A camera, scanner or telescope leaves noise everywhere it records detail: next to any pixel
that is not clipped, the neighbour differs by a level or two. Software draws flat fills and
clean edges: neighbours are equal, or differ by a whole step. That holds in any colour mode,
so the decision reads luma only (an 8-bit grayscale photograph has at most 256 colours, which
is why counting colours sent every one of them out as a graphic), from three statistics of
the horizontal neighbour differences (``ContentStats``):

* ``noise``: among the 8x8 blocks that are not perfectly flat, the share of neighbour pairs
  that differ by 1 or 2 levels out of those that differ by at most 2. Photographs score
  0.29-0.8, rendered content under 0.06; a perfectly flat block (a clipped sky, a UI panel)
  says nothing either way, so it is left out, and a product shot on white is judged by the
  product.
* ``spike``: how much of the perfectly flat area sits on isolated luma levels (a fill colour
  whose neighbouring levels are absent) rather than on a smooth spread of levels. Palette
  fills are spikes; flat patches of a photograph spread over neighbouring levels. It settles
  smooth graphics whose gradients and anti-aliasing raise ``noise`` (a logo, a gradient
  header), unless the image also has more than ``MANY_COLOURS`` colours: in colour, that
  middle ground with a photograph's colour count is photographic content after all (a page
  with a photo in it, a screenshot saved as JPEG), and it stays lossy as it always was.
* ``strokes``: the share of pixels that are a thin stroke, at least ``STROKE_STEP`` darker
  (or lighter) than both pixels two to each side. Glyphs are thin strokes; chart bars, boxes
  and photographs have few. It is the evidence for ``text``.

A photograph can carry text too (a photographed page): ``has_text_lines`` finds rows dense
with strokes separated by gaps, and the quality search then holds such a photo to a higher
similarity (``_quality.TEXT_SIMILARITY_THRESHOLD``); it stays a lossy photo.

``classify`` holds the rule and takes the statistics only, so it is tested without pixels;
``measure`` is the Pillow side. The thresholds were set on the labelled set in
``benchmarks/fixtures/sample_images.py`` (real photographs from scikit-image's wheel,
rendered screenshots, charts, diagrams and text, colour and grayscale); the README gives its
confusion matrix.

Measured on evenly spaced 8-row strips (at most ``SAMPLE_MAX_PIXELS``), so the cost does not
grow with the image.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageChops

__all__ = [
    "GRAPHIC",
    "MANY_COLOURS",
    "NOISE_PHOTO_MIN",
    "PHOTO",
    "TEXT",
    "ContentStats",
    "classify",
    "classify_content",
    "has_text_lines",
    "measure",
    "measure_content",
]

PHOTO = "photo"
GRAPHIC = "graphic"
TEXT = "text"

# Below this ``noise`` an image is drawn by software; photographs in the labelled set score
# at least 0.29 (a processed image of the moon), rendered content at most 0.06 (a
# dashboard's gradient header).
NOISE_PHOTO_MIN = 0.15
# Between NOISE_PHOTO_MIN and this, flat areas that are mostly palette spikes still make a
# graphic (the scikit-image logo: noise 0.40, spike 0.64; the moon: 0.29 and 0.06; the
# astronaut, whose black background is clipped: 0.71 and 0.48).
NOISE_SMOOTH_GRAPHIC_MAX = 0.45
SPIKE_GRAPHIC_MIN = 0.55
# Distinct colours in the image above which that middle ground is a photo (colour only: a
# grayscale image has at most 256). The logo has 2,139; a dashboard screenshot saved as JPEG
# (noise 0.24, spike 0.67) or a web page with a photo in it (0.40, 0.66) tens of thousands.
MANY_COLOURS = 4096
# A synthetic image is text when at least this share of pixels are thin strokes: rendered
# pages, code, chats and terminals score 0.0066 or more, charts, diagrams and UI without
# much text at most 0.0038 (seeds 0-2 of the rendered set).
STROKES_TEXT_MIN = 0.005
STROKE_STEP = 48  # luma levels: the contrast of a glyph stroke against its background
SMALL_STEP = 2  # neighbour differences up to this are noise (or a smooth gradient)
SAMPLE_MAX_PIXELS = 64_000
# Lines of text in a photograph (a photographed page): looked for only when the sample has at
# least this many strokes (the page of the labelled set 0.073, grass 0.048, every other
# photograph below 0.019), on the resized image, row by row (``has_text_lines``).
STROKES_LINES_MIN = 0.02
# A row of text: at least this share of its pixels are strokes (about 1 in 25, as /255) in
# the densest tenth of rows, and at least LINE_GAPS_MIN of the rows are gaps between lines
# (under a tenth of that). The photographed page: 74/255 and 0.59 of rows; rendered pages,
# code, chats, terminals 14-72 and 0.55-0.70; grass and gravel 17 and 7 with no gaps.
LINE_INK_MIN = 10
LINE_GAPS_MIN = 0.3
_STRIP = 8  # rows per sampled strip: one block row


@dataclass(frozen=True)
class ContentStats:
    """The statistics ``classify`` decides on (see the module doc)."""

    noise: float
    spike: float
    strokes: float
    many_colours: bool = False  # more than MANY_COLOURS colours (measured only where it matters)


def classify(stats: ContentStats) -> str:
    """``"photo"``, ``"graphic"`` or ``"text"``."""
    synthetic = stats.noise < NOISE_PHOTO_MIN or (
        stats.noise < NOISE_SMOOTH_GRAPHIC_MAX and stats.spike >= SPIKE_GRAPHIC_MIN
        and not stats.many_colours)
    if not synthetic:
        return PHOTO
    return TEXT if stats.strokes >= STROKES_TEXT_MIN else GRAPHIC


# The public names (``llmclient.preprocess``).
classify_content = classify


def sample_strips(y: Image.Image, max_pixels: int = SAMPLE_MAX_PIXELS) -> Image.Image:
    """Evenly spaced 8-row strips of ``y`` stacked (``y`` itself when small enough); rows are
    compared only with their own row, so the seams do not matter."""
    rows = y.height // _STRIP
    if y.width * y.height <= max_pixels or rows < 2:
        return y
    keep = max(1, min(rows, max_pixels // (y.width * _STRIP)))
    out = Image.new(y.mode, (y.width, keep * _STRIP))
    for n in range(keep):
        top = ((n * rows) // keep) * _STRIP
        out.paste(y.crop((0, top, y.width, top + _STRIP)), (0, n * _STRIP))
    return out


def measure(img: Image.Image) -> ContentStats:
    """The statistics of ``img`` (any mode Pillow converts to L)."""
    sample = sample_strips(img)  # before converting: only the sampled rows are converted
    y = sample if sample.mode == "L" else sample.convert("L")
    w, h = y.size
    if w < 5:
        return ContentStats(noise=0.0, spike=1.0, strokes=0.0)  # too narrow to tell: lossless
    left, right = y.crop((0, 0, w - 1, h)), y.crop((1, 0, w, h))
    diff = ImageChops.difference(left, right)
    noise, spike = _noise(diff), _spike(left, diff)
    many = False
    if img.mode != "L" and NOISE_PHOTO_MIN <= noise < NOISE_SMOOTH_GRAPHIC_MAX:
        # Only where the rule asks; on the whole image (a sample sees fewer colours), which
        # stops counting at MANY_COLOURS.
        many = img.getcolors(MANY_COLOURS) is None
    return ContentStats(noise, spike, _strokes(y), many)


def _noise(diff: Image.Image) -> float:
    # One pass codes each pair: 1 equal, 2 within SMALL_STEP, 0 otherwise; the histogram
    # counts them over the active blocks only (its mask).
    code = diff.point([1] + [2] * SMALL_STEP + [0] * (255 - SMALL_STEP))
    active = None
    if diff.width >= 8 and diff.height >= 8:
        # Per 8x8 block: the share of zero pairs; blocks at 255 are perfectly flat.
        blocks = diff.point([255] + [0] * 255).reduce(8)
        active = blocks.point([255] * 255 + [0]).resize(diff.size, Image.Resampling.NEAREST)
    counts = code.histogram(mask=active)
    z, s = counts[1], counts[2]
    return s / (z + s) if z + s else 0.0


def _spike(left: Image.Image, diff: Image.Image) -> float:
    flat = left.histogram(mask=diff.point([255] + [0] * 255))
    total = sum(flat)
    if not total:
        return 0.0
    padded = [0, *flat, 0]
    excess = sum(max(0, padded[i] - max(padded[i - 1], padded[i + 1])) for i in range(1, 257))
    return excess / total


def _contrast(y: Image.Image) -> Image.Image:
    """Per pixel (less 2 at each side): how far it stands out of both pixels 2 away."""
    w, h = y.size
    a, c, b = y.crop((0, 0, w - 4, h)), y.crop((2, 0, w - 2, h)), y.crop((4, 0, w, h))
    dark = ImageChops.subtract(ImageChops.darker(a, b), c)
    light = ImageChops.subtract(c, ImageChops.lighter(a, b))
    return ImageChops.lighter(dark, light)


def _strokes(y: Image.Image) -> float:
    counts = _contrast(y).histogram()
    return sum(counts[STROKE_STEP:]) / ((y.width - 4) * y.height)


def has_text_lines(stats: ContentStats, img: Image.Image) -> bool:
    """Whether a photograph shows lines of text: rows dense with strokes, separated by rows
    with almost none. ``img`` is the resized image (whole rows; a few ms on 1024x768), looked
    at only when ``stats`` has enough strokes to be worth it."""
    if stats.strokes < STROKES_LINES_MIN or img.width < 5 or img.height < 10:
        return False
    y = img if img.mode == "L" else img.convert("L")
    ink = _contrast(y).point([0] * STROKE_STEP + [255] * (256 - STROKE_STEP))
    rows = sorted(ink.resize((1, ink.height), Image.Resampling.BOX).tobytes())
    dense = rows[(9 * (len(rows) - 1)) // 10]
    if dense < LINE_INK_MIN:
        return False
    gaps = sum(1 for v in rows if v <= dense // 10)
    return gaps >= LINE_GAPS_MIN * len(rows)


measure_content = measure
