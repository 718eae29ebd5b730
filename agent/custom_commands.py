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

A project command is text, not a program: it needs no trust, but the TUI shows its expansion before
its first run in a session, and headless prints it to stderr. Names are looked up by the front end
after its built-ins (built-ins win); each command is also reachable as `/project:NAME` or `/user:NAME`,
and a bare name the project and the user both define is the project's.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ctxagent.context.floor.bounded_json import toml_loads
from ctxagent.context.floor.state_paths import project_state_dir, user_config_dir

Scope = Literal["project", "user"]
Syntax = Literal["md", "toml"]  # Claude Code's Markdown template, Gemini CLI's TOML one
SUFFIXES: dict[str, Syntax] = {".md": "md", ".toml": "toml"}
SCOPES: tuple[Scope, ...] = ("project", "user")  # the order a bare name is looked up in
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

    @property
    def qualified(self) -> str:
        """`project:review`: the name that reaches it whatever else is called `review`."""
        return f"{self.scope}:{self.name}"


@dataclass(frozen=True)
class Loaded:
    commands: list[CustomCommand]
    problems: list[str]  # files that were skipped, and why (for a notice)


def command_dirs(root: Path | None) -> list[tuple[Scope, Path]]:
    dirs: list[tuple[Scope, Path]] = []
    if root is not None:
        dirs.append(("project", project_state_dir(root) / COMMANDS_DIR))
    dirs.append(("user", user_config_dir() / COMMANDS_DIR))
    return dirs


def load_commands(root: Path | None) -> Loaded:
    """The project's commands, then the user's, each folder in name order; never raises."""
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
            text = fh.read(MAX_TEMPLATE_BYTES + 1).decode("utf-8")
    except UnicodeDecodeError:
        return f"skipped {path}: not UTF-8 text"
    except OSError as exc:
        return f"skipped {path}: {exc.strerror or exc}"
    text = text.lstrip("\ufeff")
    if syntax == "toml":
        return _toml_command(scope, path, name, text)
    meta, body = parse_front_matter(text)
    return CustomCommand(name=name, scope=scope, path=path, template=body,
                         description=meta.get("description", ""),
                         argument_hint=meta.get("argument-hint", meta.get("argument_hint", "")))


def _toml_command(scope: Scope, path: Path, name: str, text: str) -> CustomCommand | str:
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
                         syntax="toml")


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
    """`project:review`, `user:review`, or `review` (the project's first)."""
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


def expand_prompt(root: Path | None, text: str) -> tuple[CustomCommand, str] | None:
    """Headless `-p "/name args"`: the command and its expansion; None when `text` names no custom command."""
    invoked = parse_invocation(text)
    if invoked is None:
        return None
    command = find_command(load_commands(root).commands, invoked[0])
    return (command, expand_command(command, invoked[1])) if command is not None else None
