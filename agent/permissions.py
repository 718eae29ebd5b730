"""What a permission question is about: the key an "allow for this session" answer covers, and what
the user is shown before answering.

- `Allowance`: an answer covers one tool with exactly one command (shell, run_tests — a test command
  the model chose is a shell command like any other) or one path (write_file, edit_file), never the
  tool as a whole: "allow for session" on `run_tests` does not allow `run_tests(command="touch
  PWNED; …")`. Other tools (MCP tools, sub-agents later) are keyed on their exact arguments.
- `instruction_file_note`: an edit of `AGENTS.md` / `CLAUDE.md` (any depth, any case, through a
  symbolic or hard link) is asked every time; no mode and no allowance covers it, because the file
  becomes the agent's own instructions in later sessions.
- `preview_text` / `inline_text`: what the box, the headless refusal and the JSON `refused` list
  show. Nothing is hidden: a run of blank lines or blanks is one visible marker (40 newlines before
  `curl … | sh` push nothing out of view), and a preview too long to show says exactly how much is
  left out, keeping the end visible (the end of a long command, the last lines of a write).

- `must_ask`: whether a call waits for the user's yes. A call the user made from the prompt
  (`!command`, `@file`; agent/user_tools.py) is the user's own: typing it was the yes, so it is never
  asked, in any mode, plan mode included — it still runs confined to the repository and, a command, in
  the sandbox (tools/sandbox/).
- The permission modes (`PERMISSION_MODES`, the one definition): what runs unasked in each
  (`runs_unasked`), plan mode's refusal (`plan_refusal`: only read-only tools run; the model is told
  why) and the order Shift+Tab cycles them in (`next_mode`).

`ask_about` and `must_ask` put these together for `ToolRunner` (agent/tool_calls.py).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")  # become part of the system prompt (agent/instructions/loading.py)

# ask: every edit and command is asked · auto-edit: edits run unasked · plan: only read-only tools run,
# the model proposes a plan · yolo: nothing is asked (except what no mode covers: `Ask.always`)
PERMISSION_MODES = ("ask", "auto-edit", "plan", "yolo")
PLAN_MODE = "plan"
# What Shift+Tab cycles through; yolo joins only in a session started in it (a key never turns it on).
CYCLE_MODES = ("ask", "auto-edit", "plan")

# A preview shows everything up to these sizes; past them, the head and the tail with what is between
# counted. Big enough for any command a person reads; small enough for the box to draw at once.
PREVIEW_LINES, PREVIEW_HEAD_LINES, PREVIEW_TAIL_LINES = 300, 200, 100
PREVIEW_CHARS, PREVIEW_HEAD_CHARS, PREVIEW_TAIL_CHARS = 30_000, 20_000, 10_000
BLANK_LINES_RUN = 3  # this many empty lines in a row or more are shown as one marker line
BLANKS_RUN = 40  # this many spaces or tabs in a row or more are shown as one marker


@dataclass(frozen=True)
class Allowance:
    """What one "allow for this session" answer covers: `tool` with exactly `target` (a command
    line, a path, or — for a tool with neither — its arguments as canonical JSON)."""

    tool: str
    target: str


@dataclass(frozen=True)
class Ask:
    """One call as the permission rule sees it (`ask_about`)."""

    allowance: Allowance
    preview: str  # what the box shows: complete, or saying exactly what is left out
    note: str = ""  # what the user should know: why this is asked even in yolo, what a test command is
    always: bool = False  # no permission mode and no allowance covers this call


def canonical(args: Any) -> str:
    return json.dumps(args, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def allowance(tool: str, kind: str, args: dict[str, Any], command: str = "") -> Allowance:
    """The key of a call: a command tool's exact command (`command`: what will run, e.g. the detected
    test command of a bare run_tests), an edit's exact path, else the exact arguments — an outside
    (MCP) tool can do anything, so "allow for session" covers it with exactly these arguments."""
    if kind == "command" and (command or tool == "run_tests"):
        return Allowance(tool, command)
    path = args.get("path")
    if kind == "edit" and isinstance(path, str) and path:
        return Allowance(tool, path)
    if tool == "store_memory":
        return Allowance(tool, "scope:" + str(args.get("scope") or "project"))
    return Allowance(tool, canonical(args))


def ask_about(tool: str, kind: str, args: dict[str, Any], *, root: Path, command: str = "") -> Ask:
    """The key, the preview and the note of one call that needs the user's yes."""
    key = allowance(tool, kind, args, command)
    if kind == "command" and (command or tool == "run_tests"):
        chosen = tool == "run_tests" and bool(str(args.get("command") or "").strip())
        note = ("The model chose this test command: it runs like any shell command." if chosen else "")
        return Ask(key, preview_text(command) if command else "(no test command detected)", note)
    instruction_note = instruction_file_note(tool, kind, args, root)
    return Ask(key, edit_preview(tool, args), instruction_note or "", always=instruction_note is not None)


