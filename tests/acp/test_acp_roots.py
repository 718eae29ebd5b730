"""An ACP client's `cwd` is untrusted (issue 30, item 6): `session/new` or `session/load` in the home
folder, `/`, a folder above the home folder or /tmp is a JSON-RPC error whose message says why and
how to go on, and nothing is created there; a project below the home folder (even below a dotfiles
`~/.git`) opens, on the same connection. The raw JSON-RPC lines of the real `ctxagent acp`, with a
fake HOME."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION

from .conftest import BIN, MODEL, agent_env, git


def _replies(proc: subprocess.Popen[str], ids: set[int]) -> dict[int, dict[str, Any]]:
    """Read lines until every id in `ids` has its reply (notifications in between are skipped)."""
    assert proc.stdout is not None
    out: dict[int, dict[str, Any]] = {}
    while not ids <= out.keys():
        line = proc.stdout.readline()
        assert line, f"the agent closed its output; replies so far: {out}"
        msg = json.loads(line)
        if "id" in msg and "method" not in msg:
            out[msg["id"]] = msg
    return out


@pytest.mark.timeout(180)
def test_session_new_and_load_refuse_the_home_folder_and_open_a_project(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    (home / ".pgpass").write_text("db:5432:*:app:pg-secret-81c2f0a9\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git(home, "init", "-q", "-b", "main")  # a dotfiles repository
    proj = home / "src" / "proj"
    proj.mkdir(parents=True)
    git(proj, "init", "-q", "-b", "main")
    notes = home / "notes"
    notes.mkdir()
    refused = {2: home, 3: Path("/"), 4: home.parent, 5: Path("/tmp")}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION}}]
    lines += [{"jsonrpc": "2.0", "id": i, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}}
              for i, cwd in refused.items()]
    lines += [{"jsonrpc": "2.0", "id": 6, "method": "session/load",
               "params": {"cwd": str(home), "sessionId": "20260102-030405-abcdef", "mcpServers": []}},
              {"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": str(proj), "mcpServers": []}},
              {"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": str(notes), "mcpServers": []}}]
    proc = subprocess.Popen([str(BIN), "--model", MODEL, "--base-url", "http://127.0.0.1:9", "acp"], cwd=proj,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=agent_env())
    assert proc.stdin is not None
    try:
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        proc.stdin.flush()
        got = _replies(proc, set(range(1, 9)))
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    for i, cwd in {**refused, 6: home}.items():
        error = got[i].get("error")
        assert error is not None, (i, got[i])
        shown = os.path.realpath(cwd)
        assert error["code"] == -32602 and f"refusing to work in {shown}" in error["message"], error
        assert "git init" in error["message"] and "open the project's folder" in error["message"], error
        assert error["data"]["type"] == "RootRefusedError"
    assert "your home folder" in got[2]["error"]["message"]
    assert got[7]["result"]["sessionId"] and got[8]["result"]["sessionId"], (got[7], got[8])
    assert (proj / ".ctxagent").is_dir()  # each session's state folder is its own root's
    assert (notes / ".ctxagent").is_dir()  # below the dotfiles .git: the folder itself is the root
    assert not (home / ".ctxagent").exists() and not (home.parent / ".ctxagent").exists()
