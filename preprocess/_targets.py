"""Provider targets: the size, byte and token rules each API applies to an image.

Each rule is a named constant with its source, because providers change them. Providers
downscale oversized images on their side anyway; resizing to the same box on the client
saves upload time and costs nothing the model would have seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "OPENAI_HIGH",
    "OPENAI_LOW",
    "TARGETS",
    "Target",
    "estimate_tokens",
    "get_target",
    "plan_resize",
]

_COMMON_FORMATS = frozenset({"JPEG", "PNG", "WEBP"})


@dataclass(frozen=True)
class Target:
    """Where an image is going: the box it must fit and the budget it must respect.

    ``max_side`` caps the long edge (a square ``max_side`` x ``max_side`` box);
    ``short_side`` caps the short edge after that; ``max_pixels`` caps width*height;
    ``max_bytes`` caps the encoded size. ``None`` means no limit. ``formats`` are the
    output formats the provider accepts. ``tokens`` names the token rule
    (``"openai-tiles"``, ``"fixed:N"``, ``"per-pixels:N"``, ``"gemini-tiles"`` or ``None``).
    """

    name: str = "custom"
    max_side: int | None = None
    short_side: int | None = None
    max_pixels: int | None = None
    max_bytes: int | None = None
    formats: frozenset[str] = field(default=_COMMON_FORMATS)
    tokens: str | None = None
    # JPEG/WebP quality used when it is not measured: the safe default a quality search cut
    # short falls back to (at 4:4:4), the start of the byte budget's ladder, and what a
    # graphic's PNG is weighed against. Photos normally get a measured quality (``_quality``).
    quality: int = 95

    def __post_init__(self) -> None:
        for attr in ("max_side", "short_side", "max_pixels", "max_bytes"):
            value = getattr(self, attr)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"Target.{attr} must be a positive int or None, got {value!r}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"Target.quality must be within 1..100, got {self.quality!r}")
        if not self.formats & {"JPEG", "PNG", "WEBP"}:
            raise ValueError(f"Target.formats must include JPEG, PNG or WEBP, got {set(self.formats)}")


# OpenAI, detail="high": "scaled to fit within a 2048 x 2048 square, maintaining aspect
# ratio; then scaled such that the shortest side of the image is 768px long"; cost is
# 85 + 170 per 512 px tile. Per-image limit 20 MB; PNG, JPEG, WEBP, non-animated GIF.
# Source: platform.openai.com/docs/guides/vision ("Calculating costs", "Image input
# requirements"), rule as published 2024-2025 for GPT-4o/4.1-class models.
OPENAI_HIGH = Target(
    name="openai-high",
    max_side=2048,
    short_side=768,
    max_bytes=20 * 1024 * 1024,
    tokens="openai-tiles",
)

# OpenAI, detail="low": "the model receives a low-res 512px x 512px version of the image"
# and the image costs a flat 85 tokens. Source: same guide and date as OPENAI_HIGH.
OPENAI_LOW = Target(
    name="openai-low",
    max_side=512,
    max_bytes=20 * 1024 * 1024,
    tokens="fixed:85",
)

# Anthropic: an image whose long edge exceeds 1568 px, or that is over ~1,600 tokens
# (about 1.15 megapixels), is scaled down first; tokens = width*height/750; 5 MB per image
# (measured on the base64 the API receives, hence 5 MiB * 3/4 of raw bytes here);
# JPEG, PNG, GIF, WebP. Source: docs.anthropic.com/en/docs/build-with-claude/vision
# ("Evaluate image size", "Calculate image costs"), as published 2024-2025.
ANTHROPIC = Target(
    name="anthropic",
    max_side=1568,
    max_pixels=1_150_000,
    max_bytes=5 * 1024 * 1024 * 3 // 4,
    tokens="per-pixels:750",
)

# Gemini: images are scaled to at most 3072 x 3072; an image with both sides <= 384 px is
# 258 tokens, larger ones are cut into crop units of min(w, h)/1.5 px (clamped to 256..768),
# 258 tokens each; inline data is limited to 20 MB per request (base64, so 15 MB raw);
# PNG, JPEG, WEBP, HEIC, HEIF. Source: ai.google.dev/gemini-api/docs/image-understanding
# and ai.google.dev/gemini-api/docs/tokens, as published 2024-2025 (Gemini 2.x).
GEMINI = Target(
    name="gemini",
    max_side=3072,
    max_bytes=15 * 1024 * 1024,
    tokens="gemini-tiles",
)

TARGETS: dict[str, Target] = {t.name: t for t in (OPENAI_HIGH, OPENAI_LOW, ANTHROPIC, GEMINI)}


def get_target(target: str | Target) -> Target:
    """The Target for a name (``"openai-high"``, ``"openai-low"``, ``"anthropic"``,
    ``"gemini"``) or the Target itself."""
    if isinstance(target, Target):
        return target
    try:
        return TARGETS[target]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown image target {target!r}; expected one of {sorted(TARGETS)} or a Target"
        ) from None


def plan_resize(width: int, height: int, target: Target) -> tuple[int, int]:
    """The size an image of ``width`` x ``height`` should have for ``target``.

    Never upscales; keeps the aspect ratio (to the pixel); idempotent, so a server applying
    the same rule to the result leaves it alone.
    """
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    long_side, short = max(width, height), min(width, height)
    scale = 1.0
    if target.max_side is not None:
        scale = min(scale, target.max_side / long_side)
    if target.short_side is not None:
        scale = min(scale, target.short_side / short)
    if target.max_pixels is not None:
        scale = min(scale, math.sqrt(target.max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    w2, h2 = max(1, round(width * scale)), max(1, round(height * scale))
    return _clamp(w2, h2, width, height, target)


def _clamp(w: int, h: int, width: int, height: int, target: Target) -> tuple[int, int]:
    # Rounding can overshoot a limit by a pixel; step the long side down and recompute the
    # short one from the original aspect ratio until all limits hold (shaving only the long
    # side would distort a small image: 209x251 under 5000 px gave 65x76, not 63x76).
    def fits(w: int, h: int) -> bool:
        return (
            (target.max_side is None or max(w, h) <= target.max_side)
            and (target.short_side is None or min(w, h) <= target.short_side)
            and (target.max_pixels is None or w * h <= target.max_pixels)
        )

    while not fits(w, h) and max(w, h) > 1:
        if width >= height:
            w -= 1
            h = max(1, round(w * height / width))
        else:
            h -= 1
            w = max(1, round(h * width / height))
    return w, h


def estimate_tokens(width: int, height: int, target: Target) -> int | None:
    """Image tokens the target's provider charges for an image of this (final) size."""
    rule = target.tokens
    if rule is None:
        return None
    if rule == "openai-tiles":
        tiles = math.ceil(width / 512) * math.ceil(height / 512)
        return 85 + 170 * tiles
    if rule.startswith("fixed:"):
        return int(rule.split(":", 1)[1])
    if rule.startswith("per-pixels:"):
        return math.ceil(width * height / int(rule.split(":", 1)[1]))
    if rule == "gemini-tiles":
        if width <= 384 and height <= 384:
            return 258
        unit = min(768, max(256, math.floor(min(width, height) / 1.5)))
        return 258 * math.ceil(width / unit) * math.ceil(height / unit)
    raise ValueError(f"unknown token rule {rule!r} in target {target.name!r}")
