"""`/memory [query]`: browse and search the project's memory records, and forget one.

Works with any store that has `search(query, ...)`, `list(...)` and `forget(id)` returning records
with `id`, `type`, `content`, `turn` (the SQLite `MemoryStore`). Forgetting asks once (press Delete
twice) because it is the one destructive thing the UI offers — Delete, not a letter: typing is text, and
what is typed at the list goes to the search (tui/app/screens/question.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ctxagent.context import RETIRED
from ctxagent.tui.app.safe import plain
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

if TYPE_CHECKING:
    from ctxagent.context import Record


class MemoryLike(Protocol):
    def search(self, query: str, *args: Any, **kwargs: Any) -> list[Any]: ...
    def list(self, *args: Any, **kwargs: Any) -> list[Any]: ...
    def forget(self, record_id: int) -> Any: ...


def record_row(rec: Record) -> tuple[str, str, str, Text]:
    """(id, type, turn, content) — the content as plain Text: a record may hold anything, `[/]` included."""
    content = " ".join(rec.content.split())
    if rec.pinned:
        content = "📌 " + content
    kind = rec.type + (" (rewound)" if rec.layer == RETIRED else " (old)" if rec.superseded_by is not None else "")
    return (str(rec.id), kind, f"t{rec.turn}", plain(content))


class MemoryScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    MemoryScreen { background: $background 60%; }
    MemoryScreen > Vertical { margin: 1 2; border: round $accent; background: $surface; padding: 0 1; }
    MemoryScreen DataTable { height: 1fr; }
    MemoryScreen #memory-status { color: $text-muted; height: 1; }
    """
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("delete", "forget", "Forget (twice)"),
        Binding("slash", "focus_search", "Search", show=False),
    ]

    def __init__(self, store: MemoryLike | None, query: str = "", limit: int = 200) -> None:
        super().__init__()
        self.store = store
        self.query_text = query
        self.limit = limit
        self._armed: str | None = None  # record id awaiting a second Delete

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Memory — decisions, constraints, changes, todos, notes", style="bold"))
            yield Input(value=self.query_text, placeholder="search (English, 中文, code) — Enter", id="memory-query",
                        select_on_focus=False)  # a focus that selected would let the next key typed replace the rest
            yield DataTable(id="memory-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="memory-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "type", "turn", "content")
        self.refresh_rows()
        table.focus()

    def _records(self) -> list[Any]:
        if self.store is None:
            return []
        if self.query_text.strip():
            return list(self.store.search(self.query_text, limit=self.limit))
        try:
            return list(self.store.list(limit=self.limit, newest_first=True))
        except TypeError:  # a store without ordering options
            return list(self.store.list(limit=self.limit))

    def refresh_rows(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        status = self.query_one("#memory-status", Static)
        if self.store is None:
            status.update("No memory store for this project (memory is off or not set up).")
            return
        try:
            records = self._records()
        except Exception as exc:  # a bad FTS query must not close the screen
            status.update(plain(f"search failed: {exc}", style="red"))
            return
        for rec in records:
            table.add_row(*record_row(rec), key=str(getattr(rec, "id", "")))
        what = f"matching “{self.query_text}”" if self.query_text.strip() else "latest"
        status.update(plain(f"{len(records)} records {what} · Delete twice: forget · / search · Esc back"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_text = event.value
        self.refresh_rows()
        self.query_one(DataTable).focus()

    def action_focus_search(self) -> None:
        search = self.query_one("#memory-query", Input)
        search.select_all()  # `/`: a new search replaces the query
        search.focus()

    def on_key(self, event: events.Key) -> None:
        """A character typed at the list is the search's (typing is text), never a command."""
        if event.is_printable and event.character and not isinstance(self.focused, Input) and event.key != "slash":
            event.stop()
            event.prevent_default()
            search = self.query_one("#memory-query", Input)
            self.set_focus(search)  # at once: the keys queued after this one go to the search too
            search.insert_text_at_cursor(event.character)

    def action_forget(self) -> None:
        if self.store is None or isinstance(self.focused, Input):
            return
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is None:
            return
        status = self.query_one("#memory-status", Static)
        if self._armed != key:
            self._armed = key
            status.update(Text(f"press Delete again to forget record {key}", style="bold yellow"))
            return
        self._armed = None
        self.store.forget(int(key))
        self.refresh_rows()
        status.update(Text(f"forgot record {key}", style="yellow"))
