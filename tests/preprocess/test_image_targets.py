"""The pure decisions: resize plans, token estimates, format choice, quality ladder."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from llmclient import preprocess
from llmclient.preprocess import (
    ANTHROPIC,
    GEMINI,
    OPENAI_HIGH,
    OPENAI_LOW,
    TARGETS,
    Target,
    choose_formats,
    estimate_tokens,
    get_target,
    plan_resize,
    quality_steps,
)

sides = st.integers(min_value=1, max_value=20_000)
targets = st.sampled_from([*TARGETS.values(), Target(max_side=100), Target(max_pixels=5000),
                           Target(short_side=50, max_side=300)])


def test_all_lists_each_public_name_once() -> None:
    # Order is ruff's isort-style sort (RUF022), checked by `ruff check`.
    assert len(set(preprocess.__all__)) == len(preprocess.__all__)
    public = {n for n in vars(preprocess) if not n.startswith("_")} - {"annotations"}
    assert public == set(preprocess.__all__)
    for name in preprocess.__all__:
        assert hasattr(preprocess, name)


@given(sides, sides, targets)
def test_plan_never_upscales_and_obeys_every_limit(w: int, h: int, target: Target) -> None:
    w2, h2 = plan_resize(w, h, target)
    assert 1 <= w2 <= w and 1 <= h2 <= h
    if target.max_side and max(w, h) > 1:
        assert max(w2, h2) <= target.max_side
    if target.short_side and min(w, h) >= 1 and max(w2, h2) > 1:
        assert min(w2, h2) <= target.short_side
    if target.max_pixels and w2 * h2 > 1:
        assert w2 * h2 <= target.max_pixels


@given(sides, sides, targets)
def test_plan_is_idempotent(w: int, h: int, target: Target) -> None:
    # A server applying the same rule to our output must leave it alone.
    once = plan_resize(w, h, target)
    assert plan_resize(*once, target) == once


@given(st.integers(100, 20_000), st.integers(100, 20_000), targets)
@example(209, 251, Target(max_pixels=5000))  # rounding overshot; shaving one side distorted it
def test_plan_keeps_aspect_ratio(w: int, h: int, target: Target) -> None:
    w2, h2 = plan_resize(w, h, target)
    if min(w2, h2) >= 20:
        assert abs(w2 / h2 - w / h) <= (w / h) * (1.5 / min(w2, h2))


@pytest.mark.parametrize(
    ("size", "target", "expected"),
    [
        ((4000, 3000), OPENAI_HIGH, (1024, 768)),
        ((3000, 4000), OPENAI_HIGH, (768, 1024)),
        ((8000, 1000), OPENAI_HIGH, (2048, 256)),
        ((700, 500), OPENAI_HIGH, (700, 500)),
        ((4000, 3000), OPENAI_LOW, (512, 384)),
        ((4000, 3000), ANTHROPIC, (1238, 929)),
        ((1000, 1000), ANTHROPIC, (1000, 1000)),
        ((4000, 3000), GEMINI, (3072, 2304)),
    ],
)
def test_plan_matches_provider_rules(size: tuple[int, int], target: Target,
                                     expected: tuple[int, int]) -> None:
    got = plan_resize(*size, target)
    # Anthropic's pixel cap rounds either way by one pixel; the cap itself must hold.
    assert abs(got[0] - expected[0]) <= 1 and abs(got[1] - expected[1]) <= 1


def test_token_estimates_follow_provider_formulas() -> None:
    assert estimate_tokens(1024, 768, OPENAI_HIGH) == 85 + 170 * 4
    assert estimate_tokens(512, 512, OPENAI_HIGH) == 85 + 170
    assert estimate_tokens(512, 384, OPENAI_LOW) == 85
    assert estimate_tokens(1092, 1092, ANTHROPIC) == 1590
    assert estimate_tokens(300, 300, GEMINI) == 258
    assert estimate_tokens(1024, 768, GEMINI) == 258 * 2 * 2  # crop unit 512
    assert estimate_tokens(10, 10, Target()) is None


def test_unknown_target_names_the_choices() -> None:
    with pytest.raises(ValueError, match="openai-high"):
        get_target("openai-medium")


def test_target_rejects_nonsense_limits() -> None:
    with pytest.raises(ValueError, match="max_side"):
        Target(max_side=0)
    with pytest.raises(ValueError, match="quality"):
        Target(quality=0)


def test_format_choice_by_content() -> None:
    assert choose_formats(graphic=False, has_alpha=False, target=OPENAI_HIGH, webp=False)[0] == "JPEG"
    assert choose_formats(graphic=False, has_alpha=False, target=OPENAI_HIGH, webp=True)[:2] == ["JPEG", "WEBP"]
    assert choose_formats(graphic=True, has_alpha=False, target=OPENAI_HIGH, webp=False)[0] == "PNG"
    assert "JPEG" not in choose_formats(graphic=False, has_alpha=True, target=OPENAI_HIGH, webp=False)
    assert choose_formats(False, False, Target(formats=frozenset({"PNG"})), webp=True) == ["PNG"]


def test_quality_ladder_descends_to_the_floor() -> None:
    assert quality_steps(95) == [95, 90, 80, 70, 60, 50, 40]
    assert quality_steps(40) == [40]
