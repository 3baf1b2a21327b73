from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def photo_12mp() -> bytes:
    """A generated 4000x3000 camera JPEG with EXIF orientation 6 and GPS."""
    from benchmarks.fixtures.photos import camera_photo

    return camera_photo(1, orientation=6, gps=True)
