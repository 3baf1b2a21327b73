"""``python -m benchmarks.ws_overhead``: the connect() kinds drive each client's
``responses.connect()`` against a real reference server, and the summary pairs them (no timings
asserted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks import ws_overhead
from tests.conftest import RefServer, start_ref_server, stop_ref_server

pytest.importorskip("websockets")


@pytest.fixture(scope="module")
def server() -> Iterator[RefServer]:
    s = start_ref_server()
    yield s
    stop_ref_server(s)


@pytest.mark.parametrize("kind", ["official", "llmclient-connect", "llmclient-async-connect-raw"])
def test_a_connect_kind_counts_the_events_of_its_responses(server, kind) -> None:
    out = ws_overhead.worker(kind, server.base_url, 2, 16)
    # each response: created, in_progress, item/part added, deltas, text/part/item done, completed
    assert out["events"] >= 2 * 9 and out["cpu_s"] > 0 and out["us_per_event"] > 0


def test_the_summary_sets_llmclient_s_connect_beside_the_official_one() -> None:
    def row(us: float) -> dict[str, float]:
        return {"us_per_event": us}
    rounds = [{"official": row(80.0), "llmclient-connect": row(20.0), "official-async-raw": row(20.0),
               "llmclient-async-connect-raw": row(25.0)},
              {"official": row(60.0), "llmclient-connect": row(30.0), "official-async-raw": row(22.0),
               "llmclient-async-connect-raw": row(22.0)}]
    s = ws_overhead.summarize(rounds)
    assert s["ratios"] == {"connect_sync": 25.0 / 70.0, "connect_raw_async": 23.5 / 21.0}
