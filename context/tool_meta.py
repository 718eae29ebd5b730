"""THE definition of "this tool call changed files, and which" — used by compaction summaries, the
stale-answer rule, memory ingest, the rewind picker and the benchmarks alike.

A tool result's `meta.changed_files` (ToolMeta) is the answer when the tool set it (ctxagent's own
edit_file / write_file do, and the loop fills it for shell commands). Otherwise — replayed traffic
from other agents, older logs — the call itself is read: the edit tools of Claude Code (Edit, Write,
MultiEdit, NotebookEdit), Codex (apply_patch), SWE-agent / OpenHands (str_replace_editor), ctxagent's
own, and shell commands whose redirections, `sed -i`, `perl -i` or `tee` write files. A call that
failed changed nothing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

from ctxagent.context.events import ToolResultData
from ctxagent.context.request import ToolCall

# name -> the argument keys that hold the path it writes (first present wins)
EDIT_TOOLS: dict[str, tuple[str, ...]] = {
    "edit_file": ("path",),
    "write_file": ("path",),
    "multi_edit": ("path", "file_path"),
    "create_file": ("path", "file_path"),
    "delete_file": ("path", "file_path"),
    "Edit": ("file_path",),
    "Write": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "str_replace_editor": ("path",),
    "str_replace_based_edit_tool": ("path",),
    "edit": ("path", "file_path"),
}
PATH_ARGS = ("path", "file_path", "notebook_path", "filename", "file")  # a call's arguments that name a file
READ_ONLY_EDITOR_COMMANDS = frozenset({"view"})  # str_replace_editor's command that changes nothing
PATCH_TOOLS = frozenset({"apply_patch", "patch"})
SHELL_TOOLS = frozenset({"shell", "bash", "Bash", "execute_bash", "run_command", "run_shell_command", "terminal"})

_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\+\+\+ (?:b/)?(.+?)\s*$", re.MULTILINE)
_REDIRECT = re.compile(r"^(?:\d?>>?|&>>?|>\|)(.*)$")
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "(", ")", "{", "}"})


def is_edit_tool(name: str) -> bool:
    """A tool whose purpose is to change files (edits, writes, patches) — not a shell that may."""
    return name in EDIT_TOOLS or name in PATCH_TOOLS


def changed_files_of_call(name: str, arguments: dict[str, Any]) -> list[str]:
    """Files a call of tool `name` with `arguments` writes, read from the call alone."""
    args = arguments if isinstance(arguments, dict) else {}
    if name in EDIT_TOOLS:
        if name in ("str_replace_editor", "str_replace_based_edit_tool") and args.get("command") in READ_ONLY_EDITOR_COMMANDS:
            return []
        for key in EDIT_TOOLS[name]:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                return [value.strip()]
        return []
    if name in PATCH_TOOLS:
        patch = next((v for k in ("input", "patch", "diff", "content") if isinstance(v := args.get(k), str)), "")
        return _unique(a or b for a, b in _PATCH_FILE.findall(patch) if (a or b) != "/dev/null")
    if name in SHELL_TOOLS:
        command = next((v for k in ("command", "cmd", "script") if isinstance(v := args.get(k), str)), "")
        return shell_written_files(command)
    return []


def changed_files_of(call: ToolCall | None, result: ToolResultData) -> list[str]:
    """Files one call changed: the result's own account if it gave one, else read from the call."""
    if result.is_error:
        return []
    if result.meta.changed_files:
        return list(result.meta.changed_files)
    name = call.name if call is not None else result.name
    args = call.arguments if call is not None else {}
    found = changed_files_of_call(name, args)
    if not found and is_edit_tool(name):
        return list(result.meta.files)  # no call at hand (or an older log): an edit tool names its file under `files`
    return found


def shell_written_files(command: str) -> list[str]:
    """Files a shell command line writes through `>`/`>>`, `tee`, `sed -i` or `perl -i`.

    A heuristic over the words of the command (heredoc bodies and quoting handled by shlex); it
    misses files written by programs (python scripts, `git apply`), which only the tool's own
    report (meta.changed_files) can know."""
    if not command or not any(tok in command for tok in (">", "tee", "sed", "perl")):
        return []
    out: list[str] = []
    for line in _command_lines(command):
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;()<>")
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:
            continue
        out += _written_by(words)
    return _unique(out)


