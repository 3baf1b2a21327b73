"""prepare_image: source in, upload-ready bytes out."""

from __future__ import annotations

import base64
import time
import warnings
from dataclasses import dataclass
from typing import Any

from PIL import Image

from ._content import PHOTO, classify, has_text_lines, measure
from ._decode import (
    DEFAULT_MAX_INPUT_PIXELS,
    apply_orientation,
    check_pixels,
    load_pixels,
    normalise_mode,
    open_image,
    orientation_of,
    swaps_axes,
    to_srgb,
)
from ._encode import MIME, Encoded, choose_formats, encode_within_budget
from ._quality import SIMILARITY_THRESHOLD, TEXT_SIMILARITY_THRESHOLD
from ._source import read_source
from ._targets import Target, estimate_tokens, get_target, plan_resize

__all__ = ["PreparedImage", "prepare_image", "prepare_pixels"]

_JPEG_FAMILY = ("JPEG", "MPO")
# Bicubic for the exact final step: the filter servers like the reference server use for
# their own resize, so the model's view matches theirs (benchmarks/image_prep.py's raw row
# compares the two paths) at two thirds of Lanczos' cost.
DEFAULT_RESAMPLE = Image.Resampling.BICUBIC


@dataclass(frozen=True)
class PreparedImage:
    """An image ready to upload, and what preparing it changed."""

    data: bytes
    format: str  # "JPEG" | "PNG" | "WEBP"
    width: int
    height: int
    original_format: str | None
    original_width: int  # as displayed (after EXIF orientation)
    original_height: int
    bytes_before: int | None  # None when the source was a PIL image
    target: str
    tokens: int | None
    quality: int | None  # JPEG/WebP quality used; None for PNG
    elapsed_ms: float
    # 4:2:0 chroma (JPEG chose it, WebP always has it); None for PNG.
    subsampled: bool | None = None
    # Luma SSIM of the chosen quality against the resized pixels, measured on the search's
    # probe; None when not measured (PNG, a fixed ``quality``, or the search ran out of time).
    # For noise-like content chosen at half scale (``_quality.RUNAWAY_QUALITY``) it is the
    # SSIM of 2x-reduced copies.
    similarity: float | None = None
    # How the quality was chosen: "measured", "budget" (search cut short), "fallback" (the
    # target's quality: nothing measured in time), "small" (an image too small for the search
    # to pay: ``_quality.SMALL_IMAGE_QUALITY``), "fixed" (the caller's), None for PNG.
    quality_source: str | None = None
    # What the source was judged to be: "photo", "graphic" or "text" (``preprocess._content``).
    content: str | None = None

    @property
    def bytes_after(self) -> int:
        return len(self.data)

    @property
    def mime_type(self) -> str:
        return MIME[self.format]

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"


def prepare_image(
    source: Any,
    target: str | Target = "openai-high",
    *,
    quality: int | None = None,
    webp: bool = False,
    max_input_pixels: int | None = DEFAULT_MAX_INPUT_PIXELS,
    resample: Image.Resampling = DEFAULT_RESAMPLE,
) -> PreparedImage:
    """Resize, orient, strip and re-encode ``source`` for ``target``.

    ``source``: a path, bytes, a binary file object, a PIL image or a ``data:`` URL.
    ``target``: ``"openai-high"``, ``"openai-low"``, ``"anthropic"``, ``"gemini"`` or a Target.
    ``quality``: a fixed JPEG/WebP quality; by default it is measured per image: the lowest
    whose luma SSIM against the resized pixels stays at least ``SIMILARITY_THRESHOLD``
    (``preprocess._quality``), within a time budget, else the target's quality.
    ``webp``: let WebP compete with JPEG for photos (smaller at the same similarity on some
    images, but several times slower to encode). ``max_input_pixels``: refuse larger images before decoding.
    ``resample``: the filter for the final exact resize (after any DCT-domain downscale).
    Raises an ImageError subclass naming what failed.
    """
    start = time.perf_counter()
    tgt = get_target(target)
    px = _pixels(source, tgt, max_input_pixels, resample)
    img = px.image
    has_alpha = img.mode in ("RGBA", "LA")
    formats = choose_formats(px.graphic, has_alpha, tgt, webp)
    q = quality if quality is not None else tgt.quality
    threshold = TEXT_SIMILARITY_THRESHOLD if px.text_lines else SIMILARITY_THRESHOLD
    enc = encode_within_budget(img, tgt, formats, px.graphic, q, px.icc, webp,
                               search=quality is None, threshold=threshold)
    return PreparedImage(
        data=enc.data,
        format=enc.format,
        width=enc.size[0],
        height=enc.size[1],
        original_format=px.original_format,
        original_width=px.shown[0],
        original_height=px.shown[1],
        bytes_before=px.bytes_before,
        target=tgt.name,
        tokens=estimate_tokens(enc.size[0], enc.size[1], tgt),
        quality=enc.quality,
        elapsed_ms=(time.perf_counter() - start) * 1000.0,
        subsampled=enc.subsample,
        similarity=enc.plan.similarity if enc.plan is not None and enc.plan.quality == enc.quality
        else None,
        quality_source=_source_of(enc),
        content=px.content,
    )


