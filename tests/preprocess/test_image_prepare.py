"""prepare_image end to end with real Pillow encoders and decoders."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from benchmarks.fixtures.photos import GPS_IFD, camera_exif, screenshot
from llmclient.preprocess import (
    ANTHROPIC,
    OPENAI_HIGH,
    OPENAI_LOW,
    TARGETS,
    CorruptImage,
    ImageBudgetError,
    ImageSourceError,
    ImageTooLarge,
    Target,
    UnsupportedImageFormat,
    plan_resize,
    prepare_image,
)

NO_LIMIT = Target()


def save(img: Image.Image, fmt: str, **params: object) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **params)
    return buf.getvalue()


def photo(size: tuple[int, int] = (600, 400)) -> Image.Image:
    """Smooth and noisy: many colours, like a photo."""
    base = Image.merge("RGB", (
        Image.linear_gradient("L").resize(size),
        Image.linear_gradient("L").rotate(90).resize(size),
        Image.radial_gradient("L").resize(size),
    ))
    return Image.blend(base, Image.effect_noise(size, 40).convert("RGB"), 0.25)


def opened(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


# -- orientation ---------------------------------------------------------------------------

# The stored pixels for each EXIF orientation, made from the upright image: the inverse of
# the transpose a viewer applies (EXIF 2.32, 4.6.4 A).
_STORE = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def upright_marked(size: tuple[int, int]) -> Image.Image:
    """Grey with a red block in the top-left and a blue block in the top-right."""
    w, h = size
    img = Image.new("RGB", size, (128, 128, 128))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, w // 4, h // 4), fill=(255, 0, 0))
    draw.rectangle((w - w // 4, 0, w, h // 4), fill=(0, 0, 255))
    return img


def near(pixel: tuple[int, ...], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(pixel[:3], colour, strict=True))


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("target", [NO_LIMIT, Target(max_side=150)])
def test_exif_orientation_gives_upright_pixels(orientation: int, target: Target) -> None:
    upright = upright_marked((320, 200))
    method = _STORE[orientation]
    stored = upright if method is None else upright.transpose(method)
    data = save(stored, "JPEG", quality=95, exif=camera_exif(orientation).tobytes())

    out = prepare_image(data, target)
    img = opened(out.data)
    assert (out.original_width, out.original_height) == (320, 200)
    assert img.size == plan_resize(320, 200, target)
    assert img.width > img.height
    w, h = img.size
    assert near(img.getpixel((w // 10, h // 10)), (255, 0, 0))  # type: ignore[arg-type]
    assert near(img.getpixel((w - w // 10, h // 10)), (0, 0, 255))  # type: ignore[arg-type]
    assert near(img.getpixel((w // 2, h - h // 10)), (128, 128, 128))  # type: ignore[arg-type]


# -- metadata ------------------------------------------------------------------------------


def test_gps_and_all_exif_are_gone(photo_12mp: bytes) -> None:
    src = Image.open(io.BytesIO(photo_12mp))
    assert src.getexif().get_ifd(GPS_IFD)  # the input really carries GPS
    out = prepare_image(photo_12mp, "openai-high")
    img = opened(out.data)
    assert (out.original_width, out.original_height) == (3000, 4000)  # orientation 6
    assert (out.width, out.height) == (768, 1024) == img.size
    assert len(img.getexif()) == 0
    assert not {"exif", "xmp", "icc_profile", "comment", "photoshop"} & set(img.info)
    assert b"Exif" not in out.data[:4096] and b"GPS" not in out.data
    assert out.bytes_before == len(photo_12mp) and out.bytes_after < len(photo_12mp) // 4
    assert out.tokens == 85 + 170 * 4
    assert out.data_url.startswith("data:image/jpeg;base64,")


def test_png_text_chunks_and_exif_are_dropped() -> None:
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "secret location")
    data = save(screenshot(0, (400, 300)), "PNG", pnginfo=info, exif=camera_exif(1, gps=True))
    out = prepare_image(data, NO_LIMIT)
    assert b"secret" not in out.data and b"eXIf" not in out.data


@pytest.mark.parametrize("profile", ["sRGB", "garbage"])
def test_srgb_or_unparseable_icc_profile_is_dropped(profile: str) -> None:
    from PIL import ImageCms

    icc = (ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
           if profile == "sRGB" else b"not an icc profile")
    data = save(photo(), "JPEG", icc_profile=icc)
    assert "icc_profile" in opened(data).info
    out = prepare_image(data, NO_LIMIT)
    assert "icc_profile" not in opened(out.data).info


# -- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_target_size_and_byte_limits_hold(photo_12mp: bytes, name: str) -> None:
    target = TARGETS[name]
    out = prepare_image(photo_12mp, name)
    assert (out.width, out.height) == plan_resize(3000, 4000, target)
    assert opened(out.data).size == (out.width, out.height)
    assert target.max_bytes is None or out.bytes_after <= target.max_bytes


def test_small_images_are_never_upscaled() -> None:
    out = prepare_image(save(photo((300, 200)), "PNG"), ANTHROPIC)
    assert (out.width, out.height) == (300, 200)


def test_byte_budget_lowers_quality_then_size() -> None:
    data = save(photo((1200, 900)), "JPEG", quality=95)
    roomy = prepare_image(data, Target(quality=95))
    tight = prepare_image(data, Target(max_bytes=40_000, quality=95))
    assert tight.bytes_after <= 40_000 < roomy.bytes_after
    assert tight.quality is not None and tight.quality < 95
    tiny = prepare_image(data, Target(max_bytes=4_000))
    assert tiny.bytes_after <= 4_000 and tiny.width < 1200


def test_impossible_budget_is_an_error_naming_it() -> None:
    with pytest.raises(ImageBudgetError, match="100 bytes"):
        prepare_image(save(photo(), "PNG"), Target(max_bytes=100))


# -- format by content, alpha, modes ------------------------------------------------------


def test_screenshot_stays_png_and_photo_becomes_jpeg() -> None:
    shot = prepare_image(save(screenshot(3), "PNG"), OPENAI_HIGH)
    assert shot.format == "PNG" and (shot.width, shot.height) == (1365, 768)
    pic = prepare_image(save(photo(), "PNG"), OPENAI_HIGH)
    assert pic.format == "JPEG"


def test_webp_competes_only_when_allowed() -> None:
    data = save(photo((800, 600)), "PNG")
    assert prepare_image(data, NO_LIMIT).format == "JPEG"
    assert prepare_image(data, NO_LIMIT, webp=True).format in ("JPEG", "WEBP")
    jpeg_only = Target(formats=frozenset({"JPEG"}))
    assert prepare_image(data, jpeg_only, webp=True).format == "JPEG"


def test_alpha_kept_only_when_used() -> None:
    used = photo().convert("RGBA")
    used.putpixel((5, 5), (0, 0, 0, 0))
    out = prepare_image(save(used, "PNG"), NO_LIMIT)
    # JPEG cannot carry alpha: lossless PNG, or lossy WebP when PNG is far larger.
    assert out.format in ("PNG", "WEBP") and opened(out.data).mode == "RGBA"
    graphic = screenshot(1, (300, 200)).convert("RGBA")
    graphic.putpixel((5, 5), (0, 0, 0, 0))
    out = prepare_image(save(graphic, "PNG"), NO_LIMIT)
    assert out.format == "PNG" and opened(out.data).mode == "RGBA"
    opaque = photo().convert("RGBA")
    out = prepare_image(save(opaque, "PNG"), NO_LIMIT)
    assert out.format == "JPEG" and opened(out.data).mode == "RGB"


@pytest.mark.parametrize(
    ("mode", "fmt", "expect"),
    [("CMYK", "JPEG", "RGB"), ("P", "PNG", "RGB"), ("L", "PNG", "L"), ("1", "BMP", "L"),
     ("LA", "PNG", "L"), ("I;16", "PNG", "L"), ("RGB", "TIFF", "RGB"), ("RGB", "WEBP", "RGB")],
)
def test_colour_modes_are_normalised(mode: str, fmt: str, expect: str) -> None:
    src = photo((120, 80))
    if mode == "I;16":
        img = Image.linear_gradient("L").resize((120, 80)).convert("I").point(lambda v: v * 256)
        img = img.convert("I;16")
    else:
        img = src.convert(mode)
    out = prepare_image(save(img, fmt), NO_LIMIT)
    decoded = opened(out.data)
    assert decoded.mode == expect
    if mode == "I;16":  # scaled to 8 bits, not clipped to white
        lo, hi = decoded.getextrema()
        assert isinstance(lo, int) and isinstance(hi, int)
        assert lo < 20 and hi > 230


def test_gif_first_frame_is_used() -> None:
    frames = [Image.new("RGB", (64, 64), c) for c in ((255, 0, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    out = prepare_image(buf.getvalue(), NO_LIMIT)
    assert near(opened(out.data).convert("RGB").getpixel((32, 32)), (255, 0, 0))  # type: ignore[arg-type]


# -- sources -------------------------------------------------------------------------------


def test_every_source_kind_gives_the_same_image(tmp_path: Path) -> None:
    data = save(photo(), "JPEG")
    path = tmp_path / "p.jpg"
    path.write_bytes(data)
    import base64

    url = "data:image/jpeg;base64," + base64.b64encode(data).decode()
    # A fixed quality: the measured one comes from a search with a wall-clock budget, which a
    # busy machine cuts short for some calls and not others (the bytes then differ for a
    # reason that has nothing to do with the source kind). The search is tested on its own
    # clock in test_quality.py.
    results = [prepare_image(s, OPENAI_LOW, quality=85) for s in
               (data, str(path), path, io.BytesIO(data), url, f"file://{path}")]
    assert len({r.data for r in results}) == 1
    pil = prepare_image(opened(data), OPENAI_LOW, quality=85)
    assert pil.bytes_before is None and (pil.width, pil.height) == (results[0].width, results[0].height)


# -- bad input -----------------------------------------------------------------------------


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims a huge size: the bomb must be refused from the header."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


def test_bomb_refused_by_own_limit_before_decoding() -> None:
    with pytest.raises(ImageTooLarge, match="12000x12000 = 144,000,000 pixels"):
        prepare_image(png_header_only(12_000, 12_000), OPENAI_HIGH)
    with pytest.raises(ImageTooLarge):
        prepare_image(save(photo((200, 200)), "PNG"), OPENAI_HIGH, max_input_pixels=10_000)


def test_bomb_refused_by_pillow_limit_is_mapped() -> None:
    with pytest.raises(ImageTooLarge, match="decompression bomb"):
        prepare_image(png_header_only(40_000, 40_000), OPENAI_HIGH, max_input_pixels=None)


def test_truncated_jpeg_is_corrupt() -> None:
    data = save(photo(), "JPEG")
    with pytest.raises(CorruptImage, match="JPEG"):
        prepare_image(data[: len(data) // 2], OPENAI_HIGH)


@pytest.mark.parametrize(
    ("source", "error", "match"),
    [
        (b"", CorruptImage, "empty"),
        (b"hello, not an image at all", UnsupportedImageFormat, "not a recognised image"),
        ("data:image/png;base64", ImageSourceError, "no ','"),
        ("/nonexistent/dir/photo.jpg", ImageSourceError, "not found"),
        (12345, ImageSourceError, "int"),
    ],
)
def test_bad_inputs_raise_their_error(source: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        prepare_image(source, OPENAI_HIGH)


def test_disallowed_format_names_it() -> None:
    with pytest.raises(UnsupportedImageFormat, match="ICO"):
        prepare_image(save(photo((32, 32)), "ICO"), OPENAI_HIGH)


def test_directory_path_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(ImageSourceError, match="directory"):
        prepare_image(tmp_path, OPENAI_LOW)


def test_errors_subclass_value_error_and_can_be_located() -> None:
    with pytest.raises(ValueError) as info:
        prepare_image(b"", OPENAI_LOW)
    located = info.value.at("messages[1].content[2]")  # type: ignore[attr-defined]
    assert str(located).startswith("messages[1].content[2]: ") and isinstance(located, CorruptImage)
