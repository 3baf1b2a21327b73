"""Open, check and normalise a decoded image: allowlist, bomb limit, orientation, modes, ICC."""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from ._errors import CorruptImage, ImageTooLarge, UnsupportedImageFormat

__all__ = [
    "ALLOWED_FORMATS",
    "DEFAULT_MAX_INPUT_PIXELS",
    "apply_orientation",
    "check_pixels",
    "load_pixels",
    "normalise_mode",
    "open_image",
    "orientation_of",
    "to_srgb",
]

# 100 megapixels: above every mainstream phone/camera sensor except 108-200 MP phone modes
# (which also store binned 12 MP images by default). Checked from the header, before decoding.
DEFAULT_MAX_INPUT_PIXELS = 100_000_000

# JPEG, PNG, WebP, GIF (first frame), BMP, TIFF; MPO is how Pillow names multi-picture
# JPEGs from many phones. AVIF/HEIF join only where the installed Pillow (or pillow-heif)
# registered a decoder for them.
_BASE_FORMATS = ("JPEG", "MPO", "PNG", "WEBP", "GIF", "BMP", "TIFF")
_OPTIONAL_FORMATS = ("AVIF", "HEIF")


def _register_heif() -> None:
    """HEIC/HEIF (iPhone photos) where the optional ``pillow-heif`` is installed
    (``pip install 'llmclient[heic]'``); without it such input is an UnsupportedImageFormat."""
    try:
        from pillow_heif import register_heif_opener
    except ImportError:
        return
    register_heif_opener()


def _allowed_formats() -> tuple[str, ...]:
    _register_heif()
    Image.init()
    return tuple(f for f in _BASE_FORMATS + _OPTIONAL_FORMATS if f in Image.OPEN)


ALLOWED_FORMATS: tuple[str, ...] = _allowed_formats()

# EXIF Orientation (tag 0x0112) -> the transpose that shows the image upright (EXIF 2.32,
# section 4.6.4 A; same table as PIL.ImageOps.exif_transpose).
_TRANSPOSE: dict[int, Image.Transpose] = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_ORIENTATION_TAG = 0x0112


def check_pixels(width: int, height: int, max_pixels: int | None) -> None:
    if width < 1 or height < 1:
        raise CorruptImage(f"image has zero size ({width}x{height})")
    if max_pixels is not None and width * height > max_pixels:
        raise ImageTooLarge(
            f"image is {width}x{height} = {width * height:,} pixels, over the limit of "
            f"{max_pixels:,} (decompression-bomb protection; raise max_input_pixels to allow)"
        )


def open_image(data: bytes, max_pixels: int | None) -> Image.Image:
    """Open (header only) and check format and pixel count; nothing is decoded yet."""
    if not data:
        raise CorruptImage("image data is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            # Our own limit decides; Pillow's warning band below its hard limit is noise here.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
    except Image.DecompressionBombError as exc:
        raise ImageTooLarge(f"decompression bomb refused by Pillow: {exc}") from exc
    except UnidentifiedImageError:
        raise _unidentified(data) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise CorruptImage(f"cannot parse image header: {exc}") from exc
    check_pixels(img.width, img.height, max_pixels)
    return img


def _unidentified(data: bytes) -> Exception:
    # Tell "a real image in a format we refuse" from "not an image / damaged header".
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fmt = Image.open(io.BytesIO(data)).format
    except Exception:
        fmt = None
    if fmt:
        return UnsupportedImageFormat(
            f"image format {fmt} is not accepted; allowed: {', '.join(ALLOWED_FORMATS)}"
        )
    head = data[:8]
    return UnsupportedImageFormat(
        f"not a recognised image (first bytes {head!r}); allowed: {', '.join(ALLOWED_FORMATS)}"
    )


def load_pixels(img: Image.Image) -> None:
    """Decode; truncated or damaged data becomes CorruptImage."""
    try:
        img.load()
    except Image.DecompressionBombError as exc:
        raise ImageTooLarge(f"decompression bomb refused by Pillow: {exc}") from exc
    except (OSError, SyntaxError, ValueError, EOFError, IndexError) as exc:
        raise CorruptImage(f"cannot decode {img.format or 'image'} data: {exc}") from exc


def orientation_of(img: Image.Image) -> int:
    try:
        value = img.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # a damaged EXIF block must not sink an otherwise good image
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def swaps_axes(orientation: int) -> bool:
    return orientation in (5, 6, 7, 8)


def apply_orientation(img: Image.Image, orientation: int) -> Image.Image:
    method = _TRANSPOSE.get(orientation)
    return img if method is None else img.transpose(method)


def normalise_mode(img: Image.Image) -> Image.Image:
    """Bring any mode to L, LA, RGB or RGBA; alpha survives only where some pixel uses it."""
    mode = img.mode
    if mode in ("RGB", "L"):
        return img
    if mode == "1":
        return img.convert("L")
    if mode in ("P", "PA"):
        has_alpha = mode == "PA" or "transparency" in img.info
        img = img.convert("RGBA" if has_alpha else "RGB")
    elif mode.startswith("I;16") or mode in ("I", "F"):
        img = _to_8bit(img)
    elif mode in ("RGBa", "La"):
        img = img.convert("RGBA" if mode == "RGBa" else "LA")
    elif mode not in ("RGBA", "LA"):
        img = img.convert("RGB")  # CMYK, YCbCr, LAB, HSV
    return _drop_unused_alpha(img)


def _to_8bit(img: Image.Image) -> Image.Image:
    # 16-bit greys span 0..65535; Pillow's plain convert("L") clips instead of scaling.
    full_range = img.mode.startswith("I;16")
    img = img.convert("F") if img.mode != "F" else img
    _lo, hi = img.getextrema()
    top = float(hi) if isinstance(hi, (int, float)) else 255.0
    if full_range or top > 255:
        scale = 255.0 / (65535.0 if full_range else top)
        img = img.point(lambda v: v * scale)
    return img.convert("L")


def _drop_unused_alpha(img: Image.Image) -> Image.Image:
    if img.mode not in ("RGBA", "LA"):
        return img
    lo, _ = img.getchannel("A").getextrema()
    if isinstance(lo, (int, float)) and lo >= 255:
        return img.convert("RGB" if img.mode == "RGBA" else "L")
    return img


def to_srgb(img: Image.Image, icc: bytes | None) -> tuple[Image.Image, bytes | None]:
    """Convert pixels from an embedded ICC profile to sRGB, so the profile can be dropped.

    Returns the image and the profile that must still travel with it (None when the image is
    now plain sRGB). Without LittleCMS the profile is kept: it is then needed for colour.
    """
    if not icc or img.mode not in ("RGB", "RGBA"):
        return img, None
    try:
        from PIL import ImageCms
    except ImportError:
        return img, icc
    try:
        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        desc = ImageCms.getProfileDescription(src) or ""
    except Exception:
        return img, None  # unparseable: no viewer could use it either
    if "srgb" in desc.lower():
        return img, None
    try:
        out = ImageCms.profileToProfile(
            img, src, ImageCms.createProfile("sRGB"), outputMode=img.mode
        )
        return (out if out is not None else img), None
    except Exception:
        return img, icc
