"""/init's agent side (agent/instructions/draft.py): the survey and prompt, the model's answer as file
content, the template when there is none, and a write that never replaces a file silently."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ctxagent.agent.instructions.draft import (
    digest,
    draft_from_answer,
    init_draft,
    init_prompt,
    write_agents_md,
)
from ctxagent.context.errors import ToolError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("print('hi')\n")
    (r / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    return r


def test_the_prompt_carries_the_survey_and_the_rule(repo: Path) -> None:
    prompt = init_prompt(repo, "写中文")
    assert "Do not write or edit any file" in prompt and "The user adds: 写中文" in prompt
    assert "  src/app.py" in prompt and "Build files: pyproject.toml" in prompt and "pytest" in prompt


def test_an_answer_becomes_the_file_and_no_answer_the_template(repo: Path) -> None:
    assert draft_from_answer("```md\n# AGENTS.md\n\nBe brief.\n```\n") == "# AGENTS.md\n\nBe brief.\n"
    assert draft_from_answer("# A\n\n```sh\npytest\n```\n") == "# A\n\n```sh\npytest\n```\n"  # inner fences stay
    draft = init_draft(repo, "", False, why="the turn ended: error")
    assert draft.how == "template (the turn ended: error)" and "## Build and test" in draft.text
    assert "`src/` — " in draft.text and draft.existing is None


def test_a_write_never_replaces_a_file_silently(repo: Path) -> None:
    target = repo / "AGENTS.md"
    write_agents_md(repo, "# New\n", None)
    assert target.read_text() == "# New\n"
    with pytest.raises(ToolError, match="was not chosen to be overwritten"):
        write_agents_md(repo, "# Other\n", None)
    shown = init_draft(repo, "# Better\n", True)
    assert shown.existing == "# New"
    target.write_text("# Edited by hand meanwhile\n")
    with pytest.raises(ToolError, match="changed since the draft was shown"):
        write_agents_md(repo, shown.text, shown.replaces)
    write_agents_md(repo, "# Better\n", digest("# Edited by hand meanwhile"))
    assert target.read_text() == "# Better\n"


def test_a_linked_agents_md_is_not_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("mine\n")
    os.symlink(outside, repo / "AGENTS.md")
    with pytest.raises(ToolError, match="symbolic link"):
        write_agents_md(repo, "# x\n", None)
    assert outside.read_text() == "mine\n"
