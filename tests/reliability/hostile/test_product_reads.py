"""Family: the small repository files the product reads itself, not through a tool — its project
config, `.mcp.json`, a test runner's config (test-command detection) and `.git/info/exclude` (the
shadow checkpoints). Each is repository content, so each may be a FIFO (an unguarded read blocks for
ever), a device (`/dev/zero` never ends), a link out of the repository, or a hard link to a secret.
Every reader must return (a clear error or nothing) without blocking, and never use what lies outside.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from corpus import SECRET, Victim, plain_repo
from ctxagent.agent.checkpoints.shadow_git import ShadowRepo
from ctxagent.agent.config import load_config
from ctxagent.agent.mcp.config import read_mcp_json
from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.state_paths import ensure_state_dir
from ctxagent.tools.tests_runner import detect_test_command

pytestmark = pytest.mark.timeout(60)  # a read that blocks is the failure: it must not hang the suite

HAZARDS = ("fifo", "device", "link-out", "hard-link")


def _plant(v: Victim, at: Path, hazard: str, outside_text: str) -> None:
    """Put `hazard` at `at`; the outside file holds `outside_text` (and the secret)."""
    outside = v.home / f"outside-{at.name}"
    outside.write_text(outside_text + "\n# " + SECRET + "\n")
    at.parent.mkdir(parents=True, exist_ok=True)
    if hazard == "fifo":
        os.mkfifo(at)
    elif hazard == "device":
        try:
            os.mknod(at, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
        except (PermissionError, OSError):
            at.symlink_to("/dev/zero")
    elif hazard == "link-out":
        at.symlink_to(outside)
    else:
        os.link(outside, at)


@pytest.mark.parametrize("hazard", HAZARDS)
def test_project_config_is_refused_clearly(victim: Victim, hazard: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXAGENT_HOME", str(victim.home / "ctxhome"))
    repo = plain_repo(victim)
    state = ensure_state_dir(repo)
    _plant(victim, state / "config.toml", hazard, 'max_steps = 7')
    with pytest.raises(ConfigError, match="config.toml"):
        load_config(repo)


@pytest.mark.parametrize("hazard", HAZARDS)
def test_mcp_json_is_refused_clearly(victim: Victim, hazard: str) -> None:
    repo = plain_repo(victim)
    _plant(victim, repo / ".mcp.json", hazard, '{"mcpServers": {"planted": {"command": "/bin/sh"}}}')
    with pytest.raises(ConfigError, match=r"\.mcp\.json"):
        read_mcp_json(repo)


RUNNER_FILES: dict[str, str] = {
    "pyproject.toml": "[tool.pytest.ini_options]",
    "setup.cfg": "[tool:pytest]",
    "tox.ini": "[pytest]",
    "package.json": '{"scripts": {"test": "PLANTED"}}',
}


@pytest.mark.parametrize("hazard", HAZARDS)
@pytest.mark.parametrize("name", sorted(RUNNER_FILES))
def test_test_command_detection_ignores_what_is_not_a_plain_file(victim: Victim, name: str, hazard: str) -> None:
    repo = plain_repo(victim)
    _plant(victim, repo / name, hazard, RUNNER_FILES[name])
    assert detect_test_command(repo) is None  # the outside file's marker was not read


def test_test_command_detection_still_reads_plain_files(victim: Victim) -> None:
    repo = plain_repo(victim)
    for name, text in RUNNER_FILES.items():
        (repo / name).write_text(text + "\n")
        assert detect_test_command(repo) is not None, name
        (repo / name).unlink()


@pytest.mark.parametrize("hazard", HAZARDS)
def test_checkpoint_excludes_skip_a_planted_info_exclude(victim: Victim, hazard: str) -> None:
    repo = plain_repo(victim)
    exclude = repo / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    _plant(victim, exclude, hazard, "PLANTED-EXCLUDE-LINE")
    shadow = ShadowRepo(repo, ensure_state_dir(repo))
    shadow.ensure()
    assert shadow.scan()  # a snapshot's tree: the excludes were synced on the way
    written = (shadow.git_dir / "info" / "exclude").read_text()
    assert "PLANTED-EXCLUDE-LINE" not in written and SECRET not in written

