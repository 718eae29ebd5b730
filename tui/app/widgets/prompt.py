"""The input box: multi-line, Enter sends, slash-command and `@file` completion, input history.

Enter sends; Shift+Enter, Ctrl+J, or a backslash before Enter start a new line (terminals without
the kitty keyboard protocol send Shift+Enter as a plain Enter, so the last two always work). A
bracketed paste arrives whole, newlines included. Tab completes `/co…` to a command and `@src/ap…`
to a file of the repository; → accepts the greyed-in suggestion. ↑/↓ walk the input history from
the first / last line of the box.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ctxagent.tui.app.commands import complete
from ctxagent.tui.app.safe import flat
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea

MENTION_AT_END = re.compile(r"(?:^|\s)@([^\s@]*)$")
MAX_FILE_MATCHES = 200


class InputHistory:
    """Submitted inputs, oldest first; ↑/↓ walk them and keep the draft being typed."""

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


def common_prefix(words: list[str]) -> str:
    common = words[0] if words else ""
    for w in words[1:]:
        while not w.startswith(common):
            common = common[:-1]
    return common


def file_matches(prefix: str, files: list[str]) -> list[str]:
    """Repository files for `@prefix`: those starting with it; if none does, those containing it."""
    low = prefix.lower()
    starts = [f for f in files if f.lower().startswith(low)]
    inside = [f for f in files if low in f.lower()] if low and not starts else []
    return (starts or inside)[:MAX_FILE_MATCHES]


class ChatInput(TextArea):
    """The prompt. Posts `ChatInput.Submitted` on Enter; the screen clears it after taking the text."""

    DEFAULT_CSS = """
    ChatInput { height: auto; min-height: 3; max-height: 10; }
    """
    BINDINGS = [
        Binding("up", "history_older", "Older input", show=False),
        Binding("down", "history_newer", "Newer input", show=False),
        Binding("tab", "complete", "Complete", show=False),
    ]
    PLACEHOLDER = "Ask for a change · / commands · @file attaches · !cmd runs · Shift+Enter or Ctrl+J: new line"

    class Submitted(Message):
        def __init__(self, chat_input: ChatInput, text: str) -> None:
            super().__init__()
            self.chat_input = chat_input
            self.text = text

        @property
        def control(self) -> ChatInput:
            return self.chat_input

    def __init__(self, *, files: Callable[[], list[str]] | None = None, id: str | None = None) -> None:
        super().__init__(placeholder=self.PLACEHOLDER, id=id, soft_wrap=True, show_line_numbers=False,
                         highlight_cursor_line=False, compact=False)
        self.past = InputHistory()  # not `history`: TextArea keeps its undo history there
        self.files = files  # the repository's files, for @ completion (None: no completion)
        self._file_cache: list[str] | None = None

    # -- the text as one value ----------------------------------------------------------------
    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def remember(self, text: str) -> None:
        self.past.add(text)

    # -- keys -----------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            row, col = self.cursor_location
            if col > 0 and self.document[row][col - 1] == "\\":  # "\" + Enter: a new line, as in a shell
                self.replace("\n", (row, col - 1), (row, col))
                return
            self.post_message(self.Submitted(self, self.text))
            return
        if event.key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        await super()._on_key(event)

    def take_ahead(self, event: events.Key, *, focused_elsewhere: bool) -> None:
        """A key that reached the screen, not this box: text goes into it, not nowhere — type-ahead at
        start-up (keys that arrived before the box had focus), or typing while a tool panel has focus.
        An Enter sends what the box holds, as it would have here (not while a panel has focus: it opens
        the panel); typed ahead before the terminal left cooked mode, it arrives as Ctrl+J (the tty
        turned its CR into a LF)."""
        if event.is_printable and event.character:
            event.stop()
            self.focus()
            self.insert(event.character)
        elif event.key in ("enter", "ctrl+j") and not focused_elsewhere:
            event.stop()
            self.focus()
            self.post_message(self.Submitted(self, self.text))

    def action_history_older(self) -> None:
        if self.cursor_location[0] > 0:
            self.action_cursor_up()
            return
        text = self.past.older(self.text)
        if text is not None:
            self.value = text

    def action_history_newer(self) -> None:
        if self.cursor_location[0] < self.document.line_count - 1:
            self.action_cursor_down()
            return
        text = self.past.newer()
        if text is not None:
            self.value = text

    # -- completion -----------------------------------------------------------------------------
    def _before_cursor(self) -> str:
        return self.get_text_range((0, 0), self.cursor_location)

    def _repo_files(self) -> list[str]:
        if self._file_cache is None:
            try:
                self._file_cache = list(self.files()) if self.files is not None else []
            except Exception:  # completion is a convenience: a repository we cannot list completes nothing
                self._file_cache = []
        return self._file_cache

    def candidates(self) -> tuple[str, list[str]]:
        """(what is being completed, its completions): a slash command at the start, or an @file."""
        before = self._before_cursor()
        if before.startswith(("/", "／")) and "\n" not in before and " " not in before:
            return before, complete(before)
        m = MENTION_AT_END.search(before)
        if m and self.files is not None:
            return m.group(1), file_matches(m.group(1), self._repo_files())
        return "", []

    def update_suggestion(self) -> None:
        typed, matches = self.candidates()
        first = matches[0] if matches else ""
        self.suggestion = first[len(typed):] if first.startswith(typed) and self.cursor_location == self.document.end else ""

    def action_complete(self) -> None:
        """Complete to the only match, or the common prefix of several (a toast lists them)."""
        typed, matches = self.candidates()
        if not matches:
            return
        is_command = typed.startswith(("/", "／"))
        target = matches[0] + (" " if is_command else "") if len(matches) == 1 else common_prefix(matches)
        if len(matches) == 1 or (target.startswith(typed) and len(target) > len(typed)):
            row, col = self.cursor_location
            self.replace(target, (row, col - len(typed)), (row, col))  # what was typed becomes the match
        else:
            shown = "  ".join(matches[:12]) + (f"  … {len(matches) - 12} more" if len(matches) > 12 else "")
            self.app.notify(flat(shown), title="commands" if is_command else "files", timeout=3, markup=False)
