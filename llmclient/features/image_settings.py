"""``images=``: how a client or a call asks for its image parts to be prepared, checked without
loading the preparation itself (``features/images.py``, Pillow through ``llmclient.preprocess``).

``None``/``True``: on, the target inferred per part from ``detail`` (``"low"`` ->
``openai-low``, else ``openai-high``); ``False``: off; a target name or ``preprocess.Target``;
or a dict with any of ``target``, ``fetch``, ``webp``, ``quality``, ``max_input_pixels``,
``local_paths``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["OPTION_KEYS", "ImageSettings", "check_images", "has_image_part", "resolve_settings"]

OPTION_KEYS: Final = frozenset({"target", "fetch", "webp", "quality", "max_input_pixels", "local_paths"})


@dataclass(frozen=True)
class ImageSettings:
    enabled: bool = True
    target: Any = None  # None: inferred per part from ``detail``; else a name or a Target
    fetch: bool = False
    webp: bool = False
    quality: int | None = None
    max_input_pixels: int | None = -1  # -1: preprocess's default
    local_paths: bool = False  # read path strings and file:// URLs too (trusted content only)


def resolve_settings(options: Any) -> ImageSettings:
    """``None``, an object with an ``images`` attribute (CallOptions), or the value itself."""
    value = getattr(options, "images", options)
    if value is None or value is True:
        return ImageSettings()
    if value is False:
        return ImageSettings(enabled=False)
    if isinstance(value, dict):
        unknown = set(value) - OPTION_KEYS
        if unknown:
            raise ValueError(
                f"unknown images option(s) {sorted(unknown)}; expected {sorted(OPTION_KEYS)}"
            )
        return ImageSettings(
            enabled=True,
            target=value.get("target"),
            fetch=bool(value.get("fetch", False)),
            webp=bool(value.get("webp", False)),
            quality=value.get("quality"),
            max_input_pixels=value.get("max_input_pixels", -1),
            local_paths=value.get("local_paths", False) is True,
        )
    if isinstance(value, str) or type(value).__name__ == "Target":
        return ImageSettings(target=value)
    raise ValueError(
        f"images= must be None, True, False, a target name, a preprocess.Target or a dict, "
        f"got {type(value).__name__}"
    )


def check_images(value: Any) -> Any:
    """``images=`` as given, once it is known to be one of the accepted forms (ValueError
    naming the option otherwise); the value itself is kept, as the call's option."""
    resolve_settings(value)
    return value


def has_image_part(body: dict[str, Any]) -> bool:
    """Whether a chat body carries an image part (what the images layer has work for): an
    ``image_url`` part, or an Anthropic ``image`` block."""
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") in ("image_url", "image"):
                    return True
    return False
