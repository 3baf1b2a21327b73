"""No local file leaves the machine from message content.

Strings in ``image_url`` parts are URLs: a path, ``file://`` or device name in a message is
sent to the live reference server as it is (which rejects it), never read. Files are read
only from a ``pathlib.Path`` or an open binary file object the program put there (or with the
documented ``images={"local_paths": True}``), and only regular files under the size cap.
Client calls run through ``OpenAI`` and ``AsyncOpenAI`` (``drive``: each runs on both).
"""

from __future__ import annotations

import base64
import io
import os
import threading
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from PIL import Image

import llmclient
from llmclient.features import images as _images
from llmclient.preprocess import MAX_SOURCE_BYTES, ImageSourceError
from llmclient.wire.compression import decompress
from tests._both import Drive

MODEL = "sim-zero"
MARKER = b"TOP-SECRET-FILE-CONTENT"


def jpeg_bytes() -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((64, 48), 40).convert("RGB").save(buf, "JPEG")
    return buf.getvalue()


@pytest.fixture
def secret_image(tmp_path: Path) -> Path:
    """A real, decodable JPEG (so a read would succeed and upload it) with a marker appended."""
    path = tmp_path / "private.jpg"
    path.write_bytes(jpeg_bytes() + MARKER)
    return path


def ask(url: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


class Wire:
    """What the client put on the wire (a request hook on the http_client)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def hook(self, request: httpx.Request) -> None:
        # llmclient's requests carry their body as bytes: readable in either client's hook.
        self.bodies.append(self._plain(request, request.content))

    @staticmethod
    def _plain(request: httpx.Request, body: bytes) -> bytes:
        coding = request.headers.get("content-encoding")
        return decompress(body, coding, 1 << 28) if coding else body

    def sent_url(self) -> Any:
        return orjson.loads(self.bodies[-1])["messages"][0]["content"][1]["image_url"]["url"]


def hostile_strings(secret_image: Path, tmp_path: Path) -> list[str]:
    rel = os.path.relpath(secret_image, Path.cwd())
    return [str(secret_image), rel, f"file://{secret_image}", "../../etc/passwd", "/dev/zero",
            "file:///proc/self/environ", "file:///dev/zero"]


def test_strings_that_name_files_are_sent_untouched_and_the_server_rejects_them(
        drive: Drive, ref_server: Any, secret_image: Path, tmp_path: Path) -> None:
    wire = Wire()
    http_client = drive.http_client(event_hooks={"request": [wire.hook]})
    client = drive.client(base_url=ref_server.base_url, api_key="k", http_client=http_client)
    for url in hostile_strings(secret_image, tmp_path):
        with pytest.raises(llmclient.BadRequestError, match="image_url"):
            drive(client.chat.completions.create(model=MODEL, messages=ask(url), max_tokens=1))
        assert wire.sent_url() == url  # as written: nothing read, nothing replaced
        assert MARKER not in wire.bodies[-1] and base64.b64encode(MARKER) not in wire.bodies[-1]


def test_path_and_file_object_from_the_program_are_prepared(drive: Drive, ref_server: Any,
                                                            secret_image: Path) -> None:
    wire = Wire()
    http_client = drive.http_client(event_hooks={"request": [wire.hook]})
    client = drive.client(base_url=ref_server.base_url, api_key="k", http_client=http_client)
    drive(client.chat.completions.create(model=MODEL, messages=ask(secret_image), max_tokens=1))
    assert wire.sent_url().startswith("data:image/")
    with secret_image.open("rb") as f:
        drive(client.chat.completions.create(model=MODEL, messages=ask(f), max_tokens=1))
    assert wire.sent_url().startswith("data:image/")
    # The documented opt-in for programs whose messages never hold end-user text, per call
    # (a path string) and per client (a file:// URL).
    drive(client.chat.completions.create(model=MODEL, messages=ask(str(secret_image)), max_tokens=1,
                                         images={"local_paths": True}))
    assert wire.sent_url().startswith("data:image/")
    opted_in = drive.client(base_url=ref_server.base_url, api_key="k", http_client=http_client,
                            images={"local_paths": True})
    drive(opted_in.chat.completions.create(model=MODEL, messages=ask(f"file://{secret_image}"),
                                           max_tokens=1))
    assert wire.sent_url().startswith("data:image/")


# -- what even an explicit Path (or the opt-in) may not read --------------------------------


def test_devices_proc_and_fifos_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for source in (Path("/dev/zero"), Path("/proc/self/environ"), fifo, tmp_path):
        with pytest.raises(ImageSourceError, match=r"messages\[0\]\.content\[1\]: image path is "
                                                   r"(not a regular file|a directory)"):
            _images.prepare_payload({"messages": ask(source)}, None)
    # A symlink to a device is judged by what it points to.
    link = tmp_path / "innocent.jpg"
    link.symlink_to("/dev/zero")
    with pytest.raises(ImageSourceError, match="not a regular file"):
        _images.prepare_payload({"messages": ask(link)}, None)
    # The opt-in reads path strings, under the same rules.
    with pytest.raises(ImageSourceError, match="not a regular file"):
        _images.prepare_payload({"messages": ask("/dev/zero")}, {"local_paths": True})


def test_fifo_refusal_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = threading.Event()

    def run() -> None:
        with pytest.raises(ImageSourceError):
            _images.prepare_payload({"messages": ask(fifo)}, None)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(5), "opening the FIFO blocked"


def test_files_and_file_objects_over_the_cap_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "huge.jpg"
    with big.open("wb") as f:
        f.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ImageSourceError, match="more than"):
        _images.prepare_payload({"messages": ask(big)}, None)
    # A caller's object that never ends.
    with open("/dev/zero", "rb") as endless, pytest.raises(ImageSourceError, match="more than"):
        _images.prepare_payload({"messages": ask(endless)}, None)
