"""Client-side image preparation for vision LLM APIs.

``prepare_image(source, target)`` resizes an image to what the provider would downscale it
to anyway, applies EXIF orientation, drops all metadata (GPS included), normalises colour
modes and re-encodes it by content within the byte budget: photographs, colour or grayscale,
JPEG (a grayscale one single-channel); graphics and rendered text PNG. The content is read
from noise and edge statistics that hold in any colour mode (``measure_content``,
``classify_content``; ``PreparedImage.content`` says what was decided).
A photo's JPEG quality and chroma subsampling are measured per image: the lowest quality
whose luma SSIM against the resized pixels stays at or above ``SIMILARITY_THRESHOLD``,
found by an interpolation search on a probe within ``SEARCH_BUDGET_MS`` (``_quality`` says why
this metric and threshold); the result says what was chosen (``quality``, ``subsampled``,
``similarity``, ``quality_source``). ``prepare_pixels`` gives the pixels before encoding.
A leaf package: it depends on Pillow only, never on llmclient; HEIC/HEIF input is read
where the optional ``pillow-heif`` is installed (``pip install 'llmclient[heic]'``).
"""

from ._content import ContentStats, classify_content, measure_content
from ._decode import ALLOWED_FORMATS, DEFAULT_MAX_INPUT_PIXELS
from ._encode import choose_formats, quality_steps
from ._errors import (
    CorruptImage,
    ImageBudgetError,
    ImageError,
    ImageSourceError,
    ImageTooLarge,
    UnsupportedImageFormat,
)
from ._prepare import PreparedImage, prepare_image, prepare_pixels
from ._quality import (
    QUALITY_LADDER,
    SEARCH_BUDGET_MS,
    SIMILARITY_THRESHOLD,
    QualityPlan,
    plan_interpolated,
    plan_quality,
    search_quality,
)
from ._similarity import ssim
from ._source import MAX_SOURCE_BYTES, parse_data_url, read_source
from ._targets import (
    ANTHROPIC,
    GEMINI,
    OPENAI_HIGH,
    OPENAI_LOW,
    TARGETS,
    Target,
    estimate_tokens,
    get_target,
    plan_resize,
)

__all__ = [
    "ALLOWED_FORMATS",
    "ANTHROPIC",
    "DEFAULT_MAX_INPUT_PIXELS",
    "GEMINI",
    "MAX_SOURCE_BYTES",
    "OPENAI_HIGH",
    "OPENAI_LOW",
    "QUALITY_LADDER",
    "SEARCH_BUDGET_MS",
    "SIMILARITY_THRESHOLD",
    "TARGETS",
    "ContentStats",
    "CorruptImage",
    "ImageBudgetError",
    "ImageError",
    "ImageSourceError",
    "ImageTooLarge",
    "PreparedImage",
    "QualityPlan",
    "Target",
    "UnsupportedImageFormat",
    "choose_formats",
    "classify_content",
    "estimate_tokens",
    "get_target",
    "measure_content",
    "parse_data_url",
    "plan_interpolated",
    "plan_quality",
    "plan_resize",
    "prepare_image",
    "prepare_pixels",
    "quality_steps",
    "read_source",
    "search_quality",
    "ssim",
]
