"""The image scenario's figures (benchmarks/image_prep.py, benchmarks/scenarios/images.py):
every upload of a photo measured side by side, the targets checked, and the result's
series readable back from JSON. A small camera-like photo keeps it fast; no timing asserts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks.fixtures.photos import camera_photo
from benchmarks.image_prep import (
    FIXED_QUALITY,
    UPLOADS,
    PhotoFigures,
    describe_photo,
    describe_summary,
    figures_from_dict,
    measure_photo,
    summary,
)
from benchmarks.scenarios.images import describe, describe_photos
from llmclient.preprocess import SIMILARITY_THRESHOLD, prepare_image


@pytest.fixture(scope="module")
def figures() -> PhotoFigures:
    return measure_photo(camera_photo(3, size=(1600, 1200)), "openai-high", runs=1)


def test_every_upload_is_measured_against_the_same_resized_original(figures: PhotoFigures) -> None:
    assert tuple(figures.uploads) == UPLOADS
    assert figures.size == (1024, 768)
    raw, q95, measured = (figures.uploads[name] for name in UPLOADS)
    assert raw.bytes == figures.source_bytes and raw.quality is None and raw.prep_ms == 0
    # The earlier fixed-quality preparation: the caller's fixed quality, full-resolution chroma.
    assert (q95.quality, q95.subsampled, q95.quality_source) == (FIXED_QUALITY, False, "fixed")
    assert measured.quality_source in ("measured", "budget")  # a loaded machine may cut it
    assert measured.bytes < q95.bytes < raw.bytes
    assert measured.vs_q85 == measured.bytes / figures.q85_bytes
    for upload in (q95, measured):
        assert SIMILARITY_THRESHOLD <= upload.ssim <= 1.0
    assert set(figures.prep_runs) == {"q95", "prepared", "plain"}


def test_summary_checks_the_photo_targets(figures: PhotoFigures) -> None:
    s = summary([figures])
    assert s["ssim_ok"] and s["ssim_min"] >= SIMILARITY_THRESHOLD
    assert s["bytes_ok"] == (s["bytes_vs_q85_max"] <= 1.1)
    assert s["prep_ok"] == (s["prep_ms_p50"] <= 100)
    line = describe_summary(s)
    assert "plain q85" in line and "SSIM" in line and "prep p50" in line


def test_series_survive_json_and_describe_each_photo(figures: PhotoFigures) -> None:
    photos = json.loads(json.dumps([figures.as_dict()]))
    assert figures_from_dict(photos[0]) == figures
    lines = describe_photos({"photos": photos})
    assert lines[0].startswith("photo 1:") and len(lines) == 1 + len(UPLOADS)
    assert lines == describe_photo(1, figures)
    assert "q95 4:4:4 (fixed)" in lines[2]


def test_scenario_lines_compare_the_three_variants() -> None:
    lat = {name: {"p50": p50, "p99": p50 * 1.2} for name, p50 in
           (("raw", 2500.0), ("q95", 700.0), ("prepared", 600.0))}
    series = {"latency_ms": lat, "latency_ratio_p50": 0.24, "latency_ratio_p99": 0.24,
              "prep_ms_p50": 90.0, "prep_ms_p50_q95": 85.0, "plain_ms_p50": 300.0,
              "prep_vs_plain": 0.3, "bytes_sent_raw": 3.5e6, "bytes_sent_q95": 6e5,
              "bytes_sent_prepared": 2.6e5, "psnr_db_min": 36.0, "prepared_size": [1024, 768]}
    text = "\n".join(describe(series, "mobile"))
    assert "fixed q95 700 ms -> measured quality 600 ms (0.857x) on mobile" in text
    assert "fixed q95 0.600 MB" in text and "fixed q95: 85 ms" in text
    assert "target >= 40" not in text  # the PSNR bar is gone; SSIM is the bar


def test_real_photographs_are_measured_and_the_goals_checked() -> None:
    pytest.importorskip("skimage", reason="the bench and test extras install scikit-image")
    from benchmarks.fixtures.sample_images import real_photo
    from benchmarks.image_prep import (
        REAL_MAX_VS_Q85,
        describe_real,
        describe_real_summary,
        measure_real,
        real_summary,
    )

    gray = measure_real("camera.png", real_photo("camera.png"), True, runs=1)
    colour = measure_real("chelsea.png", real_photo("chelsea.png"), False, runs=1)
    assert gray.content == "photo" and gray.format == "JPEG" and gray.q85_gray_bytes
    assert colour.q85_gray_bytes is None and colour.vs_q85 == colour.bytes / colour.q85_bytes
    assert "1-channel q85" in describe_real(gray) and "1-channel" not in describe_real(colour)
    s = real_summary([gray, colour])
    assert s["photos"] == 2 and s["lossless"] == [] and s["lossless_ok"]
    assert s["max_ok"] == (max(gray.vs_q85, colour.vs_q85) <= REAL_MAX_VS_Q85)
    # A lossless photograph is named and misses the goal.
    png = dataclasses.replace(gray, format="PNG", quality=None)
    s = real_summary([png, colour])
    assert s["lossless"] == ["camera.png"] and not s["lossless_ok"]
    assert "lossless: camera.png (MISSED)" in describe_real_summary(s)


def test_real_photographs_are_timed_against_the_earlier_preparation() -> None:
    pytest.importorskip("skimage", reason="the bench and test extras install scikit-image")
    from benchmarks.fixtures.sample_images import real_photo
    from benchmarks.image_prep import (
        REAL_MAX_TIME_VS_BEFORE,
        describe_real,
        describe_real_summary,
        load_before,
        measure_real,
        real_summary,
    )

    try:
        before = load_before()
    except RuntimeError as e:  # a shallow clone without the earlier commit
        pytest.skip(str(e))
    assert load_before() is before  # imported once
    assert before.prepare_image is not prepare_image  # the earlier code, beside ours
    # Before, a grayscale photograph went out as PNG; both are timed in the same runs.
    f = measure_real("page.png", real_photo("page.png"), True, runs=3, before=before)
    assert (f.before_format, f.format) == ("PNG", "JPEG")
    assert f.before_bytes is not None and f.before_bytes > f.bytes
    assert f.before_ms is not None and f.before_ms > 0
    assert f.time_vs_before == pytest.approx(f.prep_ms / f.before_ms)
    assert f.time_interval is not None and f.time_interval[0] <= f.time_interval[1]
    assert "; before PNG " in describe_real(f)
    s = real_summary([f])
    assert s["time_ok"] == (f.time_vs_before <= REAL_MAX_TIME_VS_BEFORE)
    # A photo prepared slower than the goal allows is named and misses it.
    slow = dataclasses.replace(f, time_vs_before=REAL_MAX_TIME_VS_BEFORE + 0.2)
    s = real_summary([slow, dataclasses.replace(f, name="other", time_vs_before=0.5)])
    assert s["time_over"] == ["page.png"] and not s["time_ok"]
    assert s["time_vs_before_max"] == REAL_MAX_TIME_VS_BEFORE + 0.2
    assert "MISSED: page.png" in describe_real_summary(s)
    # Its interval says whether that can be machine noise.
    noisy = dataclasses.replace(slow, time_interval=(0.9, 1.6))
    s = real_summary([noisy])
    assert s["time_over"] == ["page.png"] and s["time_clearly_over"] == []
    assert "[0.90-1.60]" in describe_real_summary(s) and "noise" in describe_real_summary(s)
    clear = dataclasses.replace(slow, time_interval=(1.2, 1.4))
    s = real_summary([clear])
    assert s["time_clearly_over"] == ["page.png"] and "noise" not in describe_real_summary(s)
    # Without a before, no time goal is claimed.
    alone = measure_real("page.png", real_photo("page.png"), True, runs=1)
    assert alone.time_vs_before is None and "time_ok" not in real_summary([alone])
    assert "before" not in describe_real(alone)


def test_a_ref_without_the_package_is_refused_by_name() -> None:
    from benchmarks.image_prep import load_before

    with pytest.raises(RuntimeError, match="no-such-ref"):
        load_before("no-such-ref")
