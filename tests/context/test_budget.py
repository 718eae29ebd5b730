from __future__ import annotations

import pytest
from ctxagent.context.budget import PROFILES, Budget
from ctxagent.context.errors import ConfigError


def test_default_slices_and_limit() -> None:
    b = Budget(100_000, max_output=1000)
    assert b.reserve == 5000  # 5 % beats max_output
    assert b.limit == 95_000
    s = b.slices()
    assert s == {"system": 15_000, "hot": 40_000, "warm": 25_000, "tools": 15_000, "reserve": 5000}
    assert sum(s.values()) == b.window


def test_reserve_at_least_max_output() -> None:
    b = Budget(32_000, max_output=8192)
    assert b.reserve == 8192
    assert b.limit == 32_000 - 8192


def test_unused_share_flows_to_hot() -> None:
    b = Budget(100_000, max_output=1000)
    s = b.slices({"system": 2000, "warm": 500, "tools": 30_000})
    assert s["system"] == 2000 and s["warm"] == 500
    assert s["tools"] == 15_000  # over its share: budget stays at the base, the report shows used > budget
    assert s["hot"] == 95_000 - 2000 - 500 - 15_000
    assert sum(s.values()) == 100_000


def test_profiles_differ_as_advertised() -> None:
    coding = Budget.from_profile("coding", 100_000)
    design = Budget.from_profile("design", 100_000)
    default = Budget.from_profile("default", 100_000)
    assert coding.base("hot") > default.base("hot")
    assert design.base("warm") > default.base("warm")
    assert set(PROFILES) >= {"default", "coding", "design"}
    with pytest.raises(ConfigError):
        Budget.from_profile("nope", 1000)


def test_fractions_are_normalised_and_validated() -> None:
    b = Budget(10_000, fractions={"system": 0.3, "hot": 0.8, "warm": 0.5, "tools": 0.3, "reserve": 0.1}, max_output=10)
    assert abs(sum(b.fractions.values()) - 1.0) < 1e-9
    with pytest.raises(ConfigError):
        Budget(10_000, fractions={"bogus": 0.1})
    with pytest.raises(ConfigError):
        Budget(10_000, fractions={"hot": -1})
    with pytest.raises(ConfigError):
        Budget(0)
    with pytest.raises(ConfigError, match="no room"):
        Budget(4000, max_output=8192)


def test_effective_limit_with_calibration() -> None:
    b = Budget(100_000, max_output=1000)
    assert b.effective_limit(1.0) == 95_000
    assert b.effective_limit(1.25) == 76_000
    assert b.effective_limit(0.8) == 95_000  # a ratio below 1 never raises the limit
    assert b.effective_limit(0) == 95_000


def test_rebuilt_from_its_own_fractions_is_the_same_budget() -> None:
    for window in (8_000, 32_000, 128_000, 200_000, 1_000_000, 12_345):
        for profile in ("default", "coding", "design"):
            b = Budget.from_profile(profile, window, max_output=1024)
            again = Budget(window, fractions=dict(b.fractions), max_output=1024, profile=profile)
            assert again.fractions == b.fractions and again.limit == b.limit and again.slices() == b.slices()
    odd = Budget(100_000, fractions={"system": 0.1, "hot": 0.3, "warm": 0.3, "tools": 0.2, "reserve": 0.07}, max_output=10)
    assert Budget(100_000, fractions=odd.fractions, max_output=10).limit == odd.limit
