"""Errors raised while preparing an image.

Exception tree::

    ImageError (ValueError)
    ├── ImageSourceError        the source could not be read (missing path, bad data URL, ...)
    ├── UnsupportedImageFormat  a format outside the allowlist, or not an image at all
    ├── CorruptImage            truncated or damaged data, zero-size image
    ├── ImageTooLarge           decompression bomb: more pixels than the limit (checked
    │                           from the header, before any decoding)
    └── ImageBudgetError        cannot fit the target's byte budget even at the smallest size

Every error names what failed in its message. ``where`` says which input failed when the
caller prepared several (llmclient sets it to ``messages[i].content[j]``).
"""

from __future__ import annotations

from typing import TypeVar

_E = TypeVar("_E", bound="ImageError")


class ImageError(ValueError):
    """Base class: an image could not be prepared. Subclasses ValueError (bad input)."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.detail = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)

    def at(self: _E, where: str) -> _E:
        """The same error, located at ``where`` (e.g. ``messages[2].content[1]``)."""
        located = type(self)(self.detail, where=where)
        located.__cause__ = self.__cause__
        return located


class ImageSourceError(ImageError):
    """The source could not be read: unreadable path, malformed data URL, wrong type."""


class UnsupportedImageFormat(ImageError):
    """The data is not an image, or is in a format outside the allowlist."""


class CorruptImage(ImageError):
    """The image is truncated, damaged, or has zero size."""


class ImageTooLarge(ImageError):
    """More pixels than allowed: refused before decoding (decompression-bomb protection)."""


class ImageBudgetError(ImageError):
    """The image does not fit the byte budget even at the lowest quality and smallest size."""
