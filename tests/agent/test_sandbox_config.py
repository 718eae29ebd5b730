"""The sandbox as configuration: which layer may set which value, the flag, and the factory's wiring.

A repository's config can make the sandbox stricter, never take it away: `sandbox = "off"`,
`sandbox_network = true`, `sandbox_unix_sockets = true` and extra writable paths are dropped from it even once it is trusted, and
only the user's own config or a flag gives them. The wiring is proved with real commands: the
factory-made agent's `!command` and its configured test command run under bubblewrap.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import threading
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxagent.agent.config import SANDBOX_MODES, Config, flags_from_args, load_config, origin_of
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.trust import describe_ignored, needs_prompt, trust_repo
from ctxagent.agent.updates import AgentEvent, ToolFinished
from ctxagent.context.errors import ConfigError, SandboxUnavailableError
from ctxagent.tools.sandbox import DEFAULT_POLICY, MODES, SandboxPolicy, find_bwrap
from ctxagent.tools.sandbox.policy import HIDDEN_BY_DEFAULT
from ctxagent.tui.cli.main import SANDBOX_MODES as FLAG_MODES, build_parser


def _files(root: Path, home: Path, *, user: str = "", repo: str = "") -> None:
    if user:
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text(user, encoding="utf-8")
    if repo:
        (root / ".ctxagent").mkdir(exist_ok=True)
        (root / ".ctxagent" / "config.toml").write_text(repo, encoding="utf-8")


TAKE_AWAY = 'sandbox = "off"\nsandbox_network = true\nsandbox_writable = ["~/.cache", "/"]\nsandbox_unix_sockets = true\n'


def test_the_three_lists_of_modes_agree() -> None:
    assert SANDBOX_MODES == MODES == FLAG_MODES
    assert typing.get_args(Config.model_fields["sandbox"].annotation) == MODES
    assert Config().sandbox == DEFAULT_POLICY.mode and SandboxPolicy.from_config(Config()) == DEFAULT_POLICY


@pytest.mark.parametrize("trusted", [False, True])
def test_a_repository_cannot_take_the_sandbox_away(tmp_path: Path, _isolated_home: Path, trusted: bool) -> None:
    _files(tmp_path, _isolated_home, repo=TAKE_AWAY + 'max_steps = 7\n')
    if trusted:
        trust_repo(tmp_path)
    cfg = load_config(tmp_path, {}, env={})
    assert SandboxPolicy.from_config(cfg) == DEFAULT_POLICY and cfg.max_steps == 7  # the rest of the file applies
    assert {i.key: i.user_only for i in cfg.ignored_keys} == {"sandbox": True, "sandbox_network": True,
                                                              "sandbox_writable": True, "sandbox_unix_sockets": True}
    assert not needs_prompt(tmp_path, cfg.ignored_keys)  # trusting it would not change them: nothing to ask
    text = describe_ignored(cfg.ignored_keys)
    assert "no repository may set, trusted or not" in text and "--sandbox off" in text and "ctxagent trust" not in text
    assert str(_isolated_home / "config" / "config.toml") in text
    assert all(origin_of(cfg, k) == "the default"
               for k in ("sandbox", "sandbox_network", "sandbox_writable", "sandbox_unix_sockets"))


def test_the_users_config_and_the_flags_can(tmp_path: Path, _isolated_home: Path) -> None:
    _files(tmp_path, _isolated_home, user=TAKE_AWAY, repo='sandbox = "read-only"\n')
    trust_repo(tmp_path)
    cfg = load_config(tmp_path, {}, env={})
    policy = SandboxPolicy.from_config(cfg)
    assert (policy.mode, policy.network, policy.writable, policy.unix_sockets) == (
        "read-only", True, ("~/.cache", "/"), True)  # the stricter mode wins
    user_file = str(_isolated_home / "config" / "config.toml")
    assert origin_of(cfg, "sandbox") == str(tmp_path / ".ctxagent" / "config.toml")
    assert origin_of(cfg, "sandbox_network") == user_file
    cfg = load_config(tmp_path, flags_from_args(build_parser([]).parse_args(["--sandbox", "off", "--sandbox-network"])),
                      env={})
    assert (cfg.sandbox, cfg.sandbox_network, origin_of(cfg, "sandbox")) == ("off", True, "flags")
    (_isolated_home / "config" / "config.toml").unlink()
    cfg = load_config(tmp_path, flags_from_args(build_parser([]).parse_args([])), env={})
    assert (cfg.sandbox, cfg.sandbox_network) == ("read-only", False)  # without the flags, the repository's


def test_harmless_values_apply_from_an_untrusted_repository(tmp_path: Path, _isolated_home: Path) -> None:
    _files(tmp_path, _isolated_home, user='sandbox_network = true\n',
           repo='sandbox = "read-only"\nsandbox_network = false\nsandbox_writable = []\n')
    cfg = load_config(tmp_path, {}, env={})
    assert (cfg.sandbox, cfg.sandbox_network, cfg.sandbox_writable, cfg.ignored_keys) == ("read-only", False, [], [])


def test_other_sandbox_keys_wait_for_trust(tmp_path: Path, _isolated_home: Path) -> None:
    _files(tmp_path, _isolated_home, user='sandbox_hidden = ["~/.ssh", "~/mine"]\n',
           repo='sandbox_env = ["DATABASE_HOST"]\nsandbox_hidden = ["~/.ssh", "~/.repo-cache"]\n'
                'sandbox_network = 0\nsandbox = "bogus"\n')
    cfg = load_config(tmp_path, {}, env={})
    assert sorted(i.key for i in cfg.ignored_keys if not i.user_only) == [
        "sandbox", "sandbox_env", "sandbox_hidden", "sandbox_network"]
    assert needs_prompt(tmp_path, cfg.ignored_keys) and cfg.sandbox_env == [] and cfg.sandbox_hidden == ["~/.ssh", "~/mine"]
    trust_repo(tmp_path)
    with pytest.raises(ConfigError) as err:  # trusted, its bad values are errors naming the file and the key
        load_config(tmp_path, {}, env={})
    assert str(tmp_path / ".ctxagent" / "config.toml") in str(err.value) and "sandbox:" in str(err.value)
    assert "sandbox_network: input should be a valid boolean" in str(err.value)
    (tmp_path / ".ctxagent" / "config.toml").write_text('sandbox_env = ["DATABASE_HOST"]\nsandbox_hidden = ["~/.repo-cache"]\n')
    assert load_config(tmp_path, {}, env={}).sandbox_env == []  # trust is of the bytes: new ones wait for it
    trust_repo(tmp_path)
    cfg = load_config(tmp_path, {}, env={})
    # the repository's hidden list adds to the user's: it never shows what the user hides
    assert cfg.sandbox_env == ["DATABASE_HOST"] and cfg.sandbox_hidden == ["~/.ssh", "~/mine", "~/.repo-cache"]
    (_isolated_home / "config" / "config.toml").unlink()
    assert load_config(tmp_path, {}, env={}).sandbox_hidden == [*HIDDEN_BY_DEFAULT, "~/.repo-cache"]


@pytest.mark.parametrize(("text", "where"), [
    ('sandbox = "none"\n', "sandbox: input should be 'workspace-write', 'read-only' or 'off' (got 'none')"),
    ('sandbox_network = "yes"\n', "sandbox_network: input should be a valid boolean"),
    ('sandbox_env = "HOME"\n', "sandbox_env: input should be a valid list"),
    ('sandbox_writable = [1]\n', "sandbox_writable.0: input should be a valid string"),
])
def test_bad_sandbox_values_name_the_file_and_the_key(tmp_path: Path, _isolated_home: Path, text: str, where: str) -> None:
    _files(tmp_path, _isolated_home, user=text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, {}, env={})
    assert str(_isolated_home / "config" / "config.toml") in str(err.value) and where in str(err.value), str(err.value)


def test_the_flag_refuses_an_unknown_mode(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser([]).parse_args(["--sandbox", "none"])
    assert "--sandbox: invalid choice: 'none'" in capsys.readouterr().err
    assert flags_from_args(argparse.Namespace())["sandbox"] is None  # not given: no layer of its own


# --- the factory's agent: !command and the configured test command run sandboxed ---------------------


@pytest.fixture
def sandbox_works() -> None:
    try:
        find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def outside(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A path outside the repository and outside /tmp (a sandboxed command has a private /tmp, so a
    write there "works" and vanishes): in $HOME, removed afterwards."""
    path = Path.home() / f".ctxagent-test-{os.getpid()}-{request.node.name}".replace("/", "_")
    yield path
    path.unlink(missing_ok=True)


