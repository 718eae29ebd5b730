"""The one registry of slash commands: parsing, completion, help, and the input suggester.

The same registry feeds the input box (`/co` + Tab → `/compact`), the command palette
(`App.get_system_commands`) and `/help`, so a command exists in exactly one place; what each one
does is in tui/app/slash.py (one handler per name here, checked by a test).

Custom commands (prompt templates: agent/custom_commands.py) are registered here too, after the
built-ins, by `set_custom`: a built-in wins a name, then the user's own command (a project's
`review.md` never takes the user's `/review`), and every custom command is also reachable as
`/project:NAME` or `/user:NAME` (the one a clash leaves only that way is listed so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxagent.agent import CustomCommand


@dataclass(frozen=True)
class SlashCommand:
    name: str  # without the slash
    help: str
    args: str = ""  # usage hint for the argument, "" when it takes none
    aliases: tuple[str, ...] = ()
    custom: CustomCommand | None = None  # a prompt template (tui/app/slash.py expands it); None: a built-in


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("compact", "Summarize older turns now (originals stay in the log)", "[focus]"),
    SlashCommand("rewind", "Go back to an earlier turn: code, conversation, or both"),
    SlashCommand("new", "Start a new session (optionally seeded with a summary)"),
    SlashCommand("handoff", "Draft a new session's first message from this one, edit it, start it", "[goal]"),
    SlashCommand("context", "What fills the window: slices, contents, red flags, history"),
    SlashCommand("memory", "Browse, search and forget memory records", "[query]"),
    SlashCommand("mcp", "MCP servers: state, tools and the schema tokens of each"),
    SlashCommand("remember", "Pin a constraint that is recalled into every step", "TEXT"),
    SlashCommand("model", "Show or switch the model", "[name]"),
    SlashCommand("clear", "Clear the screen (a fresh view; the log is kept)"),
    SlashCommand("resume", "Reopen an earlier session of this repository"),
    SlashCommand("cost", "Tokens and cost of this session so far"),
    SlashCommand("diff", "This session's changes (since the agent's first edit), in a scrollable screen"),
    SlashCommand("commit", "Commit this session's changes with a drafted message you edit and confirm"),
    SlashCommand("init", "Draft an AGENTS.md from the repository; you review it before it is written"),
    SlashCommand("agents", "Sub-agents of this session, running and finished; open one's transcript", "[id]"),
    SlashCommand("help", "List the slash commands and keys", aliases=("?",)),
    SlashCommand("quit", "Leave ctxagent", aliases=("exit",)),
)

_BY_NAME: dict[str, SlashCommand] = {}
for _cmd in COMMANDS:
    _BY_NAME[_cmd.name] = _cmd
    for _alias in _cmd.aliases:
        _BY_NAME[_alias] = _cmd


@dataclass(frozen=True)
class ParsedCommand:
    command: SlashCommand | None  # None: unknown command
    name: str  # as typed, without the slash
    arg: str  # the rest of the line, stripped


_CUSTOM: list[SlashCommand] = []
_CUSTOM_BY_NAME: dict[str, SlashCommand] = {}


def set_custom(commands: Sequence[CustomCommand]) -> None:
    """Register the session's custom commands, replacing the earlier ones; in `load_commands`' order (the
    user's first), so a bare name goes to the user's command, and a project's of that name is `/project:NAME`."""
    _CUSTOM.clear()
    _CUSTOM_BY_NAME.clear()
    for c in commands:
        where = "project" if c.scope == "project" else "yours"
        bare_free = c.name.lower() not in _BY_NAME and c.name not in _CUSTOM_BY_NAME
        name = c.name if bare_free else c.qualified
        entry = SlashCommand(name, f"{c.description or 'custom command'} ({where}: {c.path.name})",
                             c.argument_hint, aliases=(c.qualified,) if bare_free else (), custom=c)
        _CUSTOM.append(entry)
        for key in (name, *entry.aliases):
            _CUSTOM_BY_NAME[key] = entry


def all_commands() -> tuple[SlashCommand, ...]:
    """Built-ins, then the custom commands."""
    return (*COMMANDS, *_CUSTOM)


def lookup(name: str) -> SlashCommand | None:
    key = name.lstrip("/")
    return _BY_NAME.get(key.lower()) or _CUSTOM_BY_NAME.get(key)


def parse_slash(text: str) -> ParsedCommand | None:
    """`/compact keep the API notes` → (compact, "keep the API notes"); None when not a command.

    A line starting with "//" is an escaped slash: plain text for the model, not a command.
    Full-width "／" (Chinese input methods) counts as a slash.
    """
    s = text.strip()
    if s.startswith("／"):
        s = "/" + s[1:]
    if not s.startswith("/") or s.startswith("//"):
        return None
    head, _, rest = s[1:].partition(" ")
    if not head:
        return None
    return ParsedCommand(lookup(head), head, rest.strip())


def complete(prefix: str) -> list[str]:
    """Names (with slash) of the commands matching what was typed so far, registry order."""
    s = prefix.strip()
    if s.startswith("／"):
        s = "/" + s[1:]
    if not s.startswith("/") or " " in s:
        return []
    head = s[1:].lower()
    return [f"/{c.name}" for c in all_commands() if c.name.lower().startswith(head)]


def help_text() -> str:
    """/help: the keys and the input's forms first (they fit the first screen at 40 rows), then the
    commands, then custom commands."""
    rows = ["| command | what it does |", "| --- | --- |"]
    for c in all_commands():
        usage = _cell(f"/{c.name} {c.args}".strip()).replace("`", "'")
        rows.append(f"| `{usage}` | {_cell(c.help)} |")
    keys = (
        "**Keys**: Enter send · Shift+Enter, Ctrl+J or \\ then Enter: new line · Esc interrupt the running turn · "
        "Ctrl+C clear the input / interrupt, twice to quit · ↑/↓ input history · Tab complete · "
        "Shift+Tab permission mode (ask → auto-edit → plan) · Ctrl+O / Ctrl+G compact now / later (at the "
        "breakpoint bar) · Ctrl+P command palette · Ctrl+Q quit\n\n"
        "**In the input**: `@path` attaches a file of the repository (Tab completes it) · "
        "`!command` runs a shell command of yours (not asked; it runs in the sandbox) · "
        "`//text` sends text starting with a slash.\n\n"
    )
    custom = (
        "\n\n**Custom commands**: prompt templates in `.ctxagent/commands/NAME.md` (this project) and "
        "`commands/NAME.md` in your config folder; `$ARGUMENTS`, `$1`…`$9` and `@path` work in them. "
        "`NAME.toml` (Gemini CLI's `description` and `prompt`, with `{{args}}`) works too. "
        "A built-in keeps its name, and so does a command of yours: a project command of the same name is "
        "`/project:NAME` (and yours `/user:NAME`). A project command is the repository's text: it shows its "
        "expansion and asks before it runs, and again whenever its file changed."
    )
    return keys + "\n".join(rows) + custom


def _cell(text: str) -> str:
    """Text from a file, safe in a table cell: one line, no column breaks."""
    return " ".join(text.split()).replace("|", "\\|")


def unescape(text: str) -> str:
    """`//etc/hosts is odd` is sent to the model as `/etc/hosts is odd`."""
    s = text.strip()
    return s[1:] if s.startswith("//") else text
