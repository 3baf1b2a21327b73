"""Profiles are data: validated, documented, parsed from a CLI spec."""

from __future__ import annotations

import pytest

import benchmarks.netem as netem
from benchmarks.netem import PROFILES, NetworkProfile, get_profile, parse_profile


def test_all_is_sorted_and_exported() -> None:
    assert netem.__all__ == sorted(
        netem.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n)
    )
    for name in netem.__all__:
        assert hasattr(netem, name), name


def test_builtin_profiles_match_the_issue() -> None:
    assert set(PROFILES) == {"loopback", "lan", "wan", "mobile"}
    assert not PROFILES["loopback"].shaped
    assert PROFILES["lan"].rtt_ms == 1.0
    wan = PROFILES["wan"]
    assert (wan.rtt_ms, wan.down_mbit, wan.up_mbit) == (50.0, 50.0, 20.0)
    assert 0 < wan.jitter_ms <= 5
    mobile = PROFILES["mobile"]
    assert (mobile.rtt_ms, mobile.up_mbit, mobile.loss) == (100.0, 10.0, 0.005)
    for profile in PROFILES.values():
        assert profile.description, f"{profile.name} is undocumented"


def test_rto_is_max_of_min_rto_and_rtt() -> None:
    assert PROFILES["wan"].rto_ms == 200.0
    assert NetworkProfile("slow", rtt_ms=600).rto_ms == 600.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rtt_ms": -1.0}, "rtt_ms"),
        ({"rtt_ms": 10.0, "jitter_ms": 6.0}, "jitter_ms"),
        ({"down_mbit": 0.0}, "down_mbit"),
        ({"loss": 1.0}, "loss"),
        ({"mss": 0}, "mss"),
    ],
)
def test_bad_profiles_name_the_problem(changes: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NetworkProfile("bad", **changes)  # type: ignore[arg-type]


def test_get_profile_rejects_unknown_names_listing_known_ones() -> None:
    with pytest.raises(ValueError, match="known: lan, loopback, mobile, wan"):
        get_profile("satellite")
    assert get_profile(PROFILES["wan"]) is PROFILES["wan"]


def test_parse_profile_overrides() -> None:
    assert parse_profile("wan") is PROFILES["wan"]
    p = parse_profile("mobile:loss=0.01,down=none")
    assert (p.rtt_ms, p.loss, p.down_mbit, p.up_mbit) == (100.0, 0.01, None, 10.0)
    custom = parse_profile("rtt=40,down=8,up=8")
    assert (custom.rtt_ms, custom.jitter_ms, custom.down_mbit, custom.up_mbit) == (40, 0, 8, 8)
    with pytest.raises(ValueError, match="keys: rtt"):
        parse_profile("wan:latency=3")
