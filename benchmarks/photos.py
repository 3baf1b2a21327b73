"""Deterministic test images that behave like real ones.

``camera_photo(seed)`` is a 12-megapixel JPEG that compresses like a camera photo (smooth
light gradients, multi-scale texture, object edges and sensor noise; about 2-4 MB at quality
92) and carries camera EXIF: orientation, make/model, capture time and a GPS position.
``screenshot(seed)`` is a UI-like PNG (flat panels, text-like strokes). Pillow only; the
same seed gives the same bytes on the same Pillow build.

    python -m benchmarks.photos OUT_DIR [N]   # writes N photos (default 3)
"""

from __future__ import annotations

import io
import math
import random
import sys
from pathlib import Path

from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageOps

__all__ = [
    "GPS_IFD",
    "PHOTO_SIZE",
    "camera_exif",
    "camera_photo",
    "compression_at",
    "psnr",
    "screenshot",
    "write_photos",
]

PHOTO_SIZE = (4000, 3000)  # 12 MP, 4:3 like most phone and compact sensors
# Chosen so that a quality-85 JPEG of the pixels lands where camera photos do (38-42 dB PSNR,
# about 1 bit per pixel at 12 MP; ``compression_at``, checked by tests/preprocess): earlier
# versions had four times the fine texture and twice the grain and reached only 37.7 dB at
# 12 MP and 33 dB at 1024x768, so every byte figure measured on them was pessimistic.
LENS_BLUR_PX = 0.7
GRAIN = 4  # peak sensor noise left after the camera's denoiser, in 8-bit levels
GPS_IFD = 0x8825
_EXIF_IFD = 0x8769


def _noise(rng: random.Random, size: tuple[int, int], mode: str = "RGB") -> Image.Image:
    bands = len(mode)
    return Image.frombytes(mode, size, rng.randbytes(size[0] * size[1] * bands))


