from __future__ import annotations

import json
import math

from ctxagent.context.calibrator import MAX_RATIO, MIN_RATIO, Calibrator, default_path
from ctxagent.context.floor.state_paths import user_config_dir, user_state_dir


def test_starts_at_one_and_moves_toward_reported(tmp_path) -> None:
    cal = Calibrator("claude-x", tmp_path / "cal.json")
    assert cal.ratio == 1.0 and cal.apply(1000) == 1000
    cal.update(1000, 1200)
    assert cal.ratio == 1.2  # the first sample replaces the prior
    for _ in range(20):
        cal.update(1000, 1100)
    assert 1.1 <= cal.ratio < 1.12
    assert cal.apply(1000) == math.ceil(1000 * cal.ratio)


def test_clamped_and_ignores_useless_samples(tmp_path) -> None:
    cal = Calibrator("m", tmp_path / "m.json")
    cal.update(1000, 100_000)
    assert cal.ratio == MAX_RATIO
    cal2 = Calibrator("m2", tmp_path / "m2.json")
    cal2.update(1000, 1)
    assert cal2.ratio == MIN_RATIO
    cal3 = Calibrator("m3", None)
    assert cal3.update(1000, 0) == 1.0
    assert cal3.update(10, 30) == 1.0  # tiny requests are framing-dominated


def test_persisted_per_model(tmp_path) -> None:
    path = tmp_path / "a" / "model.json"
    cal = Calibrator("model", path)
    cal.update(2000, 3000)
    again = Calibrator("model", path)
    assert again.ratio == 1.5 and again.samples == 1
    assert json.loads(path.read_text())["model"] == "model"


def test_damaged_file_starts_over(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    assert Calibrator("x", path).ratio == 1.0
    path.write_text(json.dumps({"ratio": "nan"}))
    assert Calibrator("x", path).ratio == 1.0


def test_paths_follow_ctxagent_home(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CTXAGENT_HOME", str(tmp_path))
    assert user_state_dir() == tmp_path
    assert user_config_dir() == tmp_path / "config"
    assert default_path("openai/gpt-4o:mini") == tmp_path / "calibration" / "openai_gpt-4o_mini.json"
    monkeypatch.delenv("CTXAGENT_HOME")
    assert "ctxagent" in str(user_state_dir())
    assert "ctxagent" in str(user_config_dir())


def _feed(cal: Calibrator, pairs) -> list[float]:
    """Relative errors of each prediction made before the pair was fed."""
    errs = []
    for x, y in pairs:
        errs.append(abs(cal.apply(x) - y) / y)
        cal.update(x, y)
    return errs


def _growing(n: int, start: int = 2_000, step: int = 1_500, jump_every: int = 25) -> list[int]:
    """Request sizes as a session makes them: growing step by step, falling back after a compaction."""
    out, x = [], start
    for i in range(n):
        out.append(x)
        x = start if (i + 1) % jump_every == 0 else x + step + (i * 37) % 400
    return out


def test_intercept_and_ratio_recovered_from_synthetic_pairs() -> None:
    cal = Calibrator("m", None)
    sizes = _growing(80)
    # a fixed prefix of 26,000 provider tokens our count never sees, and 1.2 provider tokens per local one;
    # ±1 % noise, and one odd call (a retry the provider counted twice)
    pairs = [(x, round(26_000 + 1.2 * x) * (1 + 0.01 * ((i * 7) % 3 - 1))) for i, x in enumerate(sizes)]
    pairs[40] = (pairs[40][0], pairs[40][1] * 2)
    _feed(cal, [(x, int(y)) for x, y in pairs])
    assert abs(cal.intercept - 26_000) < 1_500
    assert abs(cal.slope - 1.2) < 0.03
    assert cal.median_error() is not None and cal.median_error() < 0.012
    # the effective ratio is read at the newest size: well above the slope for a small request
    assert cal.ratio == cal.predict(sizes[-1]) / sizes[-1]
    assert cal.apply(5_000) == math.ceil(26_000 + 1.2 * 5_000) or abs(cal.apply(5_000) - 32_000) < 800


def test_a_ratio_alone_beats_nothing_but_the_intercept_beats_the_ratio() -> None:
    sizes = _growing(120)
    pairs = [(x, int(20_000 + 1.1 * x)) for x in sizes]
    errs = _feed(Calibrator("m", None), pairs)[1:]
    tail = sorted(errs[10:])
    assert tail[len(tail) // 2] < 0.01  # median
    assert tail[int(0.95 * len(tail))] < 0.05  # p95: a compaction's fall in size does not throw it off


def test_falls_back_to_the_ratio_with_little_data() -> None:
    cal = Calibrator("m", None)
    cal.update(10_000, 13_000)
    assert (cal.intercept, cal.slope) == (0.0, 1.3) and cal.ratio == 1.3
    for _ in range(10):  # many pairs, all the same size: a prefix cannot be told from a ratio
        cal.update(10_000, 13_000)
    assert cal.intercept == 0.0 and cal.slope == 1.3


def test_bounded() -> None:
    cal = Calibrator("m", None)
    for x in _growing(40):
        cal.update(x, int(500_000 + 9 * x))  # beyond every bound
    assert cal.slope <= MAX_RATIO and abs(cal.intercept) <= 64_000
    assert cal.predict(1000) >= MIN_RATIO * 1000
    cal2 = Calibrator("m2", None)
    for x in _growing(40):
        cal2.update(x, max(1, int(x * 0.6 - 40_000)))  # a negative prefix far past the bound
    assert cal2.predict(2_000) >= MIN_RATIO * 2_000


def test_a_shift_mid_session_is_followed() -> None:
    cal = Calibrator("m", None)
    sizes = _growing(120)
    before = [(x, int(5_000 + 1.1 * x)) for x in sizes[:60]]
    after = [(x, int(30_000 + 1.25 * x)) for x in sizes[60:]]  # another tool set, another tokenizer
    _feed(cal, before)
    errs = _feed(cal, after)
    assert max(errs[:3]) > 0.1  # the shift is seen ...
    assert max(errs[3:15]) < 0.015  # ... and followed within SHIFT_RUN calls (the prefix moved: a new offset)
    # the new slope shows once the sizes differ (the next compaction's fall); from then on it is known
    assert max(errs[17:]) < 0.015
    assert abs(cal.intercept - 30_000) < 2_000 and abs(cal.slope - 1.25) < 0.04


def test_persists_the_fit_and_reads_the_ratio_only_form(tmp_path) -> None:
    path = tmp_path / "m.json"
    cal = Calibrator("m", path)
    for x in _growing(30):
        cal.update(x, int(8_000 + 1.15 * x))
    again = Calibrator("m", path)
    assert again.samples == 30 and again.pairs == cal.pairs
    assert (again.intercept, again.slope) == (cal.intercept, cal.slope) and again.ratio == cal.ratio
    data = json.loads(path.read_text())
    assert {"intercept", "slope", "pairs"} <= set(data)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"model": "m", "ratio": 1.4, "samples": 12}))
    legacy = Calibrator("m", old)
    assert legacy.ratio == 1.4 and legacy.apply(1000) == 1400 and legacy.samples == 12
