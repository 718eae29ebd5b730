"""Snapshots into the shadow repository: what goes in, what stays out, and the user's git untouched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cp_helpers import git, make_loop, user_git_state, write
from ctxagent.agent.checkpoints.store import Checkpoints
from ctxagent.context.floor.state_paths import ensure_state_dir


def shadow_files(cps: Checkpoints, commit: str) -> dict[str, str]:
    return {p: e.mode for p, e in cps.shadow.tree_entries(commit).items()}


def test_snapshot_holds_tracked_and_untracked_but_not_ignored_files(repo: Path) -> None:
    write(repo, "src/app.py", "print('dirty')\n")  # dirty tracked
    write(repo, "notes/待办.md", "中文笔记\n")  # untracked, Chinese name and text
    write(repo, "debug.log", "ignored by *.log\n")
    write(repo, "build/out.bin", b"\x00ignored folder")
    write(repo, "secret.env", "excluded by info/exclude\n")
    (repo / ".git" / "info" / "exclude").write_text("secret.env\n", encoding="utf-8")
    write(repo, "sub/.gitignore", "local-only.txt\n")
    write(repo, "sub/local-only.txt", "ignored by a nested .gitignore\n")
    write(repo, "sub/kept.txt", "kept\n")
    write(repo, "data.bin", bytes(range(256)) * 4)
    cps = Checkpoints(repo, repo / ".ctxagent")
    commit = cps.snapshot("s1", 1, 0)
    files = shadow_files(cps, commit)
    assert set(files) == {
        ".gitignore", "README.md", "run.sh", "doomed.txt", "src/app.py", "notes/待办.md",
        "sub/.gitignore", "sub/kept.txt", "data.bin",
    }
    assert files["run.sh"] == "100755" and files["src/app.py"] == "100644"
    entries = cps.shadow.tree_entries(commit)
    assert cps.shadow.blob(entries["src/app.py"].sha) == b"print('dirty')\n"
    assert cps.shadow.blob(entries["data.bin"].sha) == bytes(range(256)) * 4
    assert cps.shadow.blob(entries["notes/待办.md"].sha).decode("utf-8") == "中文笔记\n"
    # The snapshot is pinned by a ref per session and turn, so gc can never drop it.
    assert cps.shadow.resolve("refs/ctxagent/s1/1/pre") == commit


def test_state_folder_and_git_dir_never_enter_a_snapshot(repo: Path) -> None:
    state = ensure_state_dir(repo)  # ctxagent's own folder, with what a session leaves in it
    write(repo, ".ctxagent/sessions/x.jsonl", "{}\n")
    write(repo, ".ctxagent/spill/abc.txt", "spilled output\n")
    # Even a user .gitignore that re-includes the state folder must not pull it in.
    write(repo, ".gitignore", "*.log\nbuild/\n!.ctxagent/\n")
    cps = Checkpoints(repo, state)
    files = shadow_files(cps, cps.snapshot("s1", 1, 0))
    assert not [f for f in files if f.startswith((".ctxagent", ".git/"))]
    assert ".gitignore" in files


def test_user_git_state_is_identical_after_snapshots_and_rewind(repo: Path) -> None:
    write(repo, "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")  # a staged change: the user's index differs from HEAD
    write(repo, "README.md", "# demo\nunstaged edit\n")
    write(repo, "untracked.txt", "new\n")
    write(repo, "debug.log", "ignored\n")
    before = user_git_state(repo)
    assert before.stash.strip() and "feature" in before.branches

    loop = make_loop(repo)
    loop.user("change things")
    loop.change(lambda r: write(r, "src/app.py", "print('agent')\n"), "src/app.py")
    loop.change(lambda r: (r / "doomed.txt").unlink(), "doomed.txt")
    loop.reply()
    loop.rewind(1, "both")
    loop.cps.turns(loop.log)

    after = user_git_state(repo)
    assert after == before
    assert (repo / "src" / "app.py").read_text(encoding="utf-8") == "print('staged')\n"
    assert (repo / "doomed.txt").exists()
    # The shadow repository is its own: the user's repository got no ctxagent refs or objects pointer.
    assert "ctxagent" not in git(repo, "for-each-ref")
    assert not (repo / ".git" / "objects" / "info" / "alternates").exists()


def test_non_git_directory_honours_gitignore(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, ".gitignore", "cache/\n*.tmp\n")
    write(root, "main.py", "x = 1\n")
    write(root, "cache/big.dat", "ignored\n")
    write(root, "scratch.tmp", "ignored\n")
    loop = make_loop(root)
    loop.user("edit main")
    loop.change(lambda r: write(r, "main.py", "x = 2\n"), "main.py")
    loop.change(lambda r: write(r, "helper.py", "y = 1\n"), "helper.py")
    write(root, "cache/big.dat", "changed by a build\n")
    loop.reply()
    files = shadow_files(loop.cps, loop.cps.shadow.resolve(f"refs/ctxagent/{loop.log.session_id}/1/pre") or "")
    assert set(files) == {".gitignore", "main.py"}
    result = loop.rewind(1, "code")
    assert result.files_restored == ["main.py"] and result.files_deleted == ["helper.py"]
    assert (root / "main.py").read_text() == "x = 1\n"
    assert (root / "cache" / "big.dat").read_text() == "changed by a build\n"
    assert not (root / ".git").exists()


def test_file_tracked_despite_matching_an_ignore_rule_is_snapshotted(repo: Path) -> None:
    write(repo, "keep.log", "tracked on purpose\n")
    git(repo, "add", "-f", "keep.log")
    git(repo, "commit", "-q", "-m", "track a log")
    write(repo, "other.log", "really ignored\n")
    cps = Checkpoints(repo, repo / ".ctxagent")
    files = shadow_files(cps, cps.snapshot("s1", 1, 0))
    assert "keep.log" in files and "other.log" not in files


def test_global_excludes_file_is_honoured(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    excludes = tmp_path / "global-excludes"
    excludes.write_text("*.swp\n", encoding="utf-8")
    cfg = tmp_path / "gitconfig"
    cfg.write_text(f"[core]\n\texcludesFile = {excludes}\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    write(repo, ".main.py.swp", "editor swap file\n")
    cps = Checkpoints(repo, repo / ".ctxagent")
    assert ".main.py.swp" not in shadow_files(cps, cps.snapshot("s1", 1, 0))


def test_snapshot_is_idempotent_per_turn_event_and_survives_gc(repo: Path) -> None:
    cps = Checkpoints(repo, repo / ".ctxagent")
    first = cps.snapshot("s1", 1, 5)
    write(repo, "README.md", "changed after the snapshot\n")
    assert cps.snapshot("s1", 1, 5) == first  # same turn, same event: the pre-turn tree is kept
    again = cps.snapshot("s1", 1, 9)  # turn number reused after a rewind: a new checkpoint
    assert again != first
    assert cps.shadow.resolve("refs/ctxagent/s1/1/pre-5") == first
    subprocess.run(["git", "--git-dir", str(cps.shadow.git_dir), "gc", "-q", "--prune=now"], check=True)
    assert cps.shadow.resolve(first) == first
    blob = cps.shadow.tree_entries(first)["README.md"].sha
    assert cps.shadow.blob(blob) == b"# demo\n"


def test_odd_session_ids_make_valid_refs(repo: Path) -> None:
    cps = Checkpoints(repo, repo / ".ctxagent")
    commit = cps.snapshot("../we ird:session.lock", 2, 0)
    refs = [r.name for r in cps.shadow.refs("refs/ctxagent/")]
    assert any(r.endswith("/2/pre") for r in refs)
    assert all(".." not in r and ":" not in r and " " not in r for r in refs)
    assert cps.shadow.resolve(commit) == commit


def test_index_lock_left_by_a_crash_does_not_freeze_snapshots(repo: Path) -> None:
    cps = Checkpoints(repo, repo / ".ctxagent")
    cps.snapshot("s1", 1, 0)
    Path(f"{cps.shadow.index_file}.lock").write_bytes(b"")  # as if a previous run died mid-add
    write(repo, "README.md", "# after the crash\n")
    commit = cps.mark_turn_end("s1", 1)
    readme = cps.shadow.tree_entries(commit)["README.md"]
    assert cps.shadow.blob(readme.sha) == b"# after the crash\n"


def test_turn_without_end_mark_treats_its_changes_as_unconfirmed(repo: Path) -> None:
    """A turn that died before mark_turn_end: we cannot tell agent edits from user edits, so we ask."""
    loop = make_loop(repo)
    loop.user("crashes midway")
    loop.change(lambda r: write(r, "README.md", "# half done\n"), "README.md")
    asked: list[list[str]] = []
    result = loop.rewind(1, "code", lambda paths: asked.append(paths) or True)
    assert asked == [["README.md"]] and result.files_restored == ["README.md"]
    assert (repo / "README.md").read_text() == "# demo\n"
