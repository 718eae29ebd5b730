"""Family: every way a name can lead out of the repository (issue 19, Critical 2), against every
entry point that touches a file.

The escapes (corpus.link_farm): a symbolic link in the last name, one in a folder on the way, a
relative link through `..`, a `..` path, an absolute path, a hard link to the secret, a FIFO, a
device; plus a link swapped in while the tools run (a thread flipping it), and the 32,768-link farm
of the old predictable temporary names. The entry points: read_file, write_file, edit_file,
list_files, grep (ripgrep and the Python search), @mentions, instruction files, the rewind's
writes and removals. Each must refuse (or skip) the escape: the secret never reaches an output,
and nothing outside the repository changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus import SECRET, Victim, link_farm, plain_repo, temp_farm
from ctxagent.agent.checkpoints.worktree import remove_path, write_entry
from ctxagent.agent.factory import instructions_file
from ctxagent.agent.user_tools import mentioned_files
from ctxagent.tools import make_registry
from ctxagent.tools.atomic_write import write_atomic
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.grep import find_rg

REG = make_registry()
ESCAPES = {  # name -> the path a model would give (the absolute and `..` ones are filled in per victim)
    "final-link": "final.txt", "dir-link": "dir/id_rsa", "relative-link": "rel.txt", "dotdot": "DOTDOT",
    "absolute": "ABSOLUTE", "hard-link": "hard.txt", "fifo": "fifo.txt", "device": "dev.txt",
}
WRITE_ESCAPES = {**ESCAPES, "bashrc-link": "rc"}


def _path(v: Victim, repo: Path, given: str) -> str:
    if given == "DOTDOT":
        return os.path.relpath(v.secret, repo)
    if given == "ABSOLUTE":
        return str(v.secret)
    return given


@pytest.fixture
def farm(victim: Victim) -> Path:
    return link_farm(victim)


def _grep(engine: str) -> Callable[[Path, str], str]:
    def run(repo: Path, path: str) -> str:
        return REG.run("grep", {"pattern": "SECRET|PLANTED|.", "path": path},
                       ToolContext(root=repo, config={"grep_engine": engine})).content
    return run


READERS: dict[str, Callable[[Path, str], str]] = {
    "read_file": lambda repo, p: REG.run("read_file", {"path": p}, ToolContext(root=repo)).content,
    "list_files": lambda repo, p: REG.run("list_files", {"path": p}, ToolContext(root=repo)).content,
    "grep-python": _grep("python"),
    "mention": lambda repo, p: repr(mentioned_files(repo, f"look at @{p} please")),
    "instructions": lambda repo, p: str(instructions_file(repo, p)),
}
if find_rg() is not None:
    READERS["grep-rg"] = _grep("rg")

WRITERS: dict[str, Callable[[Path, str], object]] = {
    "write_file": lambda repo, p: REG.run("write_file", {"path": p, "content": "pwned\n"}, ToolContext(root=repo)),
    "edit_file": lambda repo, p: REG.run("edit_file", {"path": p, "old_text": "SECRET", "new_text": "pwned"}, ToolContext(root=repo)),
    "rewind-write": lambda repo, p: write_entry(repo, p, "100644", b"pwned\n"),
    "rewind-remove": lambda repo, p: remove_path(repo, p),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_no_reader_reads_through_an_escape(victim: Victim, farm: Path, reader: str, escape: str) -> None:
    out = READERS[reader](farm, _path(victim, farm, ESCAPES[escape]))
    assert SECRET not in out, (reader, escape, out)
    if reader == "mention":
        assert out == "[]"
    assert victim.escaped() == []


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("escape", sorted(WRITE_ESCAPES))
def test_no_writer_writes_through_an_escape(victim: Victim, farm: Path, writer: str, escape: str) -> None:
    given = _path(victim, farm, WRITE_ESCAPES[escape])
    try:
        WRITERS[writer](farm, given)
    except (OSError, Exception) as exc:  # a refusal: CheckpointError, OSError; the tools return errors instead
        assert SECRET not in str(exc)
    assert victim.escaped() == [], (writer, escape)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_whole_repository_views_skip_every_escape(victim: Victim, farm: Path, reader: str) -> None:
    """list_files and grep over the whole farm: names may show, the secret's content never does."""
    out = READERS[reader](farm, ".")
    assert SECRET not in out
    assert victim.escaped() == []


