"""Choose the output format by content and encode within the byte budget.

Photos (``_content.classify``): the lossy quality comes from ``_quality.search_quality``
(measured per image) unless the caller fixed one; graphics and rendered text: PNG unless PNG
costs far more than a lossy encode.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image

from ._errors import ImageBudgetError
from ._quality import SIMILARITY_THRESHOLD, QualityPlan, encode_lossy, search_quality
from ._targets import Target

__all__ = [
    "Encoded",
    "choose_formats",
    "encode_within_budget",
    "quality_steps",
]

# A graphic stays PNG (lossless, no ringing around text) unless PNG costs more than this
# many times the JPEG bytes: then it is photo-like after all (e.g. a screenshot of a photo).
PNG_OVER_JPEG_LIMIT = 3.0
# Quality floor and the shrink step used when the budget is not met.
MIN_QUALITY = 40
SHRINK_STEP = 0.75
MIN_SIDE = 16
HIGH_QUALITY = 90

MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}


@dataclass(frozen=True)
class Encoded:
    data: bytes
    format: str
    quality: int | None
    size: tuple[int, int]
    subsample: bool | None = None  # lossy: 4:2:0 chroma (WebP always); None for PNG
    plan: QualityPlan | None = None  # how the quality was chosen, when it was measured


def choose_formats(graphic: bool, has_alpha: bool, target: Target, webp: bool) -> list[str]:
    """Candidate formats, best first, among those the target accepts.

    Alpha rules out JPEG; graphics prefer lossless PNG; photos JPEG, with WebP as a
    contender when the caller allows it (smaller at equal quality, slower to encode).
    """
    accepted = target.formats
    if has_alpha or graphic:
        order = ["PNG", "WEBP"] if has_alpha else ["PNG", "JPEG", "WEBP"]
    else:
        order = ["JPEG", "WEBP"] if webp else ["JPEG"]
        order += [f for f in ("PNG", "WEBP") if f not in order]
    return [f for f in order if f in accepted]


def quality_steps(quality: int) -> list[int]:
    """The quality ladder tried when over budget: the requested one, then down by 10s."""
    steps = [quality]
    q = (quality // 10) * 10
    while q >= MIN_QUALITY:
        if q < quality:
            steps.append(q)
        q -= 10
    return steps


def shrink_sizes(width: int, height: int) -> Iterator[tuple[int, int]]:
    """Ever smaller sizes (by SHRINK_STEP) down to MIN_SIDE on the short edge."""
    w, h = width, height
    while True:
        w, h = round(w * SHRINK_STEP), round(h * SHRINK_STEP)
        if min(w, h) < MIN_SIDE:
            return
        yield w, h


def encode(img: Image.Image, fmt: str, quality: int, icc: bytes | None) -> bytes:
    """``img`` as ``fmt``; lossy at a fixed ``quality``. Nothing from the source travels
    unless passed here: no EXIF, XMP, comments."""
    if fmt == "PNG":
        buf = io.BytesIO()
        img.save(buf, "PNG", compress_level=6, **({"icc_profile": icc} if icc else {}))
        return buf.getvalue()
    if fmt not in ("JPEG", "WEBP"):
        raise ValueError(f"cannot encode {fmt}")
    # A fixed quality keeps the old rule: full-resolution chroma (4:4:4) at high quality,
    # 4:2:0 once bytes matter more. Measured qualities decide chroma from the image itself.
    return encode_lossy(img, fmt, quality, quality < HIGH_QUALITY, icc)


def _fixed(img: Image.Image, fmt: str, quality: int, icc: bytes | None) -> Encoded:
    data = encode(img, fmt, quality, icc)
    subsample = None if fmt == "PNG" else fmt == "WEBP" or quality < HIGH_QUALITY
    return Encoded(data, fmt, None if fmt == "PNG" else quality, img.size, subsample)


def _measured(img: Image.Image, fmt: str, fallback: int, icc: bytes | None,
              threshold: float = SIMILARITY_THRESHOLD) -> Encoded:
    """Encode at the quality the search finds for this image (see ``_quality``)."""
    plan = search_quality(img, fmt, fallback, threshold=threshold)
    subsample = plan.subsample or fmt == "WEBP"
    # The search may already hold these bytes (it encoded the whole image), unless a colour
    # profile must travel with them.
    data = plan.data if plan.data is not None and not icc else \
        encode_lossy(img, fmt, plan.quality, subsample, icc)
    return Encoded(data, fmt, plan.quality, img.size, subsample, plan)


def _lossy(img: Image.Image, fmt: str, quality: int, icc: bytes | None, search: bool,
           threshold: float = SIMILARITY_THRESHOLD) -> Encoded:
    if search:
        return _measured(img, fmt, quality, icc, threshold)
    return _fixed(img, fmt, quality, icc)


def _best_at_size(
    img: Image.Image, formats: list[str], graphic: bool, quality: int, icc: bytes | None,
    webp: bool, search: bool = False, threshold: float = SIMILARITY_THRESHOLD,
) -> Encoded:
    first = formats[0]
    if first == "PNG":
        png = Encoded(encode(img, "PNG", quality, icc), "PNG", None, img.size)
        lossy = next((f for f in formats[1:] if f in ("JPEG", "WEBP")), None)
        if lossy is None or (img.mode in ("RGBA", "LA") and lossy == "JPEG"):
            return png
        # Compared at the fixed (high) quality, so a graphic leaves PNG only when it is
        # photo-like after all; then its quality is measured like any photo's.
        alt = _fixed(img, lossy, quality, icc)
        if len(png.data) <= PNG_OVER_JPEG_LIMIT * len(alt.data):
            return png
        return _lossy(img, lossy, quality, icc, search, threshold) if search else alt
    best = _lossy(img, first, quality, icc, search, threshold)
    if first == "JPEG" and webp and "WEBP" in formats:
        alt = _lossy(img, "WEBP", quality, icc, search, threshold)
        if len(alt.data) < len(best.data):
            best = alt
    return best


def encode_within_budget(
    img: Image.Image, target: Target, formats: list[str], graphic: bool, quality: int,
    icc: bytes | None, webp: bool, search: bool = False,
    threshold: float = SIMILARITY_THRESHOLD,
) -> Encoded:
    """Encode; when over ``target.max_bytes`` lower the quality, then the size.

    ``search``: measure each lossy image's quality (``quality`` is then the fallback when the
    search runs out of time) against ``threshold``; else encode lossy formats at ``quality``
    as given.
    """
    if not formats:
        raise ImageBudgetError(f"target {target.name!r} accepts none of the usable formats")
    best = _best_at_size(img, formats, graphic, quality, icc, webp, search, threshold)
    budget = target.max_bytes
    if budget is None or len(best.data) <= budget:
        return best
    lossy = [f for f in formats if f in ("JPEG", "WEBP")]
    if img.mode in ("RGBA", "LA"):
        lossy = [f for f in lossy if f == "WEBP"]
    candidate = img
    sizes = [img.size, *shrink_sizes(*img.size)]
    for size in sizes:
        if size != candidate.size:
            candidate = img.resize(size, Image.Resampling.LANCZOS)
        if not lossy:
            data = encode(candidate, formats[0], quality, icc)
            if len(data) <= budget:
                return Encoded(data, formats[0], None, size)
            continue
        for q in quality_steps(min(quality, best.quality or quality)):
            data = encode(candidate, lossy[0], q, icc)
            if len(data) <= budget:
                return Encoded(data, lossy[0], q, size, lossy[0] == "WEBP" or q < HIGH_QUALITY)
    raise ImageBudgetError(
        f"cannot fit {img.width}x{img.height} image in {budget:,} bytes for target "
        f"{target.name!r}, even at quality {MIN_QUALITY} and {MIN_SIDE} px"
    )