def _command_lines(command: str) -> list[str]:
    """The command's lines without heredoc bodies (`cat > f <<EOF … EOF`)."""
    lines: list[str] = []
    ending: str | None = None
    for line in command.splitlines():
        if ending is not None:
            if line.strip() == ending:
                ending = None
            continue
        lines.append(line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m:
            ending = m.group(1)
    return lines


def _written_by(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    segment: list[str] = []  # words of the current simple command
    while i < len(words):
        w = words[i]
        if w in (">", ">>", ">|") or (w in ("&>", "&>>")):
            if i + 1 < len(words) and words[i + 1] not in _SEPARATORS and words[i + 1] != "&":
                out.append(words[i + 1])
            i += 2
            continue
        m = _REDIRECT.match(w)
        if m and m.group(1) and not m.group(1).startswith("&"):
            out.append(m.group(1))
            i += 1
            continue
        if w in _SEPARATORS or w == "<":
            out += _written_by_command(segment)
            segment = []
            i += 2 if w == "<" else 1  # `< file` is read, not written
            continue
        segment.append(w)
        i += 1
    out += _written_by_command(segment)
    return [f for f in out if f not in _NOT_FILES and not f.startswith("&") and f]


def _written_by_command(words: list[str]) -> list[str]:
    if not words:
        return []
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog == "tee":
        return [a for a in args if not a.startswith("-")]
    if prog == "sed" and any(a == "-i" or a.startswith("-i") or a == "--in-place" or a.startswith("--in-place=") for a in args):
        return _files_after_script(args, script_flags=("-e", "--expression", "-f", "--file"))
    if prog == "perl" and any(a.startswith("-i") or (a.startswith("-") and "i" in a[1:] and not a.startswith("--")) for a in args):
        return _files_after_script(args, script_flags=("-e", "-E"))
    return []


def _files_after_script(args: list[str], script_flags: tuple[str, ...]) -> list[str]:
    """sed/perl operands: the script is the first non-option word unless -e/-f gave it."""
    files: list[str] = []
    script_given = False
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in script_flags:
            script_given, skip = True, True
            continue
        if a.startswith("-") and a != "-":
            if any(a.startswith(f) and a != f for f in script_flags if f.startswith("-") and not f.startswith("--")):
                script_given = True  # -e'script' glued
            continue
        if not script_given:
            script_given = True  # this word is the script
            continue
        files.append(a)
    return files


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(x for x in items if x))


# -- calls that read a document: prose the user expects honoured (specs, issues, READMEs, web pages) --
DOCUMENT_EXTENSIONS = frozenset({"md", "markdown", "rst", "txt", "adoc", "org", "textile", "mdx"})
WEB_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "read_url", "browse", "browser"})
READ_TOOLS = frozenset({"read_file", "read", "view", "open_file", "cat", "str_replace_editor", "str_replace_based_edit_tool"})
# an issue tracker or review tool printing an item: `gh issue view 12`, `bd show X`, `jira issue view`, `issues show 11`
_ISSUE_COMMAND = re.compile(
    r"(?:^|[\s;&|(])(?:gh|glab|bd|jira|linear|tea|hub|issues?|tk|beads)\s+(?:[\w-]+\s+){0,2}(?:show|view|read|get|cat)\b")
_SHELL_DOC_READ = re.compile(r"(?:^|[\s;&|(])(?:cat|head|tail|less|more|bat|nl|sed\s+-n\s+\S+)\s+(?:-\S+\s+)*['\"]?([^\s'\"|;&]+)")


def _is_document_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[-1].lower() in DOCUMENT_EXTENSIONS


def reads_document(name: str, arguments: dict[str, Any]) -> bool:
    """Whether a call reads a document (a spec, an issue, a README, a web page) rather than code or data."""
    args = arguments if isinstance(arguments, dict) else {}
    lowered = name.lower()
    if lowered in WEB_TOOLS:
        return True
    if lowered in READ_TOOLS:
        if name in ("str_replace_editor", "str_replace_based_edit_tool") and args.get("command") != "view":
            return False
        path = next((v for k in ("path", "file_path", "filename", "file") if isinstance(v := args.get(k), str)), "")
        return _is_document_path(path)
    if name in SHELL_TOOLS:
        command = next((v for k in ("command", "cmd", "script") if isinstance(v := args.get(k), str)), "")
        if _ISSUE_COMMAND.search(command):
            return True
        return any(_is_document_path(m.group(1)) for m in _SHELL_DOC_READ.finditer(command))
    return False


# A test runner, at the start of a pipeline stage (after env assignments and wrappers).
_TEST_RUNNER = re.compile(
    r"^(?:\S*/)?(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)\b"
    r"|^(?:\S*/)?(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test\b|^(?:\S*/)?(?:go|cargo|mix|dotnet|gradle|gradlew|mvn|make|deno)\s+test\b"
    r"|^(?:\S*/)?python[\d.]*\s+-m\s+(?:pytest|unittest)\b")
