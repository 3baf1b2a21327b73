"""Client-side image preparation for vision LLM APIs.

``prepare_image(source, target)`` resizes an image to what the provider would downscale it
to anyway, applies EXIF orientation, drops all metadata (GPS included), normalises colour
modes and re-encodes it by content (photos JPEG, graphics PNG) within the byte budget.
A leaf package: it depends on Pillow only, never on llmclient.
"""

from ._decode import ALLOWED_FORMATS, DEFAULT_MAX_INPUT_PIXELS
from ._encode import choose_formats, is_graphic, quality_steps
from ._errors import (
    CorruptImage,
    ImageBudgetError,
    ImageError,
    ImageSourceError,
    ImageTooLarge,
    UnsupportedImageFormat,
)
from ._prepare import PreparedImage, prepare_image
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
    "TARGETS",
    "CorruptImage",
    "ImageBudgetError",
    "ImageError",
    "ImageSourceError",
    "ImageTooLarge",
    "PreparedImage",
    "Target",
    "UnsupportedImageFormat",
    "choose_formats",
    "estimate_tokens",
    "get_target",
    "is_graphic",
    "parse_data_url",
    "plan_resize",
    "prepare_image",
    "quality_steps",
    "read_source",
]
