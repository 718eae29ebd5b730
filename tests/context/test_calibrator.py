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
