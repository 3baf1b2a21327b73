"""Client-side image preparation: speed on one core and what the model ends up seeing.

    python -m benchmarks.image_prep [--runs 7] [--seed 0] [--cpu 0]

For a generated 12-megapixel camera JPEG (benchmarks.photos) and the ``openai-high`` target:
1. ``prepare_image`` time (decode with JPEG DCT scaling, resample, strip, encode), median;
2. a plain full decode + Lanczos resize of the same bytes to the same size, interleaved with
   (1) in the same run, and the ratio (1)/(2);
3. PSNR between the image the model sees from the prepared upload and from the raw upload,
   each after the server's own resize (the reference server's rule: fit 2048, short side 768,
   bicubic; see benchmarks/server/vision.py).
The process is pinned to one core (``--cpu``) where the OS allows it.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import statistics
import time
from collections.abc import Callable

from PIL import Image, ImageChops

from benchmarks.photos import camera_photo
from preprocess import OPENAI_HIGH, plan_resize, prepare_image

SERVER_RESAMPLE = Image.Resampling.BICUBIC  # what benchmarks/server/vision.py uses


def psnr(a: Image.Image, b: Image.Image) -> float:
    """Peak signal-to-noise ratio (dB) over all RGB samples; inf when identical."""
    if a.size != b.size:
        raise ValueError(f"sizes differ: {a.size} vs {b.size}")
    hist = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).histogram()
    sq = sum(count * (i % 256) ** 2 for i, count in enumerate(hist))
    mse = sq / (a.width * a.height * 3)
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


def server_view(data: bytes) -> Image.Image:
    """What the model sees: the server decodes the upload and applies its own resize."""
    img = Image.open(io.BytesIO(data))
    img.load()
    size = plan_resize(img.width, img.height, OPENAI_HIGH)
    rgb = img.convert("RGB")
    return rgb if size == rgb.size else rgb.resize(size, SERVER_RESAMPLE)


def plain_resize(data: bytes) -> Image.Image:
    """The straightforward client: full decode, then one Lanczos resize."""
    img = Image.open(io.BytesIO(data))
    img.load()
    return img.resize(plan_resize(img.width, img.height, OPENAI_HIGH), Image.Resampling.LANCZOS)


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", type=int, default=0, help="core to pin to (-1: do not pin)")
    ap.add_argument("--resample", default="BICUBIC", choices=["LANCZOS", "BICUBIC", "BILINEAR"])
    args = ap.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    resample = Image.Resampling[args.resample]

    data = camera_photo(args.seed)
    prepare_image(data, OPENAI_HIGH, resample=resample)  # warm caches and lazy imports
    plain_resize(data)
    prep_ms, plain_ms = [], []
    for _ in range(args.runs):  # interleaved, so machine noise hits both alike
        prep_ms.append(_ms(lambda: prepare_image(data, OPENAI_HIGH, resample=resample)))
        plain_ms.append(_ms(lambda: plain_resize(data)))
    prepared = prepare_image(data, OPENAI_HIGH, resample=resample)
    quality_db = psnr(server_view(prepared.data), server_view(data))

    p, q = statistics.median(prep_ms), statistics.median(plain_ms)
    print(f"photo: 4000x3000 JPEG, {len(data):,} bytes (seed {args.seed}); target openai-high")
    print(f"prepared: {prepared.width}x{prepared.height} {prepared.format} q{prepared.quality}, "
          f"{prepared.bytes_after:,} bytes ({prepared.bytes_after / len(data):.3f}x), "
          f"{prepared.tokens} tokens; resample {args.resample}")
    print(f"prepare_image median   {p:7.1f} ms  (runs: {', '.join(f'{x:.0f}' for x in prep_ms)})")
    print(f"full decode + Lanczos  {q:7.1f} ms  (runs: {', '.join(f'{x:.0f}' for x in plain_ms)})")
    print(f"ratio prepare/plain    {p / q:7.3f}   (target <= 0.45)")
    print(f"PSNR model view        {quality_db:7.2f} dB (prepared vs raw upload; target >= 40)")


if __name__ == "__main__":
    main()
