"""Custom slash commands: loading from both folders, front matter, substitution, lookup, the loop's
@mentions in an expansion, and headless `-p "/name args"` through the real CLI and scripted server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ctxagent.agent.custom_commands import (
    expand_command as expand,
    expand_prompt,
    find_command,
    load_commands,
)
from ctxagent.context.floor.state_paths import user_config_dir

REVIEW = """---
description: Review a file for bugs
argument-hint: FILE [focus]
---
Review @$1 for bugs, focusing on $2.
Everything typed: $ARGUMENTS
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    return r


def project_command(repo: Path, name: str, text: str) -> Path:
    folder = repo / ".ctxagent" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def user_command(name: str, text: str) -> Path:
    folder = user_config_dir() / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_both_folders_front_matter_and_substitution(repo: Path) -> None:
    project_command(repo, "review", REVIEW)
    user_command("审查", "请用中文审查 $ARGUMENTS")
    user_command("plain", "Summarize the repository.")
    loaded = load_commands(repo)
    assert [(c.scope, c.name) for c in loaded.commands] == [("user", "plain"), ("user", "审查"), ("project", "review")]
    assert loaded.problems == []
    review = loaded.commands[-1]
    assert review.description == "Review a file for bugs" and review.argument_hint == "FILE [focus]"
    assert expand(review, 'calc.py "off by one"') == (
        "Review @calc.py for bugs, focusing on off by one.\nEverything typed: calc.py \"off by one\"")
    assert expand(review, "") == "Review @ for bugs, focusing on .\nEverything typed:"  # missing ones are empty
    zh = find_command(loaded.commands, "审查")
    assert zh is not None and expand(zh, "登录模块") == "请用中文审查 登录模块"
    plain = find_command(loaded.commands, "plain")
    assert plain is not None and expand(plain, "briefly") == "Summarize the repository.\n\nbriefly"  # appended
    assert expand(plain, "") == "Summarize the repository."


def test_positional_arguments_are_single_digits_and_quotes_may_be_unbalanced(repo: Path) -> None:
    project_command(repo, "p", "a=$1 b=$2 ten=$10 nine=$9")
    cmd = find_command(load_commands(repo).commands, "p")
    assert cmd is not None
    assert expand(cmd, "x y") == "a=x b=y ten=$10 nine="
    assert expand(cmd, "it's fine") == "a=it's b=fine ten=$10 nine="  # an unclosed quote: words as typed


def test_a_bare_name_is_the_users_and_each_scope_is_reachable(repo: Path) -> None:
    project_command(repo, "fix", "project fix $ARGUMENTS")
    user_command("fix", "user fix $ARGUMENTS")
    commands = load_commands(repo).commands
    assert [expand(c, "it") for c in filter(None, (find_command(commands, n) for n in ("fix", "project:fix", "user:fix")))] == [
        "user fix it", "project fix it", "user fix it"]
    assert find_command(commands, "user:nope") is None and find_command(commands, "elsewhere:fix") is None


