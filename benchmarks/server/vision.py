"""Image inputs: decode ``image_url`` data URLs with Pillow, resize and count tokens.

Provider rule (OpenAI, "Images and vision" guide, section "Calculating costs",
https://platform.openai.com/docs/guides/images-vision, GPT-4o / GPT-4.1 family; recorded for
this project on 2026-12-02):
  * ``detail: "low"``: a fixed 85 tokens (the model sees a 512x512 version).
  * ``detail: "high"`` (and ``"auto"``, which we treat as high): scale to fit in 2048x2048,
    then scale so the shortest side is 768 px (never upscaling), then count 512 px tiles:
    85 + 170 * tiles tokens.
Anthropic's rule (docs.claude.com/en/docs/build-with-claude/vision, "Evaluate image size" and
"Calculate image costs", as preprocess/_targets.py records it; read again 2026-12): an image
whose long edge is over 1568 px, or over about 1.15 megapixels, is scaled down (aspect kept)
first; tokens = width * height / 750 of the image the model sees; an image over 8000 px on a
side is refused. ``detail="anthropic"`` selects it.

The decode and resize are real CPU work, so the caller runs :func:`process_image` in a thread
and reports its time as the ``image`` Server-Timing metric.

http(s) image URLs are refused with a 400: the server has no network access by design (a
benchmark must not depend on a remote host) and counting a URL it never saw would be a fake
result. Clients inline images as data URLs (``llmclient`` preprocessing does).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import math
import warnings
from dataclasses import dataclass

__all__ = [
    "ANTHROPIC",
    "ImageError",
    "ImageResult",
    "anthropic_size",
    "decode_data_url",
    "high_detail_size",
    "image_tokens",
    "process_image",
]

MAX_FIT = 2048            # first fit in 2048 x 2048
SHORT_SIDE = 768          # then shortest side 768
TILE = 512                # 512 px tiles
BASE_TOKENS = 85
TILE_TOKENS = 170
LOW_DETAIL_TOKENS = 85
# OpenAI accepts images up to 50 MB; we refuse anything that decodes beyond this many pixels
# before reading pixel data, so a small file cannot expand into gigabytes (a "bomb").
MAX_PIXELS = 40_000_000
MAX_IMAGE_BYTES = 20 * 1024 * 1024
SUPPORTED_FORMATS = frozenset({"PNG", "JPEG", "WEBP", "GIF"})  # OpenAI's documented list
DETAILS = ("auto", "low", "high")
ANTHROPIC = "anthropic"  # the detail value that selects Anthropic's rule
ANTHROPIC_MAX_SIDE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_REFUSED_SIDE = 8000
# The media type a base64 source declares, per Pillow format.
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageError(ValueError):
    """An image the server refuses; the app adds which message/part it came from."""


@dataclass(frozen=True)
class ImageResult:
    tokens: int
    digest: str          # content hash, so prefix caching sees identical images as equal
    width: int           # original size
    height: int
    resized_width: int
    resized_height: int


def high_detail_size(width: int, height: int) -> tuple[int, int]:
    """The size OpenAI's high-detail rule resizes an image to (pure)."""
    scale = min(1.0, MAX_FIT / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, SHORT_SIDE / min(w, h))
    return max(1, round(w * scale)), max(1, round(h * scale))


def anthropic_size(width: int, height: int) -> tuple[int, int]:
    """The size Anthropic's rule scales an image to: long edge at most 1568 px and at most
    about 1.15 megapixels, never upscaled (pure)."""
    scale = min(1.0, ANTHROPIC_MAX_SIDE / max(width, height),
                math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    return max(1, int(width * scale)), max(1, int(height * scale))


def image_tokens(width: int, height: int, detail: str) -> int:
    """Prompt tokens an image of this size costs under the provider rule (pure)."""
    if detail == ANTHROPIC:
        w, h = anthropic_size(width, height)
        return max(1, math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN))
    if detail == "low":
        return LOW_DETAIL_TOKENS
    w, h = high_detail_size(width, height)
    return BASE_TOKENS + TILE_TOKENS * math.ceil(w / TILE) * math.ceil(h / TILE)


def decode_data_url(url: str) -> bytes:
    """The bytes of a ``data:image/...;base64,`` URL (RFC 2397)."""
    if url.startswith(("http://", "https://")):
        raise ImageError(
            "image URLs are not fetched by this server (it has no network access); "
            "send the image inline as a data:image/...;base64 URL"
        )
    header, sep, payload = url.partition(",")
    if not url.startswith("data:") or not sep:
        raise ImageError("image_url.url must be a data: URL (data:image/png;base64,...)")
    if not header.endswith(";base64"):
        raise ImageError("image data URL must be base64 encoded (data:image/...;base64,...)")
    if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ImageError(f"image is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("image data URL is not valid base64") from None


def process_image(data: bytes, detail: str, media_type: str | None = None) -> ImageResult:
    """Decode, check and resize one image; CPU-bound, run it in a thread. ``media_type``: the
    type the request declared (Anthropic's base64 source), which the image must be."""
    from PIL import Image, UnidentifiedImageError

    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            if img.format not in SUPPORTED_FORMATS:
                raise ImageError(f"unsupported image format {img.format}; use PNG, JPEG, WEBP or GIF")
            if media_type is not None and MEDIA_TYPES[img.format] != media_type:
                raise ImageError(f"Image does not match the provided media type {media_type}")
            width, height = img.size
            if width * height > MAX_PIXELS:
                raise ImageError(f"image of {width}x{height} pixels exceeds {MAX_PIXELS} pixels")
            if detail == ANTHROPIC and max(width, height) > ANTHROPIC_REFUSED_SIDE:
                raise ImageError(f"At least one of the image dimensions exceed max allowed size: "
                                 f"{ANTHROPIC_REFUSED_SIDE} pixels")
            img.load()
            if detail == ANTHROPIC:
                target = anthropic_size(width, height)
            else:
                target = _fit(width, height, TILE) if detail == "low" else high_detail_size(width, height)
            resized = img.convert("RGB").resize(target, Image.Resampling.BICUBIC)
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageError("image exceeds the decompression size limit") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"image could not be decoded: {exc}") from None
    return ImageResult(image_tokens(width, height, detail), digest, width, height, *resized.size)


def _fit(width: int, height: int, box: int) -> tuple[int, int]:
    scale = min(1.0, box / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))
