"""Custom slash commands: prompt templates in `.ctxagent/commands/` (the project's) and the user config
dir's `commands/` (the user's): `NAME.md` in the shape Claude Code uses, `NAME.toml` in Gemini CLI's.

    ---
    description: Review a file for bugs
    argument-hint: FILE [focus]
    ---
    Review @$1 for bugs, focusing on $2. Everything typed: $ARGUMENTS

The file's name is the command's name (`review.md` → `/review`). Front matter is optional (`description`,
`argument-hint`; other keys are ignored). `$ARGUMENTS` is everything typed after the name, `$1` … `$9`
its words (shell-style quoting: `"two words"` is one); a missing one is empty. A template that uses
none of them gets the typed text appended on a line of its own (as Gemini CLI does). `@path` in the
expanded text attaches the file like any message (agent/user_tools.py).

A `.toml` command is Gemini CLI's shape: a `prompt` string (required) and a `description`; `{{args}}`
in the prompt is everything typed after the name, and a prompt without it gets the typed text
appended after a blank line (as Gemini CLI does). Gemini's `@{path}` is `@path` here; its `!{command}`
is left as text — a template is never a program. `$ARGUMENTS` and `$1` belong to the `.md` shape only.
A folder holding both `review.md` and `review.toml` keeps the `.md` and says the `.toml` was skipped.

Names are looked up by the front end after its built-ins (a built-in wins), then **the user's first**:
a name the user defines is the user's, so an archive's `.ctxagent/commands/review.md` never replaces
the user's `/review`; the project's stays reachable as `/project:review` (and each of the user's as
`/user:NAME`). A bare name only the project defines is the project's command.

A project command is the repository's text, and text is how a repository would steer the agent. So it
runs only after the user confirmed it — the app shows its expansion and asks; headless refuses one that
is not confirmed and says how (`ctxagent trust` shows the project's commands and records them) — and
the confirmation is keyed on the file's bytes (context/floor/trust_store.py `confirmed`): a changed file
asks again, showing what changed. Its expansion is logged with the command (`template_ref`: a
`TemplateRef` on the user event), so memory, the ledger and `said_by_user` take only what the user
typed after the name as the user's words, never the template's rules (context/events.py `user_words`).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxagent.context.events import TemplateRef
from ctxagent.context.floor import trust_store as store
from ctxagent.context.floor.bounded_json import toml_loads
from ctxagent.context.floor.display import show_controls
from ctxagent.context.floor.state_paths import STATE_DIR_NAME, project_state_dir, user_config_dir

Scope = Literal["project", "user"]
Syntax = Literal["md", "toml"]  # Claude Code's Markdown template, Gemini CLI's TOML one
# confirmed: the user confirmed these bytes; new: never confirmed; changed: other bytes than confirmed;
# mine: the user's own command (nothing to confirm)
Confirmation = Literal["confirmed", "new", "changed", "mine"]
SUFFIXES: dict[str, Syntax] = {".md": "md", ".toml": "toml"}
SCOPES: tuple[Scope, ...] = ("user", "project")  # the order a bare name is looked up in: the user's first
COMMANDS_DIR = "commands"
MAX_TEMPLATE_BYTES = 64 * 1024
NAME = re.compile(r"^[\w-]+$")  # letters (any script), digits, _ and -: `/审查` works
POSITIONAL = re.compile(r"\$([1-9])(?!\d)")
TOML_ARGS = "{{args}}"
GEMINI_FILE = re.compile(r"@\{([^{}\s]+)\}")  # Gemini's `@{path}`: this repository's `@path`
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass(frozen=True)
class CustomCommand:
    name: str  # the file's stem, without the slash
    scope: Scope
    path: Path
    template: str  # the body after the front matter
    description: str = ""
    argument_hint: str = ""
    syntax: Syntax = "md"
    digest: str = ""  # of the file's bytes the template was read from (what a confirmation is keyed on)
    source: str = ""  # the whole file as read (what a confirmation shows and keeps)

    @property
    def qualified(self) -> str:
        """`project:review`: the name that reaches it whatever else is called `review`."""
        return f"{self.scope}:{self.name}"

    @property
    def file_key(self) -> str:
        """A project command's file in the repository (`.ctxagent/commands/review.md`); a user's: its path."""
        return f"{STATE_DIR_NAME}/{COMMANDS_DIR}/{self.path.name}" if self.scope == "project" else str(self.path)


@dataclass(frozen=True)
class Loaded:
    commands: list[CustomCommand]
    problems: list[str]  # files that were skipped, and why (for a notice)


def command_dirs(root: Path | None) -> list[tuple[Scope, Path]]:
    """The folders, in SCOPES order (the user's first)."""
    folders: dict[Scope, Path | None] = {
        "user": user_config_dir() / COMMANDS_DIR,
        "project": project_state_dir(root) / COMMANDS_DIR if root is not None else None,
    }
    return [(scope, folder) for scope in SCOPES if (folder := folders[scope]) is not None]


def load_commands(root: Path | None) -> Loaded:
    """The user's commands, then the project's (SCOPES), each folder in name order; never raises."""
    commands: list[CustomCommand] = []
    problems: list[str] = []
    for scope, folder in command_dirs(root):
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"cannot read {folder}: {exc.strerror or exc}")
            continue
        seen: dict[str, str] = {}  # a name this folder defined: the file that did
        for entry in sorted(entries, key=lambda e: (Path(e.name).stem, e.name.endswith(".toml"), e.name)):
            syntax = SUFFIXES.get(Path(entry.name).suffix)
            if syntax is None:
                continue
            stem = entry.name[: -len(Path(entry.name).suffix)]
            if stem in seen:
                problems.append(f"skipped {entry.path}: {seen[stem]} defines /{stem} too")
                continue
            loaded = _load(scope, Path(entry.path), syntax)
            if isinstance(loaded, str):
                problems.append(loaded)
            else:
                seen[stem] = entry.name
                commands.append(loaded)
    return Loaded(commands, problems)


