"""llmclient.features.images.prepare_payload: chat bodies in, prepared bodies out."""

from __future__ import annotations

import base64
import copy
import http.server
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image

from llmclient.features import images as _images
from llmclient.preprocess import CorruptImage, ImageSourceError, parse_data_url


def jpeg(size: tuple[int, int] = (1600, 1200), seed: int = 0) -> bytes:
    img = Image.merge("RGB", (
        Image.linear_gradient("L").resize(size),
        Image.radial_gradient("L").resize(size),
        Image.linear_gradient("L").rotate(90 + seed).resize(size),
    ))
    img = Image.blend(img, Image.effect_noise(size, 50).convert("RGB"), 0.3)  # photo-like
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return buf.getvalue()


def data_url(data: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(data).decode()


def part(url: object, detail: str | None = None) -> dict[str, object]:
    image_url: dict[str, object] = {"url": url}
    if detail:
        image_url["detail"] = detail
    return {"type": "image_url", "image_url": image_url}


def chat(*parts: dict[str, object]) -> dict[str, Any]:
    return {"model": "m", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, *parts]},
    ]}


def size_of(url: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(parse_data_url(url)[1])).size


def urls(body: dict[str, Any]) -> list[str]:
    content = body["messages"][1]["content"]
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    _images.clear_cache()
    yield
    _images.clear_cache()


def _small_with_metadata() -> Image.Image:
    """A PIL image already within the target (no resize), carrying EXIF and a comment."""
    exif = Image.Exif()
    exif[0x010F] = "camera"
    img = Image.effect_noise((300, 200), 40).convert("RGB")
    img.info.update(exif=exif.tobytes(), comment=b"private")
    return img


def _structure(value: object) -> object:
    """The identity of every container in a body, to show none was replaced in place."""
    if isinstance(value, dict):
        return (id(value), {k: _structure(v) for k, v in value.items()})
    if isinstance(value, list):
        return (id(value), [_structure(v) for v in value])
    return id(value)


def test_rewrites_every_local_image_kind_without_touching_the_input(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(jpeg(seed=1))
    # A lazily opened JPEG (prepare must not draft() the caller's object smaller) and a small
    # image with metadata (which must keep it: only the upload is stripped).
    lazy = Image.open(io.BytesIO(jpeg(seed=2)))
    body = chat(part(data_url(jpeg())), part(Path(str(path))), part(path, "low"), part(lazy),
                part(_small_with_metadata()))
    body["temperature"] = 0.2
    snapshot, shape = copy.deepcopy(body), _structure(body)
    new, stats = _images.prepare_payload(body, None)
    assert body == snapshot  # every value, PIL pixels and info included
    assert _structure(body) == shape  # and every dict and list is still the caller's own
    assert lazy.size == (1600, 1200) and lazy.mode == "RGB"
    got = urls(new)
    assert all(u.startswith("data:image/jpeg;base64,") for u in got[:4])
    assert [size_of(u) for u in got] == [(1024, 768), (1024, 768), (512, 384), (1024, 768),
                                         (300, 200)]
    assert not Image.open(io.BytesIO(parse_data_url(got[4])[1])).getexif()
    assert new["messages"][1]["content"][3]["image_url"]["detail"] == "low"
    assert new["messages"][0] is body["messages"][0] and new["temperature"] == 0.2
    assert stats.count == 5 and stats.cache_hits == 0
    assert stats.bytes_after < stats.bytes_before and stats.bytes_saved > 0


def test_same_content_is_prepared_once_per_target() -> None:
    img = data_url(jpeg())
    first, s1 = _images.prepare_payload(chat(part(img)), None)
    second, s2 = _images.prepare_payload(chat(part(img), part(img, "low")), None)
    assert s1.cache_hits == 0 and s2.cache_hits == 1
    assert urls(second)[0] == urls(first)[0]
    # Our own output sent back passes unchanged (no second lossy encode).
    third, s3 = _images.prepare_payload(chat(part(urls(first)[0])), None)
    assert s3.cache_hits == 1 and urls(third)[0] == urls(first)[0]


def test_remote_urls_left_alone_and_off_switch() -> None:
    body = chat(part("https://example.invalid/cat.jpg"), part("gs://bucket/cat.jpg"))
    new, stats = _images.prepare_payload(body, None)
    assert new is body and stats.count == 0
    local = chat(part(data_url(jpeg())))
    for off in (False, SimpleNamespace(images=False)):
        new, stats = _images.prepare_payload(local, off)
        assert new is local and stats.count == 0


def test_options_pick_the_target() -> None:
    body = chat(part(data_url(jpeg())))
    new, _ = _images.prepare_payload(body, SimpleNamespace(images="anthropic"))
    assert size_of(urls(new)[0]) == (1237, 928)  # 4:3 within 1.15 MP (1237 * 3/4 = 927.75)
    new, _ = _images.prepare_payload(body, {"target": "openai-low", "quality": 70})
    assert size_of(urls(new)[0]) == (512, 384)
    with pytest.raises(ValueError, match="unknown images option"):
        _images.prepare_payload(body, {"tagret": "x"})
    with pytest.raises(ValueError, match="unknown image target"):
        _images.prepare_payload(body, "openai-medium")


def test_errors_name_the_message_and_part(tmp_path: Path) -> None:
    body = chat(part(data_url(jpeg())), part(data_url(jpeg()[:2000])))
    with pytest.raises(CorruptImage, match=r"^messages\[1\]\.content\[2\]: cannot decode JPEG"):
        _images.prepare_payload(body, None)
    with pytest.raises(ImageSourceError, match=r"messages\[1\]\.content\[1\]: image file not found"):
        _images.prepare_payload(chat(part(tmp_path / "missing.png")), None)


class _Images(http.server.BaseHTTPRequestHandler):
    payload = b""

    def do_GET(self) -> None:
        if self.path != "/cat.jpg":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "image/jpeg")
        self.send_header("content-length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args: object) -> None:
        pass


def test_fetch_downloads_and_shrinks_http_images_when_asked() -> None:
    _Images.payload = jpeg((2000, 1000))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        body = chat(part(f"{base}/cat.jpg"))
        untouched, _ = _images.prepare_payload(body, None)
        assert urls(untouched) == [f"{base}/cat.jpg"]
        new, stats = _images.prepare_payload(body, {"fetch": True})
        assert size_of(urls(new)[0]) == (1536, 768) and stats.count == 1
        with pytest.raises(ImageSourceError, match=r"messages\[1\]\.content\[1\]: cannot fetch"):
            _images.prepare_payload(chat(part(f"{base}/dog.jpg")), {"fetch": True})
    finally:
        server.shutdown()
        server.server_close()


def test_stats_say_the_quality_chosen_per_image_cache_hits_included() -> None:
    from benchmarks.fixtures.photos import camera_pixels

    _images.clear_cache()
    buf = io.BytesIO()
    camera_pixels(7, (1200, 900)).save(buf, "JPEG", quality=92)
    body = chat(part(data_url(buf.getvalue())))
    _, first = _images.prepare_payload(body)
    _, again = _images.prepare_payload(body)
    assert (first.cache_hits, again.cache_hits) == (0, 1)
    assert first.quality_sources == again.quality_sources
    assert first.quality_sources[0] in ("measured", "budget")  # "budget": a loaded machine
    assert first.qualities == again.qualities and (first.qualities[0] or 100) < 95
    _, fixed = _images.prepare_payload(chat(part(data_url(jpeg(seed=8)))), {"quality": 70})
    assert (fixed.qualities, fixed.quality_sources) == ((70,), ("fixed",))
