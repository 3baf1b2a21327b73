"""Prepare a 12-megapixel photo for upload, then (optionally) send it.

    python -m examples.images                      # prepare only, print what changed
    python -m examples.images http://127.0.0.1:PORT/v1   # also send it (reference server)

llmclient prepares image parts automatically; ``images=False`` turns that off per call,
``images="anthropic"`` (or a ``llmclient.preprocess.Target``) picks another target.
"""

from __future__ import annotations

import sys

from llmclient.preprocess import prepare_image
from llmclient_bench.fixtures.photos import camera_photo


def main() -> None:
    raw = camera_photo(seed=7, orientation=6)  # EXIF says "rotate 90", and carries GPS
    for target in ("openai-high", "openai-low", "anthropic"):
        p = prepare_image(raw, target)
        print(f"{target:12} {p.original_width}x{p.original_height} {p.bytes_before:,} B -> "
              f"{p.width}x{p.height} {p.format} {p.bytes_after:,} B, ~{p.tokens} tokens, "
              f"{p.elapsed_ms:.0f} ms")
    if len(sys.argv) > 1:
        from llmclient import OpenAI

        client = OpenAI(base_url=sys.argv[1], api_key="sk-example")
        url = "data:image/jpeg;base64," + __import__("base64").b64encode(raw).decode()
        resp = client.chat.completions.create(
            model="gpt-4o-mini",
            max_tokens=8,
            messages=[{"role": "user", "content": [
                {"type": "text", "text": "Describe the photo."},
                {"type": "image_url", "image_url": {"url": url}},
            ]}],
        )
        print("prompt tokens:", resp.usage.prompt_tokens if resp.usage else None,
              "| image prep ms:", resp.timings.image_prep_ms,
              "| bytes saved:", resp.timings.image_bytes_saved)


if __name__ == "__main__":
    main()