def _agent(repo: Path, script: list[dict[str, object]], **flags: object) -> tuple[object, list[AgentEvent]]:
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    cfg = load_config(repo, {"model": f"scripted:{path}", "permission_mode": "yolo", "memory": False, **flags}, env={})
    events: list[AgentEvent] = []
    return create_agent(open_session(repo, cfg), on_event=events.append), events


def _results(events: list[AgentEvent]) -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished)]


@pytest.mark.usefixtures("sandbox_works")
@pytest.mark.parametrize("mode", ["workspace-write", "off"])
def test_bang_command_runs_in_the_configured_sandbox(repo: Path, outside: Path, _isolated_home: Path, mode: str) -> None:
    _files(repo, _isolated_home, user=f'sandbox = "{mode}"\n')
    agent, events = _agent(repo, [])
    done = agent.run_command(f"echo 写 > {outside}; echo inside > in.txt; echo end")  # type: ignore[attr-defined]
    assert done.stop_reason == "end_turn"
    [result] = _results(events)
    assert "end" in result.content and result.meta["sandbox"] == mode and (repo / "in.txt").read_text() == "inside\n"
    if mode == "off":
        assert outside.read_text() == "写\n" and "Read-only file system" not in result.content
    else:
        assert not outside.exists() and "Read-only file system" in result.content, result.content
    agent.session.log.close()  # type: ignore[attr-defined]


