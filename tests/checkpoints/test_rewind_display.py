"""`ctxagent rewind` prints file names and first lines from the repository and the log through the
display edge (context/floor/display.py): no control sequence reaches the terminal raw, and every
invisible character is shown — one family each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cp_helpers import make_loop

BIN = Path(sys.executable).with_name("ctxagent")

# each family of what must never reach a terminal raw: a name the agent wrote, and the user's line
FAMILIES = {
    "C0 control": "bell\x07.py",
    "C1 control": "csi\x9b2J.py",
    "ESC sequence": "clear\x1b[2J\x1b]0;pwned\x07.py",
    "bidi override": "invoice\u202eyxp.exe",
    "bidi isolate": "iso\u2066late\u2069.py",
    "zero-width joiner": "zw\u200dj.py",
    "zero-width space": "zw\u200bsp\ufeff.py",
}
RAW = ["\x07", "\x9b", "\x1b", "\u202e", "\u2066", "\u2069", "\u200d", "\u200b", "\ufeff"]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([str(BIN), *args], cwd=cwd, env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_rewind_shows_every_family_visibly(repo: Path, family: str) -> None:
    name = FAMILIES[family]
    loop = make_loop(repo)
    loop.user(f"make {name} please")
    loop.change(lambda r: (r / name).write_text("x = 1\n", encoding="utf-8"), name)
    loop.reply()
    loop.log.close()
    loop.cps.close()
    sid = loop.log.session_id
    for args in (("--list",), ("--to", "1", "--code")):
        out = _run(repo, "rewind", sid, *args)
        assert out.returncode == 0, out.stderr
        text = out.stdout.decode("utf-8")
        assert not [ch for ch in RAW if ch in text], (family, args, text)
        assert "⟨U+" in text or "␛" in text or "^G" in text or "\\x9b" in text, text  # shown, not dropped


def test_rewind_prints_an_undecodable_file_name(repo: Path) -> None:
    raw = os.fsdecode(b"lone\xffsurrogate.py")  # a lone surrogate once decoded
    loop = make_loop(repo)
    loop.user("make it")
    loop.change(lambda r: (r / raw).write_text("x = 1\n", encoding="utf-8"), raw)
    loop.reply()
    loop.log.close()
    loop.cps.close()
    out = _run(repo, "rewind", loop.log.session_id, "--to", "1", "--code")
    assert out.returncode == 0, out.stderr  # printing it did not crash
    assert "lone" in out.stdout.decode("utf-8")