# -- the modes ----------------------------------------------------------------------------------

def runs_unasked(mode: str, kind: str) -> bool:
    """Whether a call of permission `kind` ("edit", "command") runs without a question in `mode`."""
    return mode == "yolo" or (mode == "auto-edit" and kind == "edit")


def must_ask(key: Allowance, kind: str, mode: str, allowed: set[Allowance], *, always: bool,
             by_user: bool = False) -> bool:
    """Whether a call waits for the user's answer: never the user's own call (`by_user`); always one
    no mode and no allowance covers (`always`: an instruction file, memory for every project); else
    unless the permission mode (`runs_unasked`) or an "allow for this session" answer covers it."""
    if by_user:
        return False
    if always:
        return True
    return not (runs_unasked(mode, kind) or key in allowed)


def plan_refusal(mode: str, tool: str, kind: str) -> str | None:
    """Plan mode's answer to a call that is not read-only (what the model is told); None when it may run.

    The tools' schemas stay in every request whatever the mode: taking them out in plan mode and back
    after would change the cached prefix (tool schemas come first) at each switch; a refusal is one
    short tool result."""
    if mode != PLAN_MODE or kind == "read":
        return None
    what = "change files" if kind == "edit" else "run a command"
    return (f"refused: plan mode is on, and {tool} would {what}. In plan mode only read-only tools run "
            f"(read_file, list_files, grep, git_status, git_diff, read_event …). Read what you need, then "
            f"answer with your plan as the final message: the user accepts it to switch to edit mode, "
            f"and you carry it out then.")


def more_permissive(mode: str, than: str) -> bool:
    """Whether `mode` lets more run unasked than `than` (plan < ask < auto-edit < yolo); an unknown mode
    counts as the most permissive (it is never taken from a log)."""
    order = (PLAN_MODE, "ask", "auto-edit", "yolo")
    rank = {m: i for i, m in enumerate(order)}
    return rank.get(mode, len(order)) > rank.get(than, len(order))


def next_mode(mode: str, started: str = "ask") -> str:
    """The mode Shift+Tab switches to from `mode`; `started`: the session's mode at its start."""
    cycle = CYCLE_MODES + (("yolo",) if started == "yolo" else ())
    return cycle[(cycle.index(mode) + 1) % len(cycle)] if mode in cycle else cycle[0]


# -- instruction files ----------------------------------------------------------------------------

def is_instruction_name(name: str) -> bool:
    """AGENTS.md / CLAUDE.md in any case (a case-insensitive file system opens `agents.md` as it)."""
    return name.casefold() in {n.casefold() for n in INSTRUCTION_FILES}


def instruction_file_note(tool: str, kind: str, args: dict[str, Any], root: Path) -> str | None:
    """Why an edit must be confirmed on its own, when it writes an instruction file; else None.

    The file is found by the name given, by where a symbolic link in the repository leads, and by
    hard links: an existing file with other links is compared with the instruction files of every
    folder from the root down to it."""
    path = args.get("path")
    if kind != "edit" or not isinstance(path, str) or not path.strip():
        return None
    hit = is_instruction_name(PurePosixPath(path).name)
    try:
        target = (Path(root) / path).resolve()
        hit = hit or is_instruction_name(target.name)
        if not hit and target.is_file() and target.stat().st_nlink > 1:
            hit = _hard_linked_instruction(Path(root).resolve(), target)
    except (OSError, ValueError, RuntimeError):  # a loop of links, a bad name: the tool refuses it later
        pass
    if not hit:
        return None
    return (f"{path} is an instruction file: what it says becomes part of the agent's instructions in later "
            f"sessions. Each edit of it is asked here — auto-edit, yolo and \"allow for this session\" do not "
            f"cover it.")


