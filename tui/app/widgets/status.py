"""The status line: model, the whole session id (what --resume takes), tokens in/out, cost,
calibration ratio ("calibration ×1.18": provider tokens per local token), a mark when permissions are off or relaxed, and what runs now."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxagent.tui.app.safe import flat
from ctxagent.tui.app.widgets.gauge import human_tokens
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class StatusInfo:
    model: str = "?"
    session: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None  # USD; None when the model has no known prices
    calibration: float = 1.0
    activity: str = "idle"  # "idle" | "thinking" | "tool: read_file" | ...
    label: str = ""  # e.g. "scripted demo"
    permissions: str = "ask"  # the permission mode (agent/permissions.py PERMISSION_MODES)
    mcp: str = ""  # the MCP servers: "MCP 2/2", or "MCP 1/2 ✗ docs" when one failed or crashed


# Marks for relaxed permission modes: always visible, because nothing else says edits run unasked.
PERMISSION_MARK = {
    "yolo": ("⚠ YOLO: never asks", "bold white on red"),
    "auto-edit": ("auto-edit: edits unasked", "bold black on yellow"),
    "plan": ("⏸ plan: read-only", "bold white on blue"),
}


def short_model(label: str, width: int = 28) -> str:
    """`scripted:/tmp/x/script.json` → `scripted:script.json`; long names keep their ends."""
    provider, sep, name = label.partition(":")
    if sep and "/" in name:
        name = name.rsplit("/", 1)[-1]
    label = flat(f"{provider}{sep}{name}")  # from a config or a session log: outside text
    return label if len(label) <= width else label[: width // 2 - 1] + "…" + label[-(width // 2):]


def format_status(info: StatusInfo, width: int = 80) -> Text:
    """One line. When it does not fit, the least needed parts go first (calibration, cost, tokens,
    the label), then the model's name is shortened — never the session id, the permission mark or
    what runs now."""
    busy = info.activity != "idle"
    parts: list[tuple[str, str, int]] = []  # (text, style, priority: higher is kept longer)
    parts.append((("◐ " if busy else "● ") + info.activity, "bold yellow" if busy else "dim", 9))
    if info.label:
        parts.append((f" {info.label} ", "bold black on magenta", 6))
    mark = PERMISSION_MARK.get(info.permissions)
    if mark:
        parts.append((f" {mark[0]} ", mark[1], 10))
    parts.append(("{model}", "bold", 8))
    if info.session:
        parts.append((info.session, "dim", 10))
    if info.mcp:
        parts.append((info.mcp, "bold yellow" if "✗" in info.mcp else "dim", 7))
    parts.append((f"↑{human_tokens(info.tokens_in)} ↓{human_tokens(info.tokens_out)}", "", 5))
    parts.append(((f"${info.cost:.4f}" if info.cost is not None else "$—"), "", 4))
    parts.append((f"calibration ×{info.calibration:.2f}", "dim", 3))  # provider tokens per local token
    model_min = 12

    def length(items: list[tuple[str, str, int]], model_width: int) -> int:
        return sum(model_width if text == "{model}" else len(text) for text, _, _ in items) + 3 * (len(items) - 1)

    full_model = len(short_model(info.model, 200))
    while length(parts, full_model) > width and any(p < 8 for _, _, p in parts):
        lowest = min(p for _, _, p in parts)
        parts = [x for x in parts if x[2] != lowest]
    model_width = max(model_min, min(full_model, width - length(parts, 0)))
    t = Text()
    for i, (text, style, _) in enumerate(parts):
        if i:
            t.append(" · ", style="dim")
        t.append(short_model(info.model, model_width) if text == "{model}" else text, style=style)
    t.truncate(width)
    return t


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; background: $boost; }
    """

    info: reactive[StatusInfo] = reactive(StatusInfo)

    def __init__(self, *, activity: str = "idle", id: str | None = None) -> None:
        """`activity`: what the first frame says runs (the session screen's: "starting", never "idle"
        before the agent is ready)."""
        super().__init__(id=id)
        self.set_reactive(StatusLine.info, StatusInfo(activity=activity))

    def set(self, **changes: object) -> None:
        self.info = replace(self.info, **changes)  # type: ignore[arg-type]  # StatusInfo's fields, by name: checked by replace() at run time

    def show_waiting(self, step: int, seconds: float) -> None:
        """The model's stream is silent (agent `ModelWaiting`): say for how long; 0 — it sends again."""
        self.info = replace(self.info, activity=f"waiting for the model ({seconds:.0f} s)" if seconds else f"step {step}")

    def add_usage(self, tokens_in: int, tokens_out: int, cost: float | None = None) -> None:
        total = None if cost is None and self.info.cost is None else (self.info.cost or 0.0) + (cost or 0.0)
        self.info = replace(self.info, tokens_in=self.info.tokens_in + tokens_in,
                            tokens_out=self.info.tokens_out + tokens_out, cost=total)

    def render(self) -> Text:
        return format_status(self.info, self.size.width or 80)
