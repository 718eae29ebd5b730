"""Config layering, and the README's example config actually loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ctxagent.agent.config import load_config
from ctxagent.context.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_config_loads(tmp_path: Path) -> None:
    block = re.search(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "the README shows a config.toml example"
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text(block.group(1), encoding="utf-8")
    cfg = load_config(tmp_path, {}, env={})
    assert cfg.model and cfg.budget_profile == "coding" and cfg.synonyms == [["login", "auth", "登录"]]


def test_layers_user_repo_env_flags(tmp_path: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config").mkdir()
    (_isolated_home / "config" / "config.toml").write_text('model = "openai:user-model"\nspill_tokens = 111\nsynonyms = [["a", "b"]]\n')
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text('model = "openai:repo-model"\nprotect_turns = 3\nsynonyms = [["c", "d"]]\n')
    cfg = load_config(tmp_path, {}, env={})
    assert (cfg.model, cfg.spill_tokens, cfg.protect_turns) == ("openai:repo-model", 111, 3)
    assert cfg.synonyms == [["a", "b"], ["c", "d"]]
    cfg = load_config(tmp_path, {}, env={"CTXAGENT_MODEL": "anthropic:env-model", "OPENAI_API_KEY": "sk-x"})
    assert cfg.model == "anthropic:env-model" and cfg.openai_api_key == "sk-x"
    cfg = load_config(tmp_path, {"model": "openai:flag-model", "window": 50_000}, env={"CTXAGENT_MODEL": "anthropic:env-model"})
    assert cfg.model == "openai:flag-model" and cfg.window == 50_000


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text("modle = 'typo'\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(tmp_path, {}, env={})
    (tmp_path / ".ctxagent" / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path, {}, env={})