_WRAPPERS = re.compile(r"^(?:(?:\w+=\S*|env|time|nice|timeout\s+\S+|xvfb-run|npx|(?:uv|poetry|pipenv|pdm|hatch)\s+run)\s+)+")
# Steps that may come before the run (`cd repo && . .venv/bin/activate && pytest`): they print nothing of a file.
_SETUP_STEP = re.compile(r"^(?:cd(?:\s+\S+)?|(?:source|\.)\s+\S+|export\s+\w+=\S*|\w+=\S*|set\s+[-+]\w+|true|:)$")
_COMMAND_SEPARATORS = frozenset({"&&", "||", ";", "&", ";;"})
_PIPES = frozenset({"|", "|&"})
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">&", "&>", "&>>", ">|"})  # they send output away: the target goes too
# Filters a run's output may be piped through; with no file operand, they show only the run's output.
_FILTERS = frozenset({"head", "tail", "sort", "uniq", "wc", "cat", "less", "more", "tee", "grep", "egrep", "fgrep", "rg"})
_PATTERN_FILTERS = frozenset({"grep", "egrep", "fgrep", "rg"})  # take one pattern operand
_COUNT = re.compile(r"^[+-]?\d+$")  # `tail -n +30`, `head -5`: a count, not a file


def _shell_words(command: str) -> list[tuple[str, bool]] | None:
    """`command` as (token, is_operator) pairs, quotes respected; None when it cannot be read, or
    when it holds what could run or read something else unseen (command substitution, input redirection)."""
    if "`" in command or "$(" in command or "<(" in command or ">(" in command:
        return None
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    return [(t, bool(t) and all(ch in "();<>|&" for ch in t)) for t in tokens]


def _filter_stage(words: list[str]) -> bool:
    if not words or words[0] not in _FILTERS:
        return False
    if words[0] == "tee":
        return True  # writes the output to files, and passes it on unchanged
    operands = [w for w in words[1:] if not w.startswith("-") and not _COUNT.match(w)]
    return len(operands) <= (1 if words[0] in _PATTERN_FILTERS else 0)


def runs_tests_only(command: str) -> bool:
    """Whether a shell command is a recognised test command: a test runner (pytest, python -m
    unittest, tox, jest, vitest, go test, cargo test, npm test, make test …), optionally with
    set-up steps (`cd DIR`, `source FILE`, `export X=Y`, `|| true`) joined by `&&`, `||` or `;`, with
    env assignments and wrappers (`timeout 60`, `uv run`, `npx` …), output redirections, and pipes
    into filters that add nothing of their own (`| tail -30`, `| grep FAILED`, `| tee log`). Anything
    else in the command (`cat README.md; pytest`, `pytest | cat notes.txt`, `pytest < file`,
    `$(…)`) could print other text, so it is not one: failing-test lines are read only from a test
    runner's own output (context/ledger.py)."""
    tokens = _shell_words(command or "")
    if not tokens:
        return False
    commands: list[list[list[str]]] = [[[]]]  # commands, each a pipeline of stages, each its words
    skip = False
    for i, (tok, is_op) in enumerate(tokens):
        if skip:
            skip = False
            continue
        if not is_op:
            commands[-1][-1].append(tok)
        elif tok in _COMMAND_SEPARATORS:
            commands.append([[]])
        elif tok in _PIPES:
            commands[-1].append([])
        elif tok in _OUTPUT_REDIRECTS:
            stage = commands[-1][-1]
            if stage and stage[-1].isdigit() and i > 0 and not tokens[i - 1][1]:
                stage.pop()  # the fd of `2>&1`, `2> err.log`
            skip = True  # the target (a file, or the fd of `>&1`)
        else:
            return False  # `<`, `<<`, a subshell: input from elsewhere
    pipelines = [[" ".join(stage) for stage in c] for c in commands if any(c)]
    runs = [p for p in pipelines if not (len(p) == 1 and _SETUP_STEP.match(p[0]))]
    if len(runs) != 1 or any(not stage for stage in runs[0]):
        return False
    first, *filters = runs[0]
    runner = _WRAPPERS.sub("", first)
    return bool(_TEST_RUNNER.match(runner)) and all(_filter_stage(f.split()) for f in filters)


def is_test_run(name: str, arguments: dict[str, Any]) -> bool:
    """Whether a call runs the test suite: ctxagent's run_tests, or a shell command that is a
    recognised test command (`runs_tests_only`)."""
    if name == "run_tests":
        return True
    if name not in SHELL_TOOLS:
        return False
    args = arguments if isinstance(arguments, dict) else {}
    command = next((v for k in ("command", "cmd", "script") if isinstance(v := args.get(k), str)), "")
    return runs_tests_only(command)
