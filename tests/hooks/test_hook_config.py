"""Where hooks come from: the user's config always; a repository's only once it is trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.config import load_config
from ctxagent.agent.trust import needs_prompt, trust_repo
from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.state_paths import user_config_dir

from .conftest import seen


def _write_user(text: str) -> None:
    d = user_config_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(text, encoding="utf-8")


def _write_repo(repo: Path, text: str) -> None:
    (repo / ".ctxagent").mkdir(exist_ok=True)
    (repo / ".ctxagent" / "config.toml").write_text(text, encoding="utf-8")


def test_a_repositorys_hooks_are_ignored_until_it_is_trusted_and_then_run_after_the_users(
        repo: Path, hook_script, hooked_agent) -> None:  # type: ignore[no-untyped-def]
    mine, theirs = hook_script("mine", ""), hook_script("theirs", "")
    _write_user(f"[[hooks.stop]]\ncommand = {mine!r}\ntimeout = 5\n".replace("'", '"'))
    _write_repo(repo, f"[hooks.stop]\ncommand = {theirs!r}\n".replace("'", '"'))
    cfg = load_config(repo)
    assert [h.command for h in cfg.hooks["stop"]] == [mine]
    assert [i.key for i in cfg.ignored_keys] == ["hooks"] and needs_prompt(repo, cfg.ignored_keys)
    agent, _, _ = hooked_agent([{"text": "a"}, {"text": "b"}], {k: [h.model_dump() for h in v] for k, v in cfg.hooks.items()})
    agent.run_turn("go")
    assert len(seen(repo, "mine")) == 1 and seen(repo, "theirs") == []

    trust_repo(repo)
    trusted = load_config(repo)
    assert [h.command for h in trusted.hooks["stop"]] == [mine, theirs] and trusted.ignored_keys == []
    assert trusted.hooks["stop"][0].timeout == 5 and trusted.hooks["stop"][1].timeout == 30


def test_an_empty_hooks_table_from_a_repository_is_harmless(repo: Path) -> None:
    _write_repo(repo, "hooks = {}\n")
    assert load_config(repo).ignored_keys == []


@pytest.mark.parametrize(("text", "needle"), [
    ('[hooks.on_save]\ncommand = "x"\n', "hooks.on_save"),
    ('[hooks.stop]\ncommand = "x"\ntimeout = 0\n', "timeout"),
    ('[hooks.stop]\ncommand = "x"\nmatch = "y"\n', "match"),
    ('[hooks.context_threshold]\ncommand = "x"\nat = 1.5\n', "at"),
    ('[hooks]\nstop = "x"\n', "hooks.stop"),
], ids=["unknown-event", "zero-timeout", "unknown-field", "at-above-1", "not-a-table"])
def test_bad_hook_config_names_the_file_and_the_key(text: str, needle: str) -> None:
    _write_user(text)
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert "config.toml" in str(err.value) and needle in str(err.value)


def test_the_readme_hooks_example_loads_as_the_users_config() -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[[hooks.pre_tool]]" in b)
    _write_user(block)
    cfg = load_config(None)
    (pre,), (threshold,) = cfg.hooks["pre_tool"], cfg.hooks["context_threshold"]
    assert pre.tools == ["write_file", "edit_file"] and pre.timeout == 5 and isinstance(pre.command, list)
    assert threshold.at == 0.6 and isinstance(threshold.command, str)
