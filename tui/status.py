"""The status line: model, session id, tokens in/out, cost, calibration ratio, and what runs now."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxagent.tui.gauge import human_tokens
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


def short_model(label: str, width: int = 28) -> str:
    """`scripted:/tmp/x/script.json` → `scripted:script.json`; long names keep their ends."""
    provider, sep, name = label.partition(":")
    if sep and "/" in name:
        name = name.rsplit("/", 1)[-1]
    label = f"{provider}{sep}{name}"
    return label if len(label) <= width else label[: width // 2 - 1] + "…" + label[-(width // 2):]


def format_status(info: StatusInfo, width: int = 80) -> Text:
    t = Text()
    if info.label:
        t.append(f" {info.label} ", style="bold black on magenta")
        t.append(" ")
    t.append(short_model(info.model), style="bold")
    if info.session:
        t.append(f" · {info.session[:12]}", style="dim")
    t.append(f" · ↑{human_tokens(info.tokens_in)} ↓{human_tokens(info.tokens_out)}")
    t.append(" · " + (f"${info.cost:.4f}" if info.cost is not None else "$—"))
    t.append(f" · cal ×{info.calibration:.2f}", style="dim")
    style = "bold yellow" if info.activity != "idle" else "dim"
    t.append(f" · {info.activity}", style=style)
    t.truncate(width)
    return t


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; background: $boost; }
    """

    info: reactive[StatusInfo] = reactive(StatusInfo)

    def set(self, **changes: object) -> None:
        self.info = replace(self.info, **changes)  # type: ignore[arg-type]

    def add_usage(self, tokens_in: int, tokens_out: int, cost: float | None = None) -> None:
        total = None if cost is None and self.info.cost is None else (self.info.cost or 0.0) + (cost or 0.0)
        self.info = replace(self.info, tokens_in=self.info.tokens_in + tokens_in,
                            tokens_out=self.info.tokens_out + tokens_out, cost=total)

    def render(self) -> Text:
        return format_status(self.info, self.size.width or 80)
