"""How close an encoded image is to the pixels it was made from: SSIM on luma, Pillow only.

SSIM (Wang, Bovik, Sheikh, Simoncelli, "Image quality assessment: from error visibility to
structural similarity", IEEE TIP 13(4), 2004) compares local means, contrasts and structure,
so it tracks what JPEG removes (fine texture, edges, text strokes) where PSNR only counts
squared error. Computed here on luma (ITU-R BT.601 Y, the plane JPEG quantises most finely
and where edges and text live) over 8x8 windows at a stride of 4: every window either
matches a JPEG block or straddles a block boundary, so blocking counts as well as blur. The
constants are the paper's (K1 = 0.01, K2 = 0.03, L = 255); the score is the mean over windows.

Everything runs in Pillow's C loops on float ("F") images (``reduce`` for window sums,
``ImageMath`` for the formula): no numpy, and about a millisecond per 100k pixels.

Chroma is judged apart (``chroma_survives_subsampling``): 4:2:0 halves the colour planes'
resolution whatever the quality, and luma SSIM cannot see it.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageMath

__all__ = ["CHROMA_THRESHOLD", "LumaReference", "chroma_survives_subsampling", "ssim"]

_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2
_STEP = 4  # window stride; windows are 2x2 steps (8x8 px)
# 4:2:0 is used only when both colour planes keep this SSIM after a 2x2 average and back:
# photos score 0.99 (colour varies slowly), red or blue text on white 0.82-0.86.
CHROMA_THRESHOLD = 0.95


def _square(img: Image.Image) -> Image.Image:
    return ImageMath.lambda_eval(lambda e: e["a"] * e["a"], a=img)


def _windows(sums: Image.Image) -> Image.Image:
    """Per-4x4 means -> per-8x8-window means at a stride of 4 (the average of 2x2 cells):
    a bilinear sample half-way between four cell centres is exactly their average."""
    w, h = sums.size
    return sums.resize((w - 1, h - 1), Image.Resampling.BILINEAR,
                       box=(0.5, 0.5, w - 0.5, h - 0.5))


def _mean(img: Image.Image) -> float:
    value = img.reduce((img.width, img.height)).getpixel((0, 0))
    return float(value) if isinstance(value, (int, float)) else 0.0


@dataclass(frozen=True)
class LumaReference:
    """The reference side of SSIM, computed once and compared with many candidates."""

    plane: Image.Image  # "F", cropped to a multiple of the window step
    mean: Image.Image  # per-window mean of x
    mean_sq: Image.Image  # per-window mean of x*x
    weights: Image.Image | None = None  # "F" 1/0 per window: 0 for windows across seams
    # The formula's reference-only terms, per window: 2*mean, mean^2, variance.
    terms: tuple[Image.Image, Image.Image, Image.Image] | None = None

    @classmethod
    def of(cls, img: Image.Image, seams: int | None = None) -> LumaReference:
        """``seams``: ``img`` is a stack of unrelated strips of this height (a multiple of
        the 4-pixel step); windows that straddle two strips are left out of the mean."""
        plane = _plane(img)
        mean = _windows(plane.reduce(_STEP))
        weights = None
        if seams is not None and seams % _STEP == 0 and mean.height > seams // _STEP:
            per_strip = seams // _STEP  # window rows that start in one strip
            weights = Image.new("F", mean.size, 1.0)
            for row in range(per_strip - 1, mean.height, per_strip):
                weights.paste(0.0, (0, row, mean.width, row + 1))
        mean_sq = _windows(_square(plane).reduce(_STEP))
        terms = (
            ImageMath.lambda_eval(lambda e: 2 * e["m"], m=mean),
            ImageMath.lambda_eval(lambda e: e["m"] * e["m"], m=mean),
            ImageMath.lambda_eval(lambda e: e["s"] - e["m"] * e["m"], m=mean, s=mean_sq),
        )
        return cls(plane, mean, mean_sq, weights, terms)

    def ssim(self, other: Image.Image) -> float:
        """Mean SSIM of ``other`` (same size as the reference) against the reference."""
        y = _plane(other)
        if y.size != self.plane.size:
            raise ValueError(f"sizes differ: {self.plane.size} vs {y.size}")
        two_mx, mx2, vx = self.terms or LumaReference.of(self.plane).terms  # type: ignore[misc]
        my = _windows(y.reduce(_STEP))
        yy = _windows(_square(y).reduce(_STEP))
        xy = _windows(ImageMath.lambda_eval(lambda e: e["a"] * e["b"], a=self.plane, b=y)
                      .reduce(_STEP))
        # ((2 mx my + C1)(2 cov + C2)) / ((mx^2 + my^2 + C1)(vx + vy + C2)), with the
        # reference's terms precomputed: t = 2 mx my, 2 cov = 2 xy - t, vy = yy - my^2. The
        # float32 operations round as the plain formula's do (doubling is exact), so a photo
        # sitting on the threshold lands on the same side.
        ssim_map = ImageMath.lambda_eval(
            lambda e: (e["t"] + _C1) * (2 * e["xy"] - e["t"] + _C2)
            / ((e["a"] + e["my2"] + _C1) * (e["b"] + e["yy"] - e["my2"] + _C2)),
            t=ImageMath.lambda_eval(lambda e: e["p"] * e["q"], p=two_mx, q=my),
            my2=ImageMath.lambda_eval(lambda e: e["p"] * e["p"], p=my),
            xy=xy, yy=yy, a=mx2, b=vx,
        )
        if self.weights is None:
            return _mean(ssim_map)
        kept = ImageMath.lambda_eval(lambda e: e["a"] * e["b"], a=ssim_map, b=self.weights)
        return _mean(kept) / _mean(self.weights)


def _plane(img: Image.Image) -> Image.Image:
    """Luma as floats, cropped to whole windows (at least one)."""
    y = img if img.mode == "L" else img.convert("L")
    w = max(2 * _STEP, y.width - y.width % _STEP)
    h = max(2 * _STEP, y.height - y.height % _STEP)
    if (w, h) != y.size:
        y = y.crop((0, 0, w, h))  # an image under 8 px is padded by crop(): scored as is
    return y.convert("F")


def ssim(reference: Image.Image, other: Image.Image) -> float:
    """Mean luma SSIM of ``other`` against ``reference`` (1.0: identical)."""
    return LumaReference.of(reference).ssim(other)


def chroma_survives_subsampling(img: Image.Image, strip: int | None = None) -> bool:
    """Whether 4:2:0 keeps the colour planes above CHROMA_THRESHOLD (SSIM against a 2x2
    average and bilinear upsampling, roughly what a JPEG encoder and decoder do to them).

    ``strip``: ``img`` is a stack of unrelated strips of this height (a probe); each is
    halved on its own, so no colour bleeds across the seams.
    """
    if img.mode not in ("RGB", "RGBA"):
        return True  # greyscale: no chroma to lose
    rgb = img if img.mode == "RGB" else img.convert("RGB")
    for band in rgb.convert("YCbCr").split()[1:]:
        if band.width < 2 or band.height < 2:
            return False
        if ssim(band, _halved(band, strip or band.height)) < CHROMA_THRESHOLD:
            return False
    return True


def _halved(band: Image.Image, strip: int) -> Image.Image:
    """Each ``strip`` rows of ``band`` averaged 2x2 and upsampled back on their own."""
    if strip >= band.height:
        return band.reduce(2).resize(band.size, Image.Resampling.BILINEAR)
    if strip % 2 == 0 and band.height % strip == 0 and band.mode == "L":
        # In one pass: the 2x2 averages never straddle two strips (even rows); each halved
        # strip gets a copy of its first and last rows outside it, so the upsampling reads
        # the strip's own edge where it would read the next strip (what upsampling it alone
        # does at an image edge, to the same rounding), and those rows are dropped after.
        half = band.reduce(2)
        padded = Image.frombytes("L", (half.width, half.height + 2 * (band.height // strip)),
                                 _restack(half.tobytes(), half.width, strip // 2, 1))
        up = padded.resize((band.width, 2 * padded.height), Image.Resampling.BILINEAR)
        return Image.frombytes("L", band.size, _restack(up.tobytes(), band.width, strip + 4, -2))
    out = Image.new(band.mode, band.size)
    for top in range(0, band.height, strip):
        piece = band.crop((0, top, band.width, min(band.height, top + strip)))
        if piece.height < 2:
            out.paste(piece, (0, top))
            continue
        out.paste(piece.reduce(2).resize(piece.size, Image.Resampling.BILINEAR), (0, top))
    return out


def _restack(data: bytes, width: int, strip: int, pad: int) -> bytes:
    """8-bit rows of ``width`` bytes, taken ``strip`` rows at a time: with ``pad`` > 0 each
    strip's first and last rows repeated ``pad`` times outside it, with ``pad`` < 0 ``-pad``
    rows dropped at each end."""
    out: list[bytes] = []
    for top in range(0, len(data), strip * width):
        block = data[top:top + strip * width]
        if pad > 0:
            out += [block[:width]] * pad + [block] + [block[-width:]] * pad
        else:
            out.append(block[-pad * width:(strip + pad) * width])
    return b"".join(out)