def _load(scope: Scope, path: Path, syntax: Syntax = "md") -> CustomCommand | str:
    name = path.name[: -len(path.suffix)]
    if not NAME.match(name):
        return f"skipped {path}: a command name holds letters, digits, _ and - only"
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):  # a symlink (to /etc/… or ~/.ssh/…), a FIFO: not read
            return f"skipped {path}: not a regular file"
        if st.st_size > MAX_TEMPLATE_BYTES:
            return f"skipped {path}: larger than {MAX_TEMPLATE_BYTES // 1024} KB"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_TEMPLATE_BYTES + 1)
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"skipped {path}: not UTF-8 text"
    except OSError as exc:
        return f"skipped {path}: {exc.strerror or exc}"
    if len(raw) > MAX_TEMPLATE_BYTES:  # grew between the size check and the read
        return f"skipped {path}: larger than {MAX_TEMPLATE_BYTES // 1024} KB"
    text, digest = source.lstrip("\ufeff"), store.digest(raw) or ""
    if syntax == "toml":
        return _toml_command(scope, path, name, text, digest, source)
    meta, body = parse_front_matter(text)
    return CustomCommand(name=name, scope=scope, path=path, template=body,
                         description=meta.get("description", ""),
                         argument_hint=meta.get("argument-hint", meta.get("argument_hint", "")),
                         digest=digest, source=source)


