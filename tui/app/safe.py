"""Text from outside — the model, tools, the repository, memory, the user — as widgets take it.

Two rules meet here. Textual parses a plain `str` given to Static, Label, Button, DataTable cells,
options and titles as markup, so `[/]` in a file name or a memory record would crash the app: such
text is given as a `rich.text.Text` (never parsed), or escaped where only a string is accepted.
And what is displayed is what is there: the display edge (`ctxagent.context.floor.display`,
`for_display`) removes control sequences (or, for what the user must judge, shows them) and shows
every invisible character (a bidi override, a zero-width joiner) as `⟨U+202E⟩`; every helper below
goes through it.
"""

from __future__ import annotations

from ctxagent.context import show_controls, strip_controls
from rich.text import Text
from textual.markup import escape


def plain(text: object, style: str = "") -> Text:
    """`text` as a Text: no markup parsed, control sequences stripped."""
    return Text(strip_controls(str(text)), style=style)


def judged(text: object, style: str = "") -> Text:
    """For what the user approves (the permission box): every control character shown visibly."""
    return Text(show_controls(str(text)), style=style)


def flat(text: object) -> str:
    """For the APIs that take a string and parse no markup (a toast with markup=False)."""
    return strip_controls(str(text))


def markup_safe(text: object) -> str:
    """For the few APIs that take only a markup string (a Collapsible's title)."""
    return escape(strip_controls(str(text)))


def one_line(text: object, width: int) -> str:
    """The first non-empty line of `text`, stripped of controls and cut to `width` characters."""
    line = next((ln.strip() for ln in strip_controls(str(text)).splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"
