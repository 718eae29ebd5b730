"""Every CLI command against every repository of the corpus (issue 19, "a corpus of hostile
repositories ... every tool and CLI command runs against each").

Per repository: `ctxagent -p --yes` with the scripted model calling every file tool and git view
on the repository's escapes (the secret by `..`, by an absolute path, through the planted links;
an overwrite of `~/.bashrc`), then report, inspect, sessions, memory, rewind, doctor, config,
trust and the MCP server. Asserted: no traceback, no marker (no planted program ran), nothing
outside the repository changed or appeared, and the secret is in no output, no request the model
received, and no session log. Commands run in process (`main(argv)`, the real CLI without an
interpreter start per command) except the MCP server, which is a real stdio subprocess.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from attack_helpers import MODEL, OPENAI_KEY
from corpus import ALL, SECRET, Victim
from ctxagent.tui.cli.main import main
from test_planted_state import _mcp

REFUSED = {"git:core.worktree", "git:gitdir-file", "git:gitdir-elsewhere", "state:unmarked"}
ESCAPING_CALLS = [
    ("read_file", {"path": "../../.ssh/id_rsa"}), ("read_file", {"path": "ABSOLUTE"}), ("read_file", {"path": ".ssh/id_rsa"}),
    ("read_file", {"path": "final.txt"}), ("read_file", {"path": "dir/id_rsa"}), ("read_file", {"path": "hard.txt"}),
    ("read_file", {"path": "AGENTS.md"}), ("read_file", {"path": "CLAUDE.md"}), ("read_file", {"path": "fifo.txt"}),
    ("list_files", {}), ("grep", {"pattern": "SECRET"}), ("grep", {"pattern": "SECRET", "path": "dir"}),
    ("git_status", {}), ("git_diff", {}),
    ("write_file", {"path": "../../.bashrc", "content": "pwned\n"}), ("write_file", {"path": "rc", "content": "pwned\n"}),
    ("write_file", {"path": ".bashrc", "content": "pwned\n"}), ("write_file", {"path": "notes.txt", "content": "edited\n"}),
    ("edit_file", {"path": "hard.txt", "old_text": "SECRET", "new_text": "x"}),
    ("read_spill", {"handle": "abababab"}),
]


def _run(capsys: pytest.CaptureFixture[str], repo: Path, *argv: str) -> tuple[int, str]:
    try:
        code = main(["--cwd", str(repo), *argv] if argv and argv[0] in ("-p",) else [*argv, *_cwd(argv[0], repo)])
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text, (argv, text)
    return code, text


def _cwd(command: str, repo: Path) -> list[str]:
    if command in ("memory",):
        return []
    if command in ("trust",):
        return []
    return ["--cwd", str(repo)] if command in ("report", "sessions", "doctor", "inspect", "config") else []


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_command_against_every_hostile_repository(victim: Victim, name: str, servers, monkeypatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    repo = ALL[name](victim)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.chdir(repo)
    calls = [{"name": t, "arguments": {k: (str(victim.secret) if v == "ABSOLUTE" else v) for k, v in a.items()}}
             for t, a in ESCAPING_CALLS]
    srv = servers([{"tool_calls": calls}, {"text": "done"}, {"text": "again"}])
    outputs: list[str] = []
    codes = []
    for argv in (["-p", "go", "--model", MODEL, "--base-url", srv.base_url, "--yes", "--output", "json"],
                 ["-p", "more", "--continue", "--model", MODEL, "--base-url", srv.base_url, "--yes"]):
        code, text = _run(capsys, repo, *argv)
        codes.append(code)
        outputs.append(text)
    if name in REFUSED:  # the repository is refused before any request, with the reason
        assert codes == [2, 2] and srv.requests == [], (name, outputs)
    else:  # the run went on: every call was made and answered (refused, in words the model can act on)
        assert codes == [0, 0], (name, outputs)
        sent = json.dumps(srv.requests)
        assert len(srv.requests) == 3 and "outside the repository" in sent, name
    sessions = sorted((repo / ".ctxagent" / "sessions").glob("*.jsonl")) if (repo / ".ctxagent" / "sessions").is_dir() else []
    last = sessions[-1].stem if sessions else "none"
    for argv in (["report", "--last"], ["inspect", "--step", "1", last], ["sessions"], ["memory", "list"],
                 ["memory", "search", "ssh"], ["memory", "stats"], ["doctor"], ["config"], ["trust", "--list"],
                 ["rewind", "--list"], ["rewind", "--to", "1", "--code", "--force"]):
        if argv[0] == "rewind":
            argv = [*argv, "--cwd", str(repo)]
        outputs.append(_run(capsys, repo, *argv)[1])
    for _is_error, text in _mcp(str(repo), [("read_spill", {"handle": "ab" * 8}), ("search_memory", {"query": "ssh"})]):
        outputs.append(text)
    assert victim.escaped() == [], (name, victim.escaped())
    assert not victim.leaked(*outputs), name
    assert SECRET not in json.dumps(srv.requests), f"{name}: the secret reached the model"
    logs: list[Any] = [p.read_text(errors="replace") for p in sessions]
    assert not victim.leaked(*logs), f"{name}: the secret reached a session log"
    assert not os.path.lexists(victim.home / ".ctxagent")
