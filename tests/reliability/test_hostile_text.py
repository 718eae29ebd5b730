"""Never crash on text: file names that are not UTF-8 and lone surrogates in a model's arguments.

A name like `caf\\xe9.txt` (Latin-1 bytes) reaches Python as "caf\\udce9.txt"; a model's JSON can
carry "\\ud800". Neither can be encoded, so a tool that passes one on crashes whatever writes it
next (the session log, memory.db, the terminal). Every tool must come back with text that encodes,
and a name shown as `caf\\xe9.txt` must work when the model gives it back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.memory_tools import memory_tools
from ctxagent.tools.spill_tool import READ_SPILL
from ctxagent.tui.lab.scripted.server import ScriptedServer

BIN = Path(sys.executable).with_name("ctxagent")
REG = make_registry([*memory_tools(), READ_SPILL])
LATIN1_NAME = b"caf\xe9.txt"  # "café.txt" in Latin-1: not valid UTF-8
SHOWN = "caf\\xe9.txt"  # how the tools show it, and what the model sends back


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with open(os.path.join(os.fsencode(root), LATIN1_NAME), "wb") as fh:
        fh.write(b"needle in a latin-1 named file\n")
    os.mkdir(os.path.join(os.fsencode(root), b"d\xff"))
    with open(os.path.join(os.fsencode(root), b"d\xff", b"inner.txt"), "wb") as fh:
        fh.write(b"needle inside\n")
    return root


def _encodable(value: Any) -> None:
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_non_utf8_names_are_shown_escaped_by_every_read_tool(repo: Path, engine: str) -> None:
    ctx = ToolContext(root=repo, config={"grep_engine": engine})
    for name, args in [("list_files", {}), ("git_status", {}), ("git_diff", {}), ("grep", {"pattern": "needle"})]:
        r = REG.run(name, args, ctx)
        assert not r.is_error, (name, r.content)
        _encodable([r.content, r.meta])
        assert SHOWN in r.content, (name, r.content)
        assert "d\\xff/inner.txt" in r.content, (name, r.content)


def test_an_escaped_name_given_back_reaches_the_real_file(repo: Path) -> None:
    ctx = ToolContext(root=repo)
    r = REG.run("read_file", {"path": SHOWN}, ctx)
    assert not r.is_error and "needle in a latin-1 named file" in r.content
    r = REG.run("edit_file", {"path": SHOWN, "old_text": "needle", "new_text": "pin"}, ctx)
    assert not r.is_error, r.content
    _encodable([r.content, r.meta])
    assert (repo / os.fsdecode(LATIN1_NAME)).read_bytes() == b"pin in a latin-1 named file\n"
    r = REG.run("list_files", {"path": "d\\xff"}, ctx)
    assert not r.is_error and "d\\xff/inner.txt" in r.content
    r = REG.run("git_diff", {"path": SHOWN}, ctx)
    assert not r.is_error and SHOWN in r.content


@pytest.mark.parametrize(("tool", "args"), [
    ("list_files", {"path": "\ud800"}),
    ("list_files", {"glob": "*\ud800"}),
    ("read_file", {"path": "a\udfff.txt"}),
    ("grep", {"pattern": "\ud800"}),
    ("grep", {"pattern": "needle", "glob": "\ud800*"}),
    ("grep", {"pattern": "needle", "path": "\ud800"}),
    ("git_diff", {"path": "\ud800"}),
    ("write_file", {"path": "new\ud800.txt", "content": "x\ud800y\n"}),
    ("edit_file", {"path": SHOWN, "old_text": "needle", "new_text": "n\ud83d"}),
    ("shell", {"command": "echo \ud800 && ls"}),
    ("run_tests", {"command": "echo '1 passed, 0 failed \ud800'"}),
    ("store_memory", {"content": "remember \ud800 this", "type": "note"}),
    ("search_memory", {"query": "\ud800"}),
    ("summarize_context", {"text": "We decided to use \ud800 Redis."}),
    ("read_spill", {"handle": "\ud800"}),
])
def test_lone_surrogates_in_arguments_never_crash_a_tool(repo: Path, tool: str, args: dict[str, Any]) -> None:
    r = REG.run(tool, args, ToolContext(root=repo))
    _encodable([r.content, r.meta])
    assert "UnicodeEncodeError" not in r.content and "surrogates not allowed" not in r.content, r.content


def test_a_lone_surrogate_written_by_the_model_becomes_a_replacement_character(repo: Path) -> None:
    r = REG.run("write_file", {"path": "new\ud800.txt", "content": "x\ud800y\n"}, ToolContext(root=repo))
    assert not r.is_error, r.content
    assert (repo / "new\ufffd.txt").read_text(encoding="utf-8") == "x\ufffdy\n"


def test_headless_session_over_non_utf8_names(repo: Path) -> None:
    """The whole path, through the console script: tool results with such names reach the log and the model."""
    script = [
        {"tool_calls": [{"name": "list_files", "arguments": {}}, {"name": "git_status", "arguments": {}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": SHOWN}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": SHOWN, "old_text": "needle", "new_text": "pin"}}]},
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "pin"}}]},
        {"text": "Done with the odd file name."},
    ]
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000"}
    with ScriptedServer(script) as srv:
        out = subprocess.run([str(BIN), "-p", "look at the files", "--model", "anthropic:claude-sonnet-5-5",
                              "--base-url", srv.base_url, "--yes", "--output", "json"],
                             cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        requests = srv.requests
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["stop_reason"] == "end_turn"
    assert (repo / os.fsdecode(LATIN1_NAME)).read_bytes() == b"pin in a latin-1 named file\n"
    log = next((repo / ".ctxagent" / "sessions").glob("*.jsonl")).read_text(encoding="utf-8")
    results = [json.loads(line)["data"] for line in log.splitlines() if '"tool_result"' in line]
    assert len(results) == 5 and not any(r["is_error"] for r in results), results
    assert SHOWN + ":1:pin" in results[-1]["content"]
    assert json.dumps(SHOWN)[1:-1] in json.dumps(requests[-1]["body"], ensure_ascii=False)  # the model saw it
