"""The chat log's pieces: user messages, one collapsible panel per tool call, notices, and the
summary a compaction made (the assistant's streamed Markdown is tui/app/widgets/reply.py: Textual's Markdown
widget is not imported before the first frame).

A tool panel's title carries the status (pending / running / ok / error; for a test run what its
tests said, with the counts and the exit code) and the duration, so the log reads at a glance collapsed; expanded it shows the arguments, an output preview, and for edits
a syntax-highlighted diff. Everything shown here comes from outside (model, tools, user) and goes
through tui/app/safe.py: never parsed as markup, control sequences stripped.
"""

from __future__ import annotations

import json
from typing import Any

from ctxagent.context import run_outcome, strip_controls
from ctxagent.tui.app.safe import markup_safe, plain
from rich.text import Text
from textual.widgets import Collapsible, Static

PREVIEW_LINES = 12
FOLD_LINES = 6  # a longer message (a paste) shows its first lines and a count; the model gets all of it
STATUS_ICON = {"pending": "○", "running": "◐", "ok": "✓", "error": "✗", "denied": "⊘",
               # a test run's mark is what its tests said (context/test_runs.py), not whether the tool ran
               "tests passed": "✓", "tests failed": "✗", "no tests ran": "∅"}


def argument_summary(name: str, arguments: dict[str, Any], width: int = 48) -> str:
    """The one argument that says what a call does (path, pattern, command), shortened."""
    for key in ("path", "pattern", "command", "query", "file", "handle", "text"):
        if key in arguments and arguments[key] not in (None, ""):
            value = str(arguments[key]).replace("\n", " ")
            return value if len(value) <= width else value[: width - 1] + "…"
    if not arguments:
        return ""
    compact = json.dumps(arguments, ensure_ascii=False)
    return compact if len(compact) <= width else compact[: width - 1] + "…"


def preview(content: str, lines: int = PREVIEW_LINES, note: str = "") -> str:
    """The first lines of a tool's output (or of a long message), with a count of what is not shown."""
    all_lines = content.splitlines()
    if len(all_lines) <= lines:
        return content
    return "\n".join(all_lines[:lines]) + f"\n… {len(all_lines) - lines:,} more lines{note}"


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage { margin: 1 0 0 0; padding: 0 1; border-left: thick $accent; color: $text; }
    """

    def __init__(self, text: str, turn: int | None = None) -> None:
        label = Text()
        label.append("you ", style="bold")
        if turn is not None:
            label.append(f"#{turn} ", style="dim")
        lines = len(text.splitlines())
        shown = preview(text, FOLD_LINES, f" ({lines:,} in all, {len(text):,} characters — all sent to the model)")
        label.append_text(plain(shown))
        super().__init__(label)
        self.text = text  # the whole message, as sent
        self.folded = shown != text


class ToolPanel(Collapsible):
    """One tool call. `finish()` fills in the result; the title shows status and duration."""

    DEFAULT_CSS = """
    ToolPanel { margin: 0; padding: 0; border: none; background: $panel; }
    ToolPanel.-error CollapsibleTitle { color: $error; }
    ToolPanel.-denied CollapsibleTitle { color: $warning; }
    ToolPanel .tool-args { color: $text-muted; padding: 0 1; }
    ToolPanel .tool-output { padding: 0 1; }
    """

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any], status: str = "running") -> None:
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.status = status
        self.duration_ms: int | None = None
        self.content = ""
        self.meta: dict[str, Any] = {}
        self.detail = ""  # a test run's counts and exit code
        self._args = Static(self._args_text(), classes="tool-args")
        self._output = Static("", classes="tool-output")
        super().__init__(self._args, self._output, title=self._title_text(), collapsed=True)

    def _args_text(self) -> Text:
        text = plain(json.dumps(self.arguments, ensure_ascii=False, indent=1))
        text.overflow = "fold"
        return text

    def _title_text(self) -> str:
        parts = [f"{STATUS_ICON.get(self.status, '?')} {self.tool_name}"]
        if self.detail:  # a test run: what its tests said comes first, the command after
            parts.append(f"{self.status}: {self.detail}")
        summary = argument_summary(self.tool_name, self.arguments)
        if summary:
            parts.append(summary)
        if not self.detail:
            parts.append(self.status)
        if self.duration_ms is not None:
            parts.append(f"{self.duration_ms} ms")
        spill = self.meta.get("spill")
        if spill:
            parts.append("spilled")
        return markup_safe(" · ".join(parts))

    def set_status(self, status: str) -> None:
        self.status = status
        self.title = self._title_text()

    def finish(self, content: str, is_error: bool, duration_ms: int, meta: dict[str, Any] | None = None) -> None:
        self.content = content
        self.meta = dict(meta or {})
        self.duration_ms = duration_ms
        # refused before it ran (the permission box, a pre_tool hook): not a tool error, and its time
        # is ctxagent's deciding, never the wait for the user's answer (agent/tool_calls.py)
        self.status = "denied" if self.meta.get("denied") else "error" if is_error else "ok"
        outcome = run_outcome(self.meta) if not is_error else None
        if outcome is not None:
            self.status, self.detail = outcome.headline, outcome.detail
        denied = self.status == "denied"
        self.set_class((is_error and not denied) or (outcome is not None and outcome.verdict == "fail"), "-error")
        self.set_class(denied, "-denied")
        self.title = self._title_text()
        diff = self.meta.get("diff")
        if isinstance(diff, str) and diff.strip():
            from rich.syntax import Syntax  # pygments' lexer table: not before the first frame

            self._output.update(Syntax(strip_controls(diff), "diff", theme="ansi_dark", word_wrap=True))
        else:
            text = plain(preview(content))
            text.overflow = "fold"
            self._output.update(text)


class NoticeLine(Static):
    DEFAULT_CSS = """
    NoticeLine { color: $text-muted; padding: 0 1; }
    NoticeLine.-warning { color: $warning; }
    NoticeLine.-error { color: $error; }
    """

    def __init__(self, message: str, level: str = "info") -> None:
        icon = {"warning": "⚠ ", "error": "✗ "}.get(level, "· ")
        super().__init__(plain(icon + message), classes=f"-{level}")
        self.message = message
        self.level = level


class SummaryPanel(Collapsible):
    """A compaction's summary in the chat: what now stands in for older turns (the originals stay in
    the log, /rewind brings them back). Open when just made, so the user reads what was kept."""

    DEFAULT_CSS = """
    SummaryPanel { margin: 0; padding: 0; border: none; background: $panel; }
    SummaryPanel .summary-text { padding: 0 1; }
    """

    def __init__(self, title: str, summary: str, *, collapsed: bool = True) -> None:
        self.summary = summary
        body = plain(summary or "(empty summary)")
        body.overflow = "fold"
        super().__init__(Static(body, classes="summary-text"), title=markup_safe(title), collapsed=collapsed)
