"""The pure shaper on a virtual clock: delay, bandwidth, handshake, jitter order, loss."""

from __future__ import annotations

import random

import pytest

from benchmarks.netem import DirectionShaper, NetworkProfile, handshake_delay_s


def _last_due(shaper: DirectionShaper, now: float, nbytes: int) -> float:
    return shaper.schedule(now, nbytes)[-1][0]


def test_unshaped_bytes_arrive_after_the_one_way_delay() -> None:
    shaper = DirectionShaper(one_way_s=0.02)
    assert shaper.schedule(5.0, 100) == [(5.02, 100)]
    assert shaper.schedule(5.0, 0) == []


def test_bandwidth_serializes_a_burst_at_the_rate() -> None:
    shaper = DirectionShaper(one_way_s=0.02, rate_bps=8e6)
    pieces = shaper.schedule(0.0, 1_000_000)
    assert sum(n for _, n in pieces) == 1_000_000
    # 1 MB at 8 Mbit/s takes 1 s on the link, then crosses it in 20 ms.
    assert pieces[-1][0] == pytest.approx(1.02, rel=1e-9)
    # Delivered progressively, not in one lump at the end.
    assert pieces[0][0] < 0.03
    dues = [d for d, _ in pieces]
    assert dues == sorted(dues)


def test_link_is_shared_by_consecutive_writes_and_recovers_when_idle() -> None:
    shaper = DirectionShaper(one_way_s=0.0, rate_bps=8e6)
    assert _last_due(shaper, 0.0, 100_000) == pytest.approx(0.1)
    assert _last_due(shaper, 0.05, 100_000) == pytest.approx(0.2)  # queued behind the first
    assert _last_due(shaper, 1.0, 100_000) == pytest.approx(1.1)  # idle link: no debt


def test_token_bucket_burst_passes_at_once_then_rate_applies() -> None:
    shaper = DirectionShaper(one_way_s=0.0, rate_bps=8e6, burst_bytes=50_000, mss=1000)
    assert _last_due(shaper, 0.0, 50_000) == pytest.approx(0.0)
    assert _last_due(shaper, 0.0, 100_000) == pytest.approx(0.1)


def test_handshake_holds_the_first_bytes_one_rtt() -> None:
    profile = NetworkProfile("t", rtt_ms=40)
    rng = random.Random(1)
    hs = handshake_delay_s(profile, rng)
    assert hs == pytest.approx(0.04)
    up = DirectionShaper.for_profile(profile, upstream=True, rng=rng, not_before=10.0 + hs)
    # Sent at accept time, the bytes reach the server after handshake + one way = 1.5 RTT.
    assert _last_due(up, 10.0, 10) == pytest.approx(10.06)
    assert _last_due(up, 11.0, 10) == pytest.approx(11.02)


def test_profile_directions_use_their_own_rates() -> None:
    profile = NetworkProfile("t", down_mbit=16.0, up_mbit=8.0)
    rng = random.Random(0)
    up = DirectionShaper.for_profile(profile, upstream=True, rng=rng)
    down = DirectionShaper.for_profile(profile, upstream=False, rng=rng)
    assert _last_due(up, 0.0, 1_000_000) == pytest.approx(1.0)
    assert _last_due(down, 0.0, 1_000_000) == pytest.approx(0.5)
    off = DirectionShaper.for_profile(profile, upstream=True, rng=rng, shape_bandwidth=False)
    assert _last_due(off, 0.0, 1_000_000) == 0.0


def test_jitter_spreads_delays_but_never_reorders() -> None:
    rng = random.Random(42)
    shaper = DirectionShaper(one_way_s=0.02, jitter_s=0.01, rate_bps=80e6, rng=rng)
    dues: list[float] = []
    delays = []
    now = 0.0
    for _ in range(2000):
        now += rng.uniform(0, 0.004)  # writes closer together than the jitter
        pieces = shaper.schedule(now, rng.randint(1, 30_000))
        dues += [d for d, _ in pieces]
        delays.append(pieces[0][0] - now)
    assert dues == sorted(dues)
    assert min(delays) >= 0.01 - 1e-9
    assert max(delays) - min(delays) > 0.01  # jitter is really there


def test_jitter_alone_stays_within_its_bounds() -> None:
    shaper = DirectionShaper(one_way_s=0.02, jitter_s=0.005, rng=random.Random(3))
    delays = [shaper.schedule(t * 1.0, 10)[0][0] - t for t in range(1000)]
    assert 0.015 - 1e-9 <= min(delays) < 0.016
    assert 0.024 < max(delays) <= 0.025 + 1e-9


def test_eof_arrives_after_all_data() -> None:
    shaper = DirectionShaper(one_way_s=0.01, rate_bps=8e6)
    last = _last_due(shaper, 0.0, 100_000)
    assert shaper.eof_due(0.0) == pytest.approx(last)
    assert shaper.eof_due(5.0) == pytest.approx(5.01)


def test_loss_statistics_match_the_probability_and_cost_one_rto_each() -> None:
    p, rto = 0.02, 0.2
    shaper = DirectionShaper(
        one_way_s=0.0, loss=p, rto_s=rto, mss=1000, rng=random.Random(7), rate_bps=None
    )
    extra = 0.0
    for i in range(50_000):
        extra += shaper.schedule(float(i), 1000)[0][0] - i
    n = shaper.segments
    assert n == 50_000
    # Losses of a retransmission count too: expected losses per segment p / (1 - p).
    expected = n * p / (1 - p)
    sigma = (n * p) ** 0.5
    assert abs(shaper.lost_segments - expected) < 5 * sigma
    assert extra == pytest.approx(shaper.lost_segments * rto)


def test_a_loss_blocks_the_bytes_behind_it() -> None:
    rng = random.Random()
    shaper = DirectionShaper(one_way_s=0.0, loss=0.5, rto_s=0.2, mss=100, rng=rng)
    rng.seed(11)
    dues = [d for d, _ in shaper.schedule(0.0, 10_000)]
    assert shaper.lost_segments > 0
    assert dues == sorted(dues)
    assert dues[-1] >= 0.2


def test_handshake_loss_costs_the_initial_rto() -> None:
    profile = NetworkProfile("t", rtt_ms=100, loss=0.2)
    rng = random.Random(5)
    delays = [handshake_delay_s(profile, rng) for _ in range(20_000)]
    assert min(delays) == pytest.approx(0.1)
    assert all(round((d - 0.1) % 1.0, 9) in (0.0, 1.0) for d in delays)
    # Two packets (SYN, SYN-ACK), each needing 1/(1-p) tries: 2 * p/(1-p) extra seconds.
    mean_extra = sum(delays) / len(delays) - 0.1
    assert mean_extra == pytest.approx(2 * 0.2 / 0.8, rel=0.05)


def test_bad_shaper_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="jitter_s"):
        DirectionShaper(one_way_s=0.01, jitter_s=0.02)
    with pytest.raises(ValueError, match="rate_bps"):
        DirectionShaper(one_way_s=0.01, rate_bps=0)