def prepare_pixels(
    source: Any,
    target: str | Target = "openai-high",
    *,
    max_input_pixels: int | None = DEFAULT_MAX_INPUT_PIXELS,
    resample: Image.Resampling = DEFAULT_RESAMPLE,
) -> Image.Image:
    """The pixels ``prepare_image`` encodes: decoded, upright, resized, sRGB, no metadata.

    The reference a prepared upload is measured against (tests, benchmarks).
    """
    return _pixels(source, get_target(target), max_input_pixels, resample).image


@dataclass(frozen=True)
class _Pixels:
    image: Image.Image
    icc: bytes | None  # a profile that must still travel (no LittleCMS), else None
    content: str  # "photo" | "graphic" | "text" (``_content.classify``)
    text_lines: bool  # a photograph that shows lines of text (``_content.has_text_lines``)
    original_format: str | None
    shown: tuple[int, int]  # the source's size as displayed
    bytes_before: int | None

    @property
    def graphic(self) -> bool:
        return self.content != PHOTO


def _pixels(source: Any, tgt: Target, max_input_pixels: int | None,
            resample: Image.Resampling) -> _Pixels:
    raw = read_source(source)
    if isinstance(raw, Image.Image):
        img, bytes_before = raw, None
        check_pixels(img.width, img.height, max_input_pixels)
    else:
        img, bytes_before = open_image(raw, max_input_pixels), len(raw)
    original_format = img.format
    orientation = orientation_of(img)
    swap = swaps_axes(orientation)
    shown = (img.height, img.width) if swap else img.size
    out_w, out_h = plan_resize(shown[0], shown[1], tgt)
    file_size = (out_h, out_w) if swap else (out_w, out_h)  # in the file's own orientation
    icc = img.info.get("icc_profile") if img.mode in ("RGB", "RGBA", "P") else None

    caller_image = img if bytes_before is None else None
    if original_format in _JPEG_FAMILY and file_size != img.size and caller_image is None:
        # DCT-domain downscale by 1/2, 1/4 or 1/8 while decoding (never below file_size),
        # then an exact high-quality resample: a fraction of the cost of a full decode.
        # Never on the caller's own PIL image: draft() shrinks that object in place.
        img.draft(None, file_size)
    load_pixels(img)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # palette-with-transparency notices
        img = normalise_mode(img)
    stats = measure(img)  # before the resize blurs the noise it reads
    content = classify(stats)
    if img.size != file_size:
        img = img.resize(file_size, resample, reducing_gap=3.0)
    img = apply_orientation(img, orientation)
    img, icc = to_srgb(img, icc)
    if img is caller_image:
        img = img.copy()  # nothing changed it so far; the caller's image keeps its metadata
    img.info = {}  # no EXIF, XMP, comments or text chunks reach the encoder
    text_lines = content == PHOTO and has_text_lines(stats, img)

    return _Pixels(img, icc, content, text_lines, original_format, shown, bytes_before)


def _source_of(enc: Encoded) -> str | None:
    if enc.quality is None:
        return None
    if enc.plan is None or enc.plan.quality != enc.quality:
        return "fixed"  # the caller's quality, or the byte budget's ladder
    return {"searched": "measured"}.get(enc.plan.reason, enc.plan.reason)