def test_a_link_that_stays_inside_is_followed(victim: Victim, farm: Path) -> None:
    r = REG.run("read_file", {"path": "inside.txt"}, ToolContext(root=farm))
    assert not r.is_error and "hello" in r.content
    r = REG.run("write_file", {"path": "inside.txt", "content": "changed\n"}, ToolContext(root=farm))
    assert not r.is_error, r.content
    assert (farm / "notes.txt").read_text() == "changed\n" and (farm / "inside.txt").is_symlink()


def test_the_refusals_say_why(victim: Victim, farm: Path) -> None:
    def err(path: str) -> str:
        r = REG.run("read_file", {"path": path}, ToolContext(root=farm))
        assert r.is_error
        return r.content
    assert "outside the repository" in err("final.txt") and "symbolic link" in err("dir/id_rsa")
    assert "hard links" in err("hard.txt")
    assert "named pipe" in err("fifo.txt")
    assert "device" in err("dev.txt") or "outside" in err("dev.txt")


def test_the_old_temp_name_farm_cannot_redirect_a_write(victim: Victim) -> None:
    """32,768 links named like the old predictable temporary files of notes.txt, each to ~/.bashrc."""
    repo = temp_farm(victim)
    for name, args in [("write_file", {"path": "notes.txt", "content": "new\n"}),
                       ("edit_file", {"path": "notes.txt", "old_text": "new", "new_text": "newer"})]:
        r = REG.run(name, args, ToolContext(root=repo))
        assert not r.is_error, r.content
    write_atomic(repo / "notes.txt", b"newest\n")
    write_entry(repo, "notes.txt", "100644", b"rewound\n")
    assert (repo / "notes.txt").read_text() == "rewound\n" and not (repo / "notes.txt").is_symlink()
    assert victim.escaped() == []
    assert (repo / f".notes.txt.ctxagent-tmp-{os.getpid()}").is_symlink()  # a planted link is not ours to sweep


# --- a link swapped in while the tools run --------------------------------------------------------


FLIPPER = """
import os, sys
repo, mode, name, out, inside = sys.argv[1:6]
here, spare, keep = os.path.join(repo, name), os.path.join(repo, ".spare"), os.path.join(repo, ".kept")
n = 0
while True:
    n += 1
    try:
        if mode == "retarget":  # a link whose target flips: inside, outside
            tmp = os.path.join(repo, f".flip-{n}")
            os.symlink(out if n % 2 else inside, tmp)
            os.replace(tmp, here)
        elif n % 2:  # the real folder or file is moved away and a link to the outside takes its name
            os.rename(here, keep)
            os.symlink(out, spare)
            os.replace(spare, here)
        else:  # and back
            os.replace(keep, here) if mode == "file" else (os.unlink(here), os.rename(keep, here))
    except OSError:
        pass
"""


def _flipping(repo: Path, outside: Path, where: str) -> tuple[subprocess.Popen[bytes], str]:
    """A name that flips, as fast as a second process can, between something inside the
    repository and a link to a folder outside that holds the secret under the same name.
    `where`: a link whose target flips (`dir-retarget`: `sub/x.txt`; `last-retarget`: `x.txt`),
    or a real folder (`dir-swap`) or file (`last-swap`) swapped with a link to the outside, the
    check-then-open race a path resolved first and opened second loses. Returns the flipping
    process and the path to use."""
    (repo / "real").mkdir()
    (repo / "real" / "x.txt").write_text("innocent\n")
    kind, mode = where.split("-")
    if mode == "retarget":
        name, inside = ("sub", "real") if kind == "dir" else ("x.txt", "real/x.txt")
        (repo / name).symlink_to(inside)
    else:
        name, inside = ("real", "") if kind == "dir" else ("x.txt", "")
        if kind == "last":
            (repo / "x.txt").write_text("innocent\n")
    out = str(outside) if kind == "dir" else str(outside / "x.txt")
    flip_mode = "retarget" if mode == "retarget" else ("dir" if kind == "dir" else "file")
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(repo), flip_mode, name, out, inside])
    path = {"dir-retarget": "sub/x.txt", "last-retarget": "x.txt", "dir-swap": "real/x.txt", "last-swap": "x.txt"}[where]
    return proc, path


