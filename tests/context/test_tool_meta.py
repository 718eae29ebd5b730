"""One definition of "this call changed files": ctxagent's tools, other agents' tools, shell edits."""

from __future__ import annotations

import pytest
from ctxagent.context.compact import changed_files, extractive_summary
from ctxagent.context.events import ToolMeta, ToolResultData
from ctxagent.context.history import Event
from ctxagent.context.request import ToolCall
from ctxagent.context.tool_meta import (
    changed_files_of,
    changed_files_of_call,
    is_test_run,
    runs_tests_only,
    shell_written_files,
)


@pytest.mark.parametrize(("name", "args", "files"), [
    ("edit_file", {"path": "a.py", "old_text": "x", "new_text": "y"}, ["a.py"]),
    ("Edit", {"file_path": "/repo/src/a.py", "old_string": "x", "new_string": "y"}, ["/repo/src/a.py"]),
    ("Write", {"file_path": "b.md", "content": "x"}, ["b.md"]),
    ("MultiEdit", {"file_path": "c.py", "edits": []}, ["c.py"]),
    ("NotebookEdit", {"notebook_path": "n.ipynb", "new_source": "x"}, ["n.ipynb"]),
    ("str_replace_editor", {"command": "str_replace", "path": "/testbed/d.py"}, ["/testbed/d.py"]),
    ("str_replace_editor", {"command": "view", "path": "/testbed/d.py"}, []),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: e.py\n@@\n*** Add File: f.py\n*** End Patch"}, ["e.py", "f.py"]),
    ("read_file", {"path": "a.py"}, []),
    ("Read", {"file_path": "a.py"}, []),
    ("bash", {"command": "sed -i 's/a/b/' g.py && cat g.py"}, ["g.py"]),
    ("shell", {"command": "python gen.py > out.txt 2>&1"}, ["out.txt"]),
    ("bash", {"command": "cat > h.py <<'EOF'\nprint('x > y')\nEOF"}, ["h.py"]),
    ("bash", {"command": "grep -rn foo src | head"}, []),
])
def test_changed_files_of_call(name: str, args: dict, files: list[str]) -> None:
    assert changed_files_of_call(name, args) == files


def test_shell_heuristics_ignore_quoted_arrows_and_devnull() -> None:
    assert shell_written_files("echo 'a > b' && ls > /dev/null") == []
    assert shell_written_files("pytest -q | tee log.txt; perl -pi -e 's/x/y/' z.pl") == ["log.txt", "z.pl"]
    assert shell_written_files("echo '不要修改' >> 笔记.md") == ["笔记.md"]


def test_the_result_decides_first_and_a_failed_call_changed_nothing() -> None:
    call = ToolCall(id="c", name="bash", arguments={"command": "python build.py"})
    reported = ToolResultData(call_id="c", name="bash", meta=ToolMeta(changed_files=["dist/x.js"]))
    assert changed_files_of(call, reported) == ["dist/x.js"]
    failed = ToolResultData(call_id="c", name="Edit", is_error=True)
    assert changed_files_of(ToolCall(id="c", name="Edit", arguments={"file_path": "a.py"}), failed) == []


def _pair(i: int, name: str, args: dict) -> list[Event]:
    return [Event(i, "assistant", {"text": "", "tool_calls": [{"id": f"c{i}", "name": name, "arguments": args}]}),
            Event(i + 1, "tool_result", {"call_id": f"c{i}", "name": name, "content": "ok"})]


def test_a_summary_of_claude_code_traffic_lists_its_changes() -> None:
    events = [Event(0, "user", {"text": "Fix the parser. Do not use regex.", "turn": 1}),
              *_pair(1, "Edit", {"file_path": "src/parser.py", "old_string": "a", "new_string": "b"}),
              *_pair(3, "Bash", {"command": "sed -i 's/x/y/' src/lexer.py"}),
              *_pair(5, "Read", {"file_path": "README.md"})]
    assert changed_files(events) == ["src/parser.py", "src/lexer.py"]
    summary = extractive_summary(events)
    assert "src/parser.py: edited (turn 1)" in summary and "src/lexer.py: edited" in summary
    assert "README.md" not in summary and "Do not use regex" in summary


# -- which shell commands are test runs (failing tests are read only from those: issue 19) --------

TEST_COMMANDS = [
    "pytest -q",
    "python -m pytest tests/test_x.py 2>&1 | tail -30",
    "python3.11 -m unittest discover",
    "cd repo && . .venv/bin/activate && pytest -x",
    "timeout 60 uv run pytest -x | grep -E 'FAILED|passed'",
    "CI=1 npx jest --ci",
    "npm test", "npm run test", "go test ./...", "cargo test", "make test", "tox -e py311",
    "pytest -q > out.log; true",
    "pytest -q | tee run.log",
]
NOT_TEST_COMMANDS = [
    "cat README.md",
    "cat README.md; pytest",
    "cat README.md && pytest -q",
    "pytest -q | cat notes.txt",
    "pytest | grep FAILED README.md",
    "echo 'FAILED tests/x.py::t'",
    "pytest $(cat args.txt)",
    "pytest `cat args.txt`",
    "grep -r FAILED .",
    "pytest < README.md",
    "ls tests",
]


@pytest.mark.parametrize("command", TEST_COMMANDS)
def test_a_recognised_test_command_is_a_test_run(command: str) -> None:
    assert runs_tests_only(command) and is_test_run("shell", {"command": command})


@pytest.mark.parametrize("command", NOT_TEST_COMMANDS)
def test_a_command_that_could_print_anything_else_is_not_a_test_run(command: str) -> None:
    assert not runs_tests_only(command) and not is_test_run("shell", {"command": command})
    assert is_test_run("run_tests", {}) and not is_test_run("read_file", {"path": "README.md"})
