"""Finding a repository's Claude Code sessions where Claude Code keeps them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ctxagent.tui.lab.replay.projects import (
    NAME_CAP,
    config_dir,
    discover,
    encode_cwd,
    project_folder,
    sessions_in,
)

# Claude Code's rule as its bundle spells it (projects folder name of a cwd), run by node when there is one
JS_RULE = r"""
const enc = (A) => { A = A.normalize("NFC"); const q = A.replace(/[^a-zA-Z0-9]/g, "-");
  if (q.length <= 200) return q; let K = 0;
  for (let i = 0; i < A.length; i++) { K = (K << 5) - K + A.charCodeAt(i); K |= 0; }
  return `${q.slice(0, 200)}-${Math.abs(K).toString(36)}`; };
const paths = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(paths.map(enc)));
"""

PATHS = ["/home/me/my_app", "/Users/user.name/repos/app", "/home/u/Open Source/x", "C:\\Users\\x\\app",
         "/home/me/.worktrees/spec-rl", "/home/用户/项目/资料", "/home/me/😀/x", "/home/me/cafe\u0301",
         "/srv/" + "/".join(["deeply-nested_folder.v2"] * 12), "/srv/" + "/".join(["ünïcödé"] * 40)]


def test_every_character_but_ascii_letters_and_digits_becomes_one_dash() -> None:
    assert encode_cwd("/home/me/my_app") == "-home-me-my-app"
    assert encode_cwd("/Users/user.name/repos/app") == "-Users-user-name-repos-app"
    assert encode_cwd("C:\\Users\\x") == "C--Users-x"  # runs are not collapsed
    assert encode_cwd("/home/用户") == "-home---"  # one dash per UTF-16 unit
    assert encode_cwd("/a/😀") == "-a---"  # an astral character is two units
    assert encode_cwd("/a/cafe\u0301") == encode_cwd("/a/caf\u00e9") == "-a-caf-"  # NFC first


def test_a_long_name_is_cut_at_200_and_given_a_hash() -> None:
    long = "/srv/" + "x" * 300
    name = encode_cwd(long)
    assert len(name) > NAME_CAP and name[:NAME_CAP] == ("-srv-" + "x" * 300)[:NAME_CAP] and name[NAME_CAP] == "-"
    assert encode_cwd(long + "y") != name  # the hash tells apart paths with the same first 200 characters


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: Claude Code's rule cannot be run")
def test_the_rule_matches_claude_codes_own_javascript() -> None:
    out = subprocess.run(["node", "-e", JS_RULE], input=json.dumps(PATHS), capture_output=True, text=True, check=True)
    assert [encode_cwd(p) for p in PATHS] == json.loads(out.stdout)


def test_the_config_folder_is_claude_config_dir_else_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert config_dir() == tmp_path / "home" / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert config_dir() == tmp_path / "elsewhere"


def _transcript(path: Path, cwd: str, session: str = "s") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "user", "cwd": cwd, "sessionId": session,
                                "message": {"role": "user", "content": "hi"}}) + "\n", encoding="utf-8")


def test_the_repository_root_is_tried_when_the_cwd_has_no_folder(tmp_path: Path) -> None:
    repo = tmp_path / "my_repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    root = tmp_path / "projects"
    _transcript(root / encode_cwd(repo) / "a.jsonl", str(repo))
    found, looked = project_folder(repo / "src", root)
    assert found == root / encode_cwd(repo)
    assert looked == [root / encode_cwd(repo / "src"), root / encode_cwd(repo)]


def test_a_long_name_written_with_another_hash_is_found_by_its_prefix_and_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / ("n" * 220)
    root = tmp_path / "projects"
    other = tmp_path / ("n" * 220 + "z")  # the same first 200 characters, another project
    _transcript(root / (encode_cwd(other)[:NAME_CAP] + "-aaaa") / "a.jsonl", str(other))
    _transcript(root / (encode_cwd(cwd)[:NAME_CAP] + "-zzzz") / "b.jsonl", str(cwd))
    found, _ = project_folder(cwd, root)
    assert found == root / (encode_cwd(cwd)[:NAME_CAP] + "-zzzz")


def test_a_session_is_followed_by_its_subagents_and_compaction_calls_are_not_subagents(tmp_path: Path) -> None:
    folder = tmp_path / "-p"
    _transcript(folder / "s1.jsonl", "/p", "s1")
    _transcript(folder / "s1" / "subagents" / "agent-a1.jsonl", "/p", "s1")
    _transcript(folder / "s1" / "subagents" / "agent-acompact-c1.jsonl", "/p", "s1")
    _transcript(folder / "s2.jsonl", "/p", "s2")
    _transcript(folder / "agent-old.jsonl", "/p", "s1")  # an older version's subagent, beside the sessions
    _transcript(folder / "agent-orphan.jsonl", "/p", "gone")
    got = [(s.session, s.parent) for s in sessions_in(folder)]
    assert got == [("s1", None), ("agent-a1", "s1"), ("agent-old", "s1"), ("s2", None),
                   ("agent-orphan", "gone")]


def test_discover_takes_a_file_a_project_or_every_project(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    _transcript(root / "-a" / "s1.jsonl", "/a", "s1")
    _transcript(root / "-a" / "s1" / "subagents" / "agent-x.jsonl", "/a", "s1")
    _transcript(root / "-b" / "s2.jsonl", "/b", "s2")
    one, _ = discover(root / "-a" / "s1.jsonl", False, tmp_path)
    assert [(f.session, f.parent) for f in one] == [("s1", None), ("agent-x", "s1")]
    project, _ = discover(root / "-a", False, tmp_path)
    assert [f.session for f in project] == ["s1", "agent-x"]
    every, _ = discover(root, False, tmp_path)  # a folder of project folders: all of them
    assert sorted(f.project for f in every) == ["-a", "-a", "-b"]
    nothing, looked = discover(tmp_path / "missing", False, tmp_path)
    assert nothing == [] and looked == [tmp_path / "missing"]
