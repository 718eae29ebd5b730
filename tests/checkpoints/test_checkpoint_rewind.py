"""Code and conversation rewind on real repositories, driven the way the agent loop drives checkpoints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cp_helpers import make_loop, rewind_log, write
from ctxagent.agent.checkpoints.store import checkpoints_for_log
from ctxagent.context.errors import HistoryError
from ctxagent.context.events import CompactionData
from ctxagent.context.history import Event, SessionLog, Summary

BINARY = bytes(range(256)) + b"\r\n\x00\xff" * 50


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def _texts(items: list[Event | Summary]) -> list[str]:
    return [str(it.data.get("text", "")) for it in items if isinstance(it, Event) and it.kind == "user"]


def test_code_and_conversation_rewind_restores_the_tree_exactly(repo: Path) -> None:
    write(repo, "src/app.py", "print('dirty, never committed')\n")
    write(repo, "untracked/notes.txt", "untracked before the turn\n")
    write(repo, "assets/logo.bin", BINARY)
    write(repo, "debug.log", "ignored before\n")
    write(repo, "中文/说明.md", "第一版\n")
    (repo / "doomed.txt").unlink()  # deleted before the turn: must stay deleted
    loop = make_loop(repo)
    loop.user("first turn")
    loop.reply("nothing changed")
    loop.user("refactor everything\nsecond line")
    loop.change(lambda r: write(r, "src/app.py", "print('agent')\n"), "src/app.py")
    loop.change(lambda r: (r / "untracked" / "notes.txt").unlink(), "untracked/notes.txt")
    loop.change(lambda r: write(r, "assets/logo.bin", b"\x00broken"), "assets/logo.bin")
    loop.change(lambda r: (r / "run.sh").chmod(0o644), "run.sh")
    loop.change(lambda r: write(r, "new/pkg/mod.py", "created\n"), "new/pkg/mod.py")
    loop.change(lambda r: write(r, "中文/说明.md", "第二版\n"), "中文/说明.md")
    loop.change(lambda r: write(r, "debug.log", "ignored, changed by the agent's test run\n"))
    loop.reply()
    loop.user("third turn")
    loop.reply("still nothing")
    before_rewind_events = len(loop.log.events)

    result = loop.rewind(2, "both")

    assert sorted(result.files_restored) == sorted(["assets/logo.bin", "run.sh", "src/app.py", "untracked/notes.txt", "中文/说明.md"])
    assert result.files_deleted == ["new/pkg/mod.py"]
    assert result.skipped == [] and result.changed_outside == []
    assert (repo / "src/app.py").read_text() == "print('dirty, never committed')\n"
    assert (repo / "untracked/notes.txt").read_text() == "untracked before the turn\n"
    assert (repo / "assets/logo.bin").read_bytes() == BINARY
    assert (repo / "中文/说明.md").read_text(encoding="utf-8") == "第一版\n"
    assert _mode(repo / "run.sh") & 0o111 == 0o111
    assert _mode(repo / "src/app.py") & 0o111 == 0
    assert not (repo / "new").exists()  # the created file and its empty folders are gone
    assert not (repo / "doomed.txt").exists()
    assert (repo / "debug.log").read_text() == "ignored, changed by the agent's test run\n"  # ignored: untouched
    # Conversation: one rewind event to the user event of turn 2; later events stay in the log.
    assert len(loop.log.events) == before_rewind_events + 1
    ev = loop.log.events[-1]
    assert ev.kind == "rewind" and ev.data == {"to_id": result.conversation_to_id, "turn": 2, "mode": "both"}
    assert loop.log.events[result.conversation_to_id].data["turn"] == 2
    assert _texts(loop.log.view()) == ["first turn"]
    reloaded = SessionLog.load(loop.log.path)
    assert _texts(reloaded.view()) == ["first turn"] and len(reloaded.events) == len(loop.log.events)


def test_file_changed_outside_the_agent_asks_and_is_skipped_on_no(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("edit two files")
    loop.change(lambda r: write(r, "src/app.py", "print('agent')\n"), "src/app.py")
    loop.change(lambda r: write(r, "README.md", "# agent readme\n"), "README.md")
    loop.reply()
    write(repo, "README.md", "# the user's own edit after the turn\n")  # outside the agent
    write(repo, "user_new.txt", "the user's new file\n")  # also outside: a rewind would delete it
    asked: list[list[str]] = []

    def decline(paths: list[str]) -> bool:
        asked.append(paths)
        return False

    result = loop.rewind(1, "code", decline)
    assert asked == [["README.md", "user_new.txt"]]
    assert result.files_restored == ["src/app.py"] and result.files_deleted == []
    assert result.skipped == ["README.md", "user_new.txt"] == result.changed_outside
    assert (repo / "README.md").read_text() == "# the user's own edit after the turn\n"
    assert (repo / "user_new.txt").exists()
    assert (repo / "src/app.py").read_text() == "print('v1')\n"
    assert not [e for e in loop.log.events if e.kind == "rewind"]  # code only: the conversation stays


def test_confirming_overwrites_outside_changes_and_none_skips_them(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("edit")
    loop.change(lambda r: write(r, "README.md", "# agent\n"), "README.md")
    loop.reply()
    write(repo, "README.md", "# user\n")
    skipped = loop.rewind(1, "code", None)
    assert skipped.skipped == ["README.md"] and (repo / "README.md").read_text() == "# user\n"
    forced = loop.rewind(1, "code", lambda paths: paths == ["README.md"])
    assert forced.files_restored == ["README.md"] and (repo / "README.md").read_text() == "# demo\n"
    assert forced.backup_commit is not None  # the overwritten tree is kept as an undo point
    backup = loop.cps.shadow.tree_entries(forced.backup_commit)["README.md"]
    assert loop.cps.shadow.blob(backup.sha) == b"# user\n"


def test_turns_list_files_and_diffstat_and_rewind_to_a_turn_without_changes(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("add a feature")
    loop.change(lambda r: write(r, "src/app.py", "print('v2')\nprint('more')\n"), "src/app.py")
    loop.change(lambda r: write(r, "src/feature.py", "x = 1\n"), "src/feature.py")
    loop.reply()
    loop.user("just a question")
    loop.reply("an answer")
    loop.user("add a binary and delete a file")
    loop.change(lambda r: write(r, "img.bin", BINARY), "img.bin")
    loop.change(lambda r: (r / "doomed.txt").unlink(), "doomed.txt")
    loop.reply()
    infos = checkpoints_for_log(loop.log).turns(loop.log)
    assert [t.turn for t in infos] == [1, 2, 3]
    t1, t2, t3 = infos
    assert t1.first_line == "add a feature" and t1.own_checkpoint
    assert t1.files_changed == ["src/app.py", "src/feature.py"]
    stats = {s.path: (s.status, s.added, s.deleted) for s in t1.diffstat}
    assert stats == {"src/app.py": ("M", 2, 1), "src/feature.py": ("A", 1, 0)}
    assert t1.diffstat_summary() == "2 files changed, +3 -1"
    assert not t2.own_checkpoint and t2.files_changed == [] and t2.checkpoint == t3.checkpoint
    assert {s.path: (s.status, s.added) for s in t3.diffstat} == {"img.bin": ("A", None), "doomed.txt": ("D", 0)}
    # Rewinding to turn 2 (no change of its own) restores the tree as it was when turn 2 began.
    result = rewind_log(loop.log, 2, "code")
    assert result.files_deleted == ["img.bin"] and result.files_restored == ["doomed.txt"]
    assert (repo / "src/feature.py").exists() and (repo / "src/app.py").read_text().startswith("print('v2')")
    # A second rewind after the first one asks nothing: the rewound tree is what the agent left.
    asked: list[list[str]] = []
    again = rewind_log(loop.log, 1, "code", lambda p: asked.append(p) or True)
    assert asked == [] and again.files_deleted == ["src/feature.py"]
    assert (repo / "src/app.py").read_text() == "print('v1')\n"


def test_conversation_rewind_past_a_compaction_brings_originals_back(repo: Path) -> None:
    loop = make_loop(repo)
    ids = []
    for i in range(1, 4):
        ids.append(loop.user(f"turn {i}"))
        loop.reply(f"answer {i}")
    loop.log.append(CompactionData(first_id=ids[0], last_id=ids[1] + 1, summary="Decisions: none", method="extractive"))
    loop.user("turn 4")
    loop.reply("answer 4")
    assert _texts(loop.log.view()) == ["turn 3", "turn 4"]  # turns 1-2 behind the summary
    result = rewind_log(loop.log, 3, "conversation")
    assert result.files_restored == [] and result.checkpoint is None
    view = loop.log.view()
    assert _texts(view) == ["turn 1", "turn 2"]
    assert not [it for it in view if isinstance(it, Summary)]
    assert [t.turn for t in checkpoints_for_log(loop.log).turns(loop.log)] == [1, 2]


def test_code_rewind_to_a_turn_hidden_by_an_earlier_conversation_rewind(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("one")
    loop.reply()
    loop.user("two")
    loop.change(lambda r: write(r, "two.txt", "2\n"), "two.txt")
    loop.reply()
    rewind_log(loop.log, 2, "conversation")
    assert [t.turn for t in checkpoints_for_log(loop.log).turns(loop.log)] == [1]
    result = rewind_log(loop.log, 2, "code")
    assert result.files_deleted == ["two.txt"]
    infos = checkpoints_for_log(loop.log).turns(loop.log, include_hidden=True)
    assert [(t.turn, t.visible) for t in infos] == [(1, True), (2, False)]


def test_file_and_folder_swap_places_and_symlinks_are_restored(repo: Path) -> None:
    write(repo, "thing", "a file\n")
    os.symlink("README.md", repo / "link")
    loop = make_loop(repo)
    loop.user("swap")

    def swap(r: Path) -> None:
        (r / "thing").unlink()
        write(r, "thing/inner.txt", "now a folder\n")
        (r / "link").unlink()
        write(r, "link", "now a regular file\n")

    loop.change(swap, "thing/inner.txt", "link")
    loop.reply()
    result = rewind_log(loop.log, 1, "both")
    assert sorted(result.files_restored) == ["link", "thing"] and result.files_deleted == ["thing/inner.txt"]
    assert (repo / "thing").read_text() == "a file\n"
    assert os.readlink(repo / "link") == "README.md"


def test_ignored_files_are_never_deleted_or_overwritten(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("build")
    loop.change(lambda r: write(r, "build/artifact.o", b"\x7fELF"), "build/artifact.o")
    loop.change(lambda r: write(r, "app.log", "log\n"))
    loop.reply()
    result = rewind_log(loop.log, 1, "code")
    assert result.files_deleted == [] and result.files_restored == []
    assert (repo / "build/artifact.o").read_bytes() == b"\x7fELF" and (repo / "app.log").exists()


def test_unknown_turn_and_bad_mode_are_clear_errors(repo: Path) -> None:
    loop = make_loop(repo)
    loop.user("only turn")
    with pytest.raises(HistoryError, match="no turn 7"):
        rewind_log(loop.log, 7)
    with pytest.raises(ValueError):
        rewind_log(loop.log, 1, "everything")  # type: ignore[arg-type]