def _hard_linked_instruction(root: Path, target: Path) -> bool:
    try:
        rel = target.parent.relative_to(root)
    except ValueError:
        return False
    folders = [root, *(root.joinpath(*rel.parts[:i + 1]) for i in range(len(rel.parts)))]
    return any(candidate.is_file() and os.path.samefile(candidate, target)
               for folder in folders for candidate in (folder / name for name in INSTRUCTION_FILES))


# -- what is shown --------------------------------------------------------------------------------

_BLANK_LINES = re.compile(rf"(?:^[ \t]*\n){{{BLANK_LINES_RUN},}}", re.MULTILINE)
_BLANKS = re.compile(rf"[ \t]{{{BLANKS_RUN},}}")


def _count_marker(n: int, what: str) -> str:
    return f"⟨{n:,} {what}⟩"


def collapse_blanks(text: str) -> str:
    """Runs of empty lines and of blanks as one counted marker each."""
    text = _BLANK_LINES.sub(lambda m: _count_marker(m.group(0).count("\n"), "empty lines") + "\n", text)
    return _BLANKS.sub(lambda m: _count_marker(len(m.group(0)), "blanks"), text)


def preview_text(text: str) -> str:
    """`text` for the permission box: blank runs counted, and when it is still too long, the head
    and the tail with the lines (and characters) between them counted."""
    text = collapse_blanks(text)
    lines = text.split("\n")
    if len(lines) > PREVIEW_LINES:
        cut = lines[PREVIEW_HEAD_LINES:len(lines) - PREVIEW_TAIL_LINES]
        chars = sum(len(line) + 1 for line in cut)
        marker = f"⟨… {len(cut):,} lines ({chars:,} characters) not shown here …⟩"
        text = "\n".join([*lines[:PREVIEW_HEAD_LINES], marker, *lines[-PREVIEW_TAIL_LINES:]])
    if len(text) > PREVIEW_CHARS:
        hidden = len(text) - PREVIEW_HEAD_CHARS - PREVIEW_TAIL_CHARS
        text = (text[:PREVIEW_HEAD_CHARS] + f"\n⟨… {hidden:,} characters not shown …⟩\n"
                + text[-PREVIEW_TAIL_CHARS:])
    return text


def inline_text(text: str, limit: int = 300) -> str:
    """`text` on one line (a headless refusal, the JSON `refused` list): newlines shown as ⏎, blank
    runs counted, and past `limit` characters the head and the tail with the count between them."""
    flat = collapse_blanks(text.strip("\n")).replace("\r", "").replace("\n", " ⏎ ")
    if len(flat) <= limit:
        return flat
    head, tail = limit * 2 // 5, limit * 3 // 5  # the end of a command is where `| sh` hides
    return f"{flat[:head]} ⟨… {len(flat) - head - tail:,} characters not shown …⟩ {flat[-tail:]}"


def edit_preview(tool: str, args: dict[str, Any]) -> str:
    """An edit as the box shows it: the path and the change, all of it (`preview_text`)."""
    path = str(args.get("path", "?"))
    if tool == "edit_file":
        old = "\n".join("- " + line for line in str(args.get("old_text", "")).split("\n"))
        new = "\n".join("+ " + line for line in str(args.get("new_text", "")).split("\n"))
        return f"{path}\n{preview_text(old + chr(10) + new)}"
    if tool == "write_file":
        content = str(args.get("content", ""))
        size = f"{len(content.splitlines()):,} lines, {len(content):,} characters"
        return f"{path} ({size})\n{preview_text(content)}"
    if tool == "store_memory":
        where = "for every project (user memory)" if args.get("scope") == "user" else "in this project's memory"
        return f"remember {where}, as a {args.get('type', 'note')}:\n{preview_text(str(args.get('content', '')))}"
    return preview_text(json.dumps(args, ensure_ascii=False, indent=1, default=str))
