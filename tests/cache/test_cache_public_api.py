from __future__ import annotations

import llmclient.cache as cache


def test_all_is_complete_sorted_and_importable() -> None:
    names = cache.__all__
    assert len(set(names)) == len(names)
    # isort-style order (constants, classes, functions), as ruff's RUF022 keeps it
    assert names == sorted(names, key=lambda n: (not n.isupper(), n[0].islower(), n))
    for name in names:
        assert getattr(cache, name) is not None
    public = {n for n in dir(cache) if not n.startswith("_")}
    assert public - set(names) <= {"annotations"}