@pytest.mark.usefixtures("sandbox_works")
def test_the_configured_test_command_runs_sandboxed(repo: Path, outside: Path, _isolated_home: Path) -> None:
    _files(repo, _isolated_home, user=f"test_command = \"touch {outside}; echo '1 passed, 0 failed'\"\n")
    agent, events = _agent(repo, [{"tool_calls": [{"name": "run_tests", "arguments": {}}]}, {"text": "done"}])
    agent.run_turn("run the tests", threading.Event())  # type: ignore[attr-defined]
    [result] = _results(events)
    assert result.content.startswith("tests: 1 passed, 0 failed") and result.meta["sandbox"] == "workspace-write"
    assert "Read-only file system" in result.content and not outside.exists(), result.content
    agent.session.log.close()  # type: ignore[attr-defined]


def _failing_bwrap(tmp_path: Path) -> str:
    fake = tmp_path / "fake-bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


def test_where_bwrap_cannot_run_commands_are_refused_naming_the_setting(repo: Path, tmp_path: Path) -> None:
    marker = repo / "ran.txt"
    agent, events = _agent(repo, [{"tool_calls": [{"name": "run_tests", "arguments": {"command": f"touch {marker}"}}]},
                                  {"text": "done"}])
    config = agent.parts.tool_config  # type: ignore[attr-defined]
    assert config["sandbox"] == DEFAULT_POLICY  # what the factory wired; the machine is simulated below
    config["sandbox"] = dataclasses.replace(config["sandbox"], bwrap=_failing_bwrap(tmp_path))
    agent.run_command(f"touch {marker}")  # type: ignore[attr-defined]
    agent.run_turn("run the tests", threading.Event())  # type: ignore[attr-defined]
    results = _results(events)
    assert [r.name for r in results] == ["shell", "run_tests"]
    for r in results:
        assert r.is_error and 'sandbox = "off"' in r.content and "--sandbox off" in r.content, r.content
        assert "No permissions to create new namespace" in r.content
    assert not marker.exists()
    agent.session.log.close()  # type: ignore[attr-defined]


def test_origins_name_every_layer(tmp_path: Path, _isolated_home: Path) -> None:
    _files(tmp_path, _isolated_home, user="max_steps = 9\n", repo="spill_tokens = 10\n")
    cfg = load_config(tmp_path, {"window": 50_000}, env={"OPENAI_API_KEY": "sk-x" + "0" * 20})
    assert cfg.origins == {"max_steps": str(_isolated_home / "config" / "config.toml"),
                           "spill_tokens": str(tmp_path / ".ctxagent" / "config.toml"),
                           "openai_api_key": "environment", "window": "flags"}