def test_files_that_are_not_commands_are_skipped_and_said(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    folder = project_command(repo, "ok", "fine").parent
    os.symlink(secret, folder / "link.md")
    (folder / "bad name.md").write_text("x")
    (folder / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "big.md").write_text("x" * (64 * 1024 + 1))
    (folder / "notes.txt").write_text("not a command")
    loaded = load_commands(repo)
    assert [c.name for c in loaded.commands] == ["ok"]
    said = "\n".join(loaded.problems)
    assert "link.md: not a regular file" in said and "bad name.md" in said
    assert "latin1.md: not UTF-8" in said and "big.md: larger than 64 KB" in said and "notes.txt" not in said


def test_front_matter_edge_cases(repo: Path) -> None:
    project_command(repo, "q", "---\ndescription: \"quoted: with colon\"\nmodel: x\n---\nbody\n")
    project_command(repo, "nofm", "--- not front matter\nbody")
    commands = load_commands(repo).commands
    q, nofm = find_command(commands, "q"), find_command(commands, "nofm")
    assert q is not None and q.description == "quoted: with colon" and q.template == "body\n"
    assert nofm is not None and nofm.description == "" and nofm.template.startswith("--- not front matter")


def test_expand_prompt_is_what_headless_uses(repo: Path) -> None:
    project_command(repo, "review", REVIEW)
    found = expand_prompt(repo, "／review calc.py speed")  # a Chinese input method's slash
    assert found is not None and found[0].name == "review" and "Review @calc.py" in found[1]
    assert (found[2].name, found[2].file, found[2].typed) == ("project:review", ".ctxagent/commands/review.md", "calc.py speed")
    assert expand_prompt(repo, "//review calc.py") is None and expand_prompt(repo, "/unknown x") is None
    assert expand_prompt(repo, "review calc.py") is None


def test_an_expansion_attaches_its_mentions_through_the_loop(make_agent, work_repo: Path) -> None:  # type: ignore[no-untyped-def]
    project_command(work_repo, "look", "Read @$1 and say what it holds.")
    agent, _, provider = make_agent([{"text": "it holds alpha"}])
    found = expand_prompt(work_repo, "/look notes.txt")
    assert found is not None
    assert agent.run_turn(found[1]).stop_reason == "end_turn"
    reads = [e.tool_result for e in agent.session.log.of_kind("tool_result")]
    assert [r.name for r in reads] == ["read_file"] and "alpha" in reads[0].content
    assert agent.session.log.of_kind("user")[0].user.text == "Read @notes.txt and say what it holds."
    assert "alpha" in json.dumps(provider.requests[-1]["messages"], ensure_ascii=False)


def test_the_readme_template_example_expands(repo: Path) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```markdown\n(---\n.*?)```", readme, re.S)
    assert block is not None
    project_command(repo, "review", block.group(1))
    cmd = find_command(load_commands(repo).commands, "review")
    assert cmd is not None and cmd.description == "Review a file for bugs" and cmd.argument_hint == "FILE [focus]"
    assert expand(cmd, 'calc.py "off by one"').startswith("Review @calc.py for bugs, focusing on off by one.")


GEMINI = '''description = "Explain a file 解释文件"
prompt = """
Explain @{calc.py} to a newcomer. Focus: {{args}}
"""
'''


def test_toml_commands_in_both_folders_in_gemini_clis_shape(repo: Path) -> None:
    project_command(repo, "explain", "unused").unlink()  # the project folder exists
    (repo / ".ctxagent" / "commands" / "explain.toml").write_text(GEMINI, encoding="utf-8")
    folder = user_config_dir() / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "总结.toml").write_text('prompt = "用三句话总结这个仓库。"\n', encoding="utf-8")
    (folder / "dollar.toml").write_text('prompt = "kept as typed: $ARGUMENTS $1 !{rm -rf .}"\n', encoding="utf-8")
    loaded = load_commands(repo)
    assert [(c.scope, c.name, c.syntax) for c in loaded.commands] == [
        ("user", "dollar", "toml"), ("user", "总结", "toml"), ("project", "explain", "toml")]
    assert loaded.problems == []
    explain = find_command(loaded.commands, "explain")
    assert explain is not None and explain.description == "Explain a file 解释文件"
    assert expand(explain, "the sign bug") == "Explain @calc.py to a newcomer. Focus: the sign bug"
    assert expand(explain, "") == "Explain @calc.py to a newcomer. Focus:"
    summary = find_command(loaded.commands, "总结")
    assert summary is not None and expand(summary, "简短") == "用三句话总结这个仓库。\n\n简短"  # no {{args}}: appended
    assert expand(summary, "") == "用三句话总结这个仓库。"
    dollar = find_command(loaded.commands, "dollar")
    assert dollar is not None  # the .md placeholders mean nothing in a .toml, and !{…} is never run
    assert expand(dollar, "x") == "kept as typed: $ARGUMENTS $1 !{rm -rf .}\n\nx"


def test_bad_toml_commands_are_skipped_and_said(repo: Path) -> None:
    folder = project_command(repo, "dup", "the markdown one $ARGUMENTS").parent
    (folder / "dup.toml").write_text('prompt = "the toml one"\n')
    (folder / "broken.toml").write_text('prompt = "unclosed\n')
    (folder / "noprompt.toml").write_text('description = "no prompt"\n')
    (folder / "wrongtype.toml").write_text('prompt = "p"\ndescription = 3\n')
    (folder / "config.toml.bak").write_text("x")
    loaded = load_commands(repo)
    assert [(c.name, c.syntax) for c in loaded.commands] == [("dup", "md")]
    said = "\n".join(loaded.problems)
    assert "dup.toml: dup.md defines /dup too" in said and "broken.toml: not valid TOML" in said
    assert "noprompt.toml: a .toml command needs a `prompt` string" in said
    assert "wrongtype.toml: `description` must be a string" in said and "bak" not in said


def test_a_toml_command_attaches_its_mentions_through_the_loop(make_agent, work_repo: Path) -> None:  # type: ignore[no-untyped-def]
    folder = work_repo / ".ctxagent" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "look.toml").write_text('prompt = "Read @{notes.txt} and say {{args}}."\n', encoding="utf-8")
    agent, _, provider = make_agent([{"text": "it holds alpha"}])
    found = expand_prompt(work_repo, "/look what it holds")
    assert found is not None and found[1] == "Read @notes.txt and say what it holds."
    assert agent.run_turn(found[1]).stop_reason == "end_turn"
    assert [e.tool_result.name for e in agent.session.log.of_kind("tool_result")] == ["read_file"]
    assert "alpha" in json.dumps(provider.requests[-1]["messages"], ensure_ascii=False)


def test_the_readme_toml_command_example_expands(repo: Path) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "commands/explain.toml" in b)
    folder = project_command(repo, "x", "x").parent
    (folder / "explain.toml").write_text(block, encoding="utf-8")
    cmd = find_command(load_commands(repo).commands, "explain")
    assert cmd is not None and cmd.syntax == "toml" and cmd.description == "Explain a file to a newcomer"
    assert expand(cmd, "the sign") == "Explain @calc.py to a newcomer. Focus: the sign"