def _toml_command(scope: Scope, path: Path, name: str, text: str, digest: str, source: str) -> CustomCommand | str:
    """Gemini CLI's `description` / `prompt` file (other keys are ignored)."""
    try:
        data = toml_loads(text)  # a repository's file: nested to death is skipped, not a crash
    except ValueError as exc:  # TOMLDecodeError, TooDeepError
        return f"skipped {path}: not valid TOML ({exc})"
    prompt, description = data.get("prompt"), data.get("description", "")
    if not isinstance(prompt, str) or not prompt.strip():
        return f"skipped {path}: a .toml command needs a `prompt` string"
    if not isinstance(description, str):
        return f"skipped {path}: `description` must be a string"
    return CustomCommand(name=name, scope=scope, path=path, template=prompt, description=description.strip(),
                         syntax="toml", digest=digest, source=source)


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(`key: value` pairs of a leading `---` block, the rest). Quotes around a value are dropped."""
    m = FRONT_MATTER.match(text)
    if not m:
        return {}, text
    meta: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line.startswith((" ", "\t", "#")):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            meta[key.strip().lower()] = value
    return meta, text[m.end():]


def split_arguments(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: words as typed
        return arguments.split()


def expand_command(command: CustomCommand, arguments: str) -> str:
    """The prompt the template makes with `arguments` (see the module doc)."""
    arguments = arguments.strip()
    template = command.template
    if command.syntax == "toml":
        text = GEMINI_FILE.sub(r"@\1", template).replace(TOML_ARGS, arguments).strip()
        return f"{text}\n\n{arguments}" if arguments and TOML_ARGS not in template else text
    uses = "$ARGUMENTS" in template or POSITIONAL.search(template) is not None
    words = split_arguments(arguments)
    text = template.replace("$ARGUMENTS", arguments)
    text = POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text)
    text = text.strip()
    if arguments and not uses:
        text = f"{text}\n\n{arguments}"
    return text


def find_command(commands: list[CustomCommand], name: str) -> CustomCommand | None:
    """`project:review`, `user:review`, or `review` (the user's first: SCOPES)."""
    scope, sep, bare = name.partition(":")
    if sep:
        return next((c for c in commands if c.scope == scope and c.name == bare), None)
    for wanted in SCOPES:
        found = next((c for c in commands if c.scope == wanted and c.name == name), None)
        if found is not None:
            return found
    return None


def parse_invocation(text: str) -> tuple[str, str] | None:
    """`/review src/a.py` → ("review", "src/a.py"); None when the text is not a slash command
    (`//text` is an escaped slash; the full-width ／ of Chinese input methods counts as one)."""
    s = text.strip()
    if s.startswith("／"):
        s = "/" + s[1:]
    if not s.startswith("/") or s.startswith("//"):
        return None
    head, _, rest = s[1:].partition(" ")
    return (head, rest.strip()) if head else None


def expand_prompt(root: Path | None, text: str) -> tuple[CustomCommand, str, TemplateRef] | None:
    """Headless `-p "/name args"`: the command, its expansion and what the log records of it; None when
    `text` names no custom command."""
    invoked = parse_invocation(text)
    if invoked is None:
        return None
    command = find_command(load_commands(root).commands, invoked[0])
    if command is None:
        return None
    return command, expand_command(command, invoked[1]), template_ref(command, invoked[1])


def template_ref(command: CustomCommand, arguments: str) -> TemplateRef:
    """What the log records of an expansion: which command (its file's bytes), and what the user typed."""
    return TemplateRef(name=command.qualified, file=command.file_key, sha256=command.digest, typed=arguments.strip())


# -- confirming a project's commands ---------------------------------------------------------------------

def confirmation(root: Path | None, command: CustomCommand) -> Confirmation:
    """Whether the user confirmed this project command's bytes (see `Confirmation`)."""
    if command.scope != "project":
        return "mine"
    held = store.entry("confirmed", root) if root is not None else None
    recorded = held.get(command.file_key) if held is not None else None
    return "new" if recorded is None else "confirmed" if recorded == command.digest else "changed"


def confirm_commands(root: Path, commands: list[CustomCommand]) -> None:
    """Record that the user confirmed these project commands as they were read (their bytes)."""
    chosen = [c for c in commands if c.scope == "project" and c.digest]
    key = store.repo_key(root)

    def change(data: dict[str, dict[str, Any]]) -> None:
        held = data["confirmed"].get(key)
        data["confirmed"][key] = {**(held if isinstance(held, dict) else {}), **{c.file_key: c.digest for c in chosen}}

    store.update_list(change, keep=[c.source.encode("utf-8") for c in chosen])


def confirmation_text(root: Path | None, command: CustomCommand, expansion: str) -> str:
    """What the app shows before a project command runs: the message it sends, and, when its file changed
    since the user confirmed it, what changed (bounded; control characters shown)."""
    shown = store.bounded(expansion, command.file_key)
    if confirmation(root, command) != "changed":
        return shown
    return f"{shown}\n\n{describe_command(root, command)}"


def describe_command(root: Path | None, command: CustomCommand) -> str:
    """A project command's file as the user should see it before confirming it: what changed since they
    confirmed it, or all of it (bounded; control characters shown)."""
    held = store.entry("confirmed", root) if root is not None else None
    before_digest = held.get(command.file_key) if held is not None else None
    before = store.stored_content(before_digest)
    return store.describe_change(command.file_key, before, command.source.encode("utf-8"),
                                 known=before is not None, verb="confirmed")


def refusal(root: Path | None, command: CustomCommand) -> str:
    """Headless: why an unconfirmed project command was not sent, what it says, and how to confirm it."""
    state = confirmation(root, command)
    why = "it changed since you confirmed it" if state == "changed" else "you have not confirmed it"
    return (f"/{show_controls(command.qualified)} is this repository's command ({show_controls(command.file_key)}), "
            f"not one of yours, and {why}; nothing was sent.\n{describe_command(root, command)}\n"
            "If you wrote it or checked it, run `ctxagent trust` in the repository: it shows the project's "
            "commands and records them (or run it once in the app, which shows it and asks).")