def _field(rng: random.Random, size: tuple[int, int], cells: int, mode: str) -> Image.Image:
    """A smooth random field with about ``cells`` features across the width."""
    small = (max(2, cells), max(2, cells * size[1] // size[0]))
    return _noise(rng, small, mode).resize(size, Image.Resampling.BICUBIC).convert("RGB")


def _shapes(rng: random.Random, img: Image.Image, count: int) -> None:
    draw = ImageDraw.Draw(img)
    w, h = img.size
    for _ in range(count):
        x, y = rng.randrange(w), rng.randrange(h)
        rx, ry = rng.randrange(w // 40, w // 6), rng.randrange(h // 40, h // 6)
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        if rng.random() < 0.5:
            draw.ellipse((x - rx, y - ry, x + rx, y + ry), fill=colour)
        else:
            pts = [(x + rng.randint(-rx, rx), y + rng.randint(-ry, ry)) for _ in range(5)]
            draw.polygon(pts, fill=colour)


def camera_exif(orientation: int = 1, gps: bool = True) -> Image.Exif:
    """EXIF like a phone writes: orientation, make/model, time and (optionally) GPS."""
    exif = Image.Exif()
    exif[0x010F] = "llmclient-bench"  # Make
    exif[0x0110] = "Synthetic 12MP"  # Model
    exif[0x0112] = orientation
    exif[0x0132] = "2026:12:02 12:00:00"  # DateTime
    exif.get_ifd(_EXIF_IFD)[0x9003] = "2026:12:02 12:00:00"  # DateTimeOriginal
    if gps:
        ifd = exif.get_ifd(GPS_IFD)
        ifd[1] = "N"  # GPSLatitudeRef
        ifd[2] = (52.0, 22.0, 7.5)  # GPSLatitude (degrees, minutes, seconds)
        ifd[3] = "E"
        ifd[4] = (4.0, 53.0, 40.25)
    return exif


def camera_pixels(seed: int = 0, size: tuple[int, int] = PHOTO_SIZE) -> Image.Image:
    rng = random.Random(seed)
    # Light: a smooth colour gradient (sky to ground), as in most photos.
    grad = ImageOps.colorize(
        Image.linear_gradient("L").rotate(rng.uniform(-20, 20)).resize(size),
        black=(rng.randrange(40, 90), rng.randrange(40, 90), rng.randrange(30, 70)),
        white=(rng.randrange(170, 230), rng.randrange(180, 235), rng.randrange(190, 250)),
    )
    # Scene content: multi-scale texture (large blobs to fine grain) and object edges.
    img = grad
    # Colour varies at large scales; fine texture is mostly luminance, as in real scenes, and
    # weaker the finer it is (natural images fall off roughly as 1/f in amplitude).
    octaves = ((6, 0.45, "RGB"), (40, 0.3, "RGB"), (250, 0.12, "L"), (1000, 0.06, "L"))
    for cells, weight, mode in octaves:
        img = Image.blend(img, _field(rng, size, cells, mode), weight)
    objects = img.copy()
    _shapes(rng, objects, 60)
    img = Image.blend(img, objects.filter(ImageFilter.BoxBlur(2)), 0.35)
    img = ImageOps.autocontrast(img, cutoff=0.5)
    # Lens and demosaicing soften the finest detail; then what the camera's denoiser leaves of
    # the sensor noise (centred on zero: add(a, b, offset=-128) = a + b - 128).
    img = img.filter(ImageFilter.GaussianBlur(LENS_BLUR_PX))
    grain = _noise(rng, size, "L").point(lambda v: 128 + (v - 128) * GRAIN // 128).convert("RGB")
    return ImageChops.add(img, grain, scale=1.0, offset=-128)


def camera_photo(
    seed: int = 0,
    *,
    size: tuple[int, int] = PHOTO_SIZE,
    orientation: int = 1,
    gps: bool = True,
    quality: int = 92,
) -> bytes:
    """A camera-like JPEG (bytes). ``orientation`` is written to EXIF, pixels are not turned."""
    buf = io.BytesIO()
    exif = camera_exif(orientation, gps)
    camera_pixels(seed, size).save(buf, "JPEG", quality=quality, exif=exif.tobytes())
    return buf.getvalue()


def screenshot(seed: int = 0, size: tuple[int, int] = (1920, 1080)) -> Image.Image:
    """A UI-like image: flat panels, buttons and rows of text-like glyph strokes."""
    rng = random.Random(seed)
    palette = [(255, 255, 255), (245, 246, 248), (32, 33, 36), (26, 115, 232), (220, 223, 228)]
    img = Image.new("RGB", size, palette[0])
    draw = ImageDraw.Draw(img)
    w, h = size
    draw.rectangle((0, 0, w, 56), fill=palette[3])
    draw.rectangle((0, 56, 280, h), fill=palette[1])
    for row in range(70, h - 30, 28):
        x = 300 + rng.randrange(0, 40)
        while x < w - 100:
            word = rng.randrange(20, 90)
            draw.rectangle((x, row, x + word, row + 12), outline=palette[2])
            draw.line((x, row + 6, x + word, row + 6), fill=palette[2], width=2)
            x += word + 12
    for y in range(80, h - 60, 60):
        draw.rounded_rectangle((20, y, 260, y + 40), radius=8, fill=palette[4], outline=palette[2])
    return img


def psnr(a: Image.Image, b: Image.Image) -> float:
    """Peak signal-to-noise ratio (dB) over all RGB samples; inf when identical."""
    if a.size != b.size:
        raise ValueError(f"sizes differ: {a.size} vs {b.size}")
    hist = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).histogram()
    sq = sum(count * (i % 256) ** 2 for i, count in enumerate(hist))
    mse = sq / (a.width * a.height * 3)
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


def compression_at(img: Image.Image, quality: int = 85) -> tuple[float, float]:
    """(PSNR dB, bits per pixel) of a plain JPEG of ``img`` at ``quality`` (Pillow's default
    4:2:0): how to tell whether generated pixels compress like a camera's."""
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=quality)
    decoded = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    return psnr(img, decoded), len(buf.getvalue()) * 8 / (img.width * img.height)


def write_photos(out_dir: Path, count: int = 3, seed: int = 0) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = out_dir / f"photo-{seed + i}.jpg"
        path.write_bytes(camera_photo(seed + i, orientation=(1, 6, 3, 8)[i % 4]))
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - manual tool
    if len(sys.argv) < 2:
        sys.exit("usage: python -m benchmarks.photos OUT_DIR [N]")
    for p in write_photos(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        print(p, p.stat().st_size)
