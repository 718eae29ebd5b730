"""The input box: slash-command completion (Tab / →) and input history (↑ / ↓)."""

from __future__ import annotations

from ctxagent.tui.commands import SlashSuggester, complete
from textual.binding import Binding
from textual.widgets import Input


class InputHistory:
    """Submitted lines, oldest first; ↑/↓ walk them and keep the draft being typed."""

    def __init__(self, entries: list[str] | None = None, limit: int = 500) -> None:
        self.entries: list[str] = list(entries or [])
        self.limit = limit
        self._pos: int | None = None
        self._draft = ""

    def add(self, line: str) -> None:
        if line.strip() and (not self.entries or self.entries[-1] != line):
            self.entries.append(line)
            del self.entries[: -self.limit]
        self._pos = None

    def older(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._pos is None:
            self._draft = current
            self._pos = len(self.entries)
        if self._pos == 0:
            return None
        self._pos -= 1
        return self.entries[self._pos]

    def newer(self) -> str | None:
        if self._pos is None:
            return None
        self._pos += 1
        if self._pos >= len(self.entries):
            self._pos = None
            return self._draft
        return self.entries[self._pos]


class ChatInput(Input):
    BINDINGS = [
        Binding("up", "history_older", "Older input", show=False),
        Binding("down", "history_newer", "Newer input", show=False),
        Binding("tab", "complete", "Complete command", show=False),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(
            placeholder="Ask for a change · / for commands · Esc interrupts",
            suggester=SlashSuggester(),
            **kwargs,  # type: ignore[arg-type]
        )
        self.history = InputHistory()

    def _set(self, value: str) -> None:
        self.value = value
        self.cursor_position = len(value)

    def action_history_older(self) -> None:
        line = self.history.older(self.value)
        if line is not None:
            self._set(line)

    def action_history_newer(self) -> None:
        line = self.history.newer()
        if line is not None:
            self._set(line)

    def action_complete(self) -> None:
        """Complete to the first matching command, or to the common prefix of several."""
        matches = complete(self.value)
        if not matches:
            return
        if len(matches) == 1:
            self._set(matches[0] + " ")
            return
        common = matches[0]
        for m in matches[1:]:
            while not m.startswith(common):
                common = common[:-1]
        if len(common) > len(self.value.strip()):
            self._set(common)
        else:
            self.app.notify("  ".join(matches), title="commands", timeout=3)

    def remember(self, line: str) -> None:
        self.history.add(line)