@pytest.mark.parametrize("where", ["dir-retarget", "last-retarget", "dir-swap", "last-swap"])
@pytest.mark.parametrize("entry", ["read_file", "grep-rg", "write_file"])
def test_a_link_swapped_in_by_another_process_is_never_followed(victim: Victim, entry: str, where: str) -> None:
    if entry == "grep-rg" and find_rg() is None:
        pytest.skip("ripgrep is not installed")
    repo = plain_repo(victim)
    outside = victim.home / "flip"
    outside.mkdir()
    (outside / "x.txt").write_text(SECRET + "\n")
    flipper, path = _flipping(repo, outside, where)
    outputs = []
    try:
        for _ in range(300):
            if entry in READERS:
                outputs.append(READERS[entry](repo, path))
            elif entry == "rewind-write":
                try:
                    write_entry(repo, path, "100644", b"pwned\n")
                except Exception as exc:
                    outputs.append(str(exc))
            else:
                args = {"path": path, "content": "pwned\n"} if entry == "write_file" else \
                    {"path": path, "old_text": "SECRET", "new_text": "pwned"}
                outputs.append(REG.run(entry, args, ToolContext(root=repo)).content)
    finally:
        flipper.kill()
        flipper.wait()
    assert not any(SECRET in o for o in outputs)
    assert (outside / "x.txt").read_text() == SECRET + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["x.txt"]  # no temporary file left there either


# --- the same race, at every point: the swap made after the k-th file-system call ----------------

TRACED = ("stat", "lstat", "open", "readlink", "scandir")
SWAP_ENTRIES = ["read_file", "grep-python", "grep-rg", "list_files", "write_file", "edit_file", "rewind-write",
                "rewind-remove", "mention", "instructions"]


def _swap(repo: Path, outside: Path, kind: str) -> None:
    """A real folder (`real`) or file (`x.txt`) moved away, and a link to the outside in its place."""
    name = "real" if kind == "dir" else "x.txt"
    os.rename(repo / name, repo / ".kept")
    os.symlink(outside if kind == "dir" else outside / "x.txt", repo / name)


def _reset(repo: Path) -> None:
    for name in ("real", "x.txt", ".kept"):
        p = repo / name
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            for f in p.iterdir():
                f.unlink()
            p.rmdir()
    (repo / "real").mkdir()
    (repo / "real" / "x.txt").write_text("innocent SECRET-looking word\n")
    (repo / "x.txt").write_text("innocent SECRET-looking word\n")


@pytest.mark.parametrize("kind", ["dir", "last"])
@pytest.mark.parametrize("entry", SWAP_ENTRIES)
def test_a_link_swapped_in_between_any_two_calls_is_never_followed(victim: Victim, monkeypatch: pytest.MonkeyPatch,
                                                                   entry: str, kind: str) -> None:
    """Deterministic: for k = 0, 1, 2, … the folder (or the file) is swapped for a link to the
    outside right after the k-th file-system call the entry point makes (os.stat, lstat, open,
    readlink, scandir), until the entry makes fewer than k calls. Whatever was checked before the
    swap, what is used after it is never the outside file."""
    if entry == "grep-rg" and find_rg() is None:
        pytest.skip("ripgrep is not installed")
    repo = plain_repo(victim)
    outside = victim.home / "flip"
    outside.mkdir()
    (outside / "x.txt").write_text(SECRET + "\n")
    path = "real/x.txt" if kind == "dir" else "x.txt"
    real = {name: getattr(os, name) for name in TRACED}
    state = {"calls": 0, "at": -1, "done": False}

    def traced(name: str):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            result = real[name](*args, **kwargs)
            state["calls"] += 1
            if state["calls"] == state["at"] and not state["done"]:
                state["done"] = True
                with monkeypatch.context() as m:  # the swap itself is not traced
                    for n in TRACED:
                        m.setattr(os, n, real[n])
                    _swap(repo, outside, kind)
            return result
        return call

    swaps = 0
    for k in range(1, 400):
        _reset(repo)
        state.update(calls=0, at=k, done=False)
        with monkeypatch.context() as m:
            for name in TRACED:
                m.setattr(os, name, traced(name))
            try:
                out = str(READERS[entry](repo, path) if entry in READERS else _content(WRITERS[entry](repo, path)))
            except Exception as exc:  # the rewind raises its refusals
                out = str(exc)
        assert SECRET not in out, (entry, kind, k, out)
        assert (outside / "x.txt").read_text() == SECRET + "\n", (entry, kind, k)
        assert sorted(p.name for p in outside.iterdir()) == ["x.txt"], (entry, kind, k)
        if not state["done"]:
            break  # the entry made fewer than k calls: every point was tried
        swaps += 1
    assert swaps >= 3  # the entry point did touch the file system, and the swap happened at each point


def _content(result: object) -> str:
    return str(getattr(result, "content", result))
