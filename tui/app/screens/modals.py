"""Breakpoint prompts (compress: a non-blocking bar; new session: a modal), the permission and trust boxes.

The bar's keys (Ctrl+O, Ctrl+G) are ones the input box does not use, so it never takes a key from what
is being typed. Every box that asks is a `GuardedModal` (tui/app/screens/question.py: typing is text — a key typed
into a field never answers, an answer is a digit or a chord shown on its button, keys typed ahead for
the prompt answer nothing). The permission box shows all of what the agent wants to do, with every
control and invisible character made visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from ctxagent.agent import PermissionDecision, PermissionRequest
from ctxagent.context import show_controls, usage_text
from ctxagent.tui.app.safe import judged, plain
from ctxagent.tui.app.screens.question import Answer, GuardedModal
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Static

if TYPE_CHECKING:
    from rich.syntax import Syntax

MODAL_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{
    width: 90%; max-width: 100; height: auto; max-height: 90%;
    border: thick $warning; background: $surface; padding: 1 2;
}}
{name} Horizontal {{ height: auto; margin-top: 1; }}
{name} Button {{ margin-right: 1; min-width: 10; }}
"""
# An editor's box takes most of the screen and its TextArea what is left: the buttons stay in view at any
# terminal size.
EDITOR_CSS = MODAL_CSS + """
{name} > Vertical {{ height: 90%; }}
{name} TextArea {{ height: 1fr; min-height: 3; }}
"""


class BreakpointBar(Horizontal):
    """Shown when usage crosses the compress breakpoint: [Compact now ^O] [Later ^G]. Never blocks typing."""

    DEFAULT_CSS = """
    BreakpointBar { height: auto; display: none; background: $warning 20%; padding: 0 1; }
    BreakpointBar.-shown { display: block; }
    BreakpointBar Label { width: 1fr; }
    BreakpointBar Button { margin-left: 1; min-width: 10; }
    """

    class Chosen(Message):
        def __init__(self, choice: str) -> None:
            super().__init__()
            self.choice = choice  # "compact" | "later"

    def compose(self) -> ComposeResult:
        yield Label("", id="bp-text")
        yield Button("Compact now ^O", id="bp-compact", variant="warning", compact=True)
        yield Button("Later ^G", id="bp-later", compact=True)

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def show(self, pct: float) -> None:
        self.query_one("#bp-text", Label).update(
            Text(f"⚠ Context {usage_text(pct)} full — compact older turns?")
        )
        self.add_class("-shown")

    def hide(self) -> None:
        self.remove_class("-shown")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.choose("compact" if event.button.id == "bp-compact" else "later")

    def choose(self, choice: str) -> None:
        self.hide()
        self.post_message(self.Chosen(choice))


class ChoiceModal(GuardedModal[str]):
    """A box of a few choices (`answers()`), dismissed with the chosen answer's value."""

    def result(self, value: str) -> str:
        return value


class EditorModal(GuardedModal[str | None]):
    """A box that edits a draft (the handoff message, a commit message, an AGENTS.md): the subclass composes
    a TextArea and `answer_widgets()`. Ctrl+S dismisses with the text (`finished`), Esc with None; an empty
    text is refused with `EMPTY`. The editor takes the focus once the box is armed (`GuardedModal`): what
    was being typed for the prompt when it opened never lands in the draft."""

    EMPTY: ClassVar[str] = "The text is empty."
    CONFIRM: ClassVar[str] = "Confirm"
    FIELD = HOME = "TextArea"

    def answers(self) -> Sequence[Answer]:
        return (Answer("confirm", self.CONFIRM, "ctrl+s", "primary"), Answer("cancel", "Cancel", "escape"))

    def keys_line(self) -> str:
        confirm = next(a for a in self.answers() if a.value == "confirm")
        return f"Ctrl+S: {confirm.label[:1].lower()}{confirm.label[1:]} · Esc: cancel · Tab: the buttons"

    def finished(self, text: str) -> str:
        return text

    def answer(self, value: str) -> None:
        if value == "confirm" and not self.typed().strip():
            self.app.notify(self.EMPTY, severity="warning")
            return
        super().answer(value)

    def result(self, value: str) -> str | None:
        return self.finished(self.typed()) if value == "confirm" else None


class BreakpointModal(ChoiceModal):
    """Crossing the new-session breakpoint: "new_session" (with summary) | "compact" | "continue"."""

    DEFAULT_CSS = MODAL_CSS.format(name="BreakpointModal")
    SAFE = "continue"
    SAFE_SAYS = "continue"

    def __init__(self, pct: float) -> None:
        super().__init__()
        self.pct = pct

    def answers(self) -> Sequence[Answer]:
        return (Answer("new_session", "New session with summary", "1", "primary"),
                Answer("compact", "Compact", "2", "warning"), Answer("continue", "Continue", "3"))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"■ The context window is {usage_text(self.pct)} full.", style="bold"))
            yield Static(
                "Answers degrade and the next step may not fit. Start a new session seeded with a "
                "summary and the warm memory, compact older turns, or continue as is."
            )
            yield from self.answer_widgets()


class PermissionModal(GuardedModal[PermissionDecision]):
    """Allow once / allow for this session / deny (with an optional reason for the model).

    1, 2 and 3 answer once the box is armed, while the focus is not in the reason (`GuardedModal`);
    Enter and Escape deny. A letter starts the reason, and from then on every key is the reason's,
    digits too: "actually no, put it in README" is a reason, never an answer. The preview shows all of
    what is asked (agent/permissions.py) and scrolls with the arrow and page keys."""

    DEFAULT_CSS = MODAL_CSS.format(name="PermissionModal") + """
    PermissionModal #perm-preview { height: auto; max-height: 20; border: round $panel-lighten-2; }
    PermissionModal.-tall #perm-preview { height: 1fr; min-height: 4; }
    PermissionModal #perm-scroll-hint { display: none; }
    PermissionModal.-scrolls #perm-scroll-hint { display: block; }
    PermissionModal #perm-note { color: $warning; margin-bottom: 1; }
    PermissionModal Input { margin-top: 1; }
    """
    SAFE = "deny"
    SAFE_SAYS = "deny"
    FIELD = "#perm-reason"
    FIELD_SAYS = "the reason"
    BINDINGS = [
        Binding("up", "scroll_preview('up')", show=False),
        Binding("down", "scroll_preview('down')", show=False),
        Binding("pageup", "scroll_preview('page_up')", show=False),
        Binding("pagedown", "scroll_preview('page_down')", show=False),
        Binding("home", "scroll_preview('home')", show=False),
        Binding("end", "scroll_preview('end')", show=False),
    ]
    # Rows the box takes besides the preview's lines (borders, padding, title, note, reason, buttons): a
    # preview that would push the box past 90% of the screen takes the room left instead, and scrolls — its
    # own height would push the reason field and the buttons out of sight.
    CHROME_ROWS = 19

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        req = self.request
        what = "edit a file" if req.permission == "edit" else "run a command"
        with Vertical():
            yield Static(plain(f"{'The ' + req.agent if req.agent else 'The agent'} wants to {what}: {req.tool}", style="bold"))
            if req.note:
                yield Static(plain(req.note), id="perm-note")
            lines = (req.preview or "").count("\n") + 1
            self.set_class(self._tall(), "-tall")
            yield Static(plain(f"{lines:,} lines — scroll with ↑ ↓ PgUp PgDn Home End to read them all",
                               style="dim"), id="perm-scroll-hint")
            with VerticalScroll(id="perm-preview"):
                yield Static(self._preview(), id="perm-preview-body")
            yield Input(placeholder="reason to deny (optional, sent to the model) — Enter denies", id="perm-reason",
                        select_on_focus=False)
            yield from self.answer_widgets()

    def answers(self) -> Sequence[Answer]:
        remember = [Answer("allow_session", "Allow for session", "2", "primary")] if self.request.can_remember else []
        return (Answer("allow_once", "Allow once", "1", "success"), *remember, Answer("deny", "Deny", "3", "error"))

    def result(self, value: str) -> PermissionDecision:
        if value == "allow_once":
            return PermissionDecision(allow=True)
        if value == "allow_session" and self.request.can_remember:
            return PermissionDecision(allow=True, remember=True)
        return PermissionDecision(allow=False, reason=self.typed())

    def _preview(self) -> Syntax | Text:
        """What is asked, every control and invisible character visible (an ESC in a command could
        hide part of it, a bidi override reorder it)."""
        from rich.syntax import Syntax  # pygments' lexer table: not before the first frame

        text = show_controls(self.request.preview or "")
        if self.request.permission == "edit" and text.strip():
            return Syntax(text, "diff", theme="ansi_dark", word_wrap=True)
        if self.request.permission == "command":
            command = text or show_controls(str(self.request.arguments.get("command", "")))
            return Syntax(command, "bash", theme="ansi_dark", word_wrap=True)
        return judged(text or str(self.request.arguments))

    def on_mount(self) -> None:  # Textual calls GuardedModal's on_mount too (every class's handler)
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.set_class(self._tall(), "-tall")
        self.call_after_refresh(self._fit)

    def _tall(self) -> bool:
        lines = (self.request.preview or "").count("\n") + 1
        return lines + self.CHROME_ROWS > self.app.size.height * 0.9

    def _fit(self) -> None:
        """Say that the preview scrolls whenever some of it is out of view (at this terminal's size)."""
        self.set_class(self.query_one("#perm-preview", VerticalScroll).max_scroll_y > 0, "-scrolls")

    def action_scroll_preview(self, how: str) -> None:
        getattr(self.query_one("#perm-preview", VerticalScroll), f"scroll_{how}")(animate=False)


class TrustModal(GuardedModal[bool]):
    """Asked once per repository whose own config sets security-relevant keys (agent/trust.py), and
    again when a file the user trusted changed: the description says what is ignored and shows the
    files (a diff against what was trusted). True to trust these bytes (those keys apply from now on),
    False to keep them ignored. Only Ctrl+T trusts — a chord no typing contains; Escape or Enter keep
    them ignored, and letters answer nothing (`GuardedModal`)."""

    DEFAULT_CSS = MODAL_CSS.format(name="TrustModal") + """
    TrustModal #trust-text { height: auto; max-height: 20; }
    """
    SAFE = "ignore"
    SAFE_SAYS = "keep them ignored"

    def __init__(self, description: str) -> None:
        super().__init__()
        self.description = description

    def answers(self) -> Sequence[Answer]:
        return (Answer("trust", "Trust this repository", "ctrl+t", "warning"),
                Answer("ignore", "Keep them ignored", "escape", "primary"))

    def result(self, value: str) -> bool:
        return value == "trust"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("This repository's .ctxagent/config.toml or .mcp.json asks for more than ctxagent "
                              "gives an untrusted repository (or changed since you trusted it).", style="bold"))
            with VerticalScroll(id="trust-text"):
                yield Static(plain(self.description))
            yield Static(Text("Trust it only if you wrote these settings or checked them. You are asked once, and "
                              "again when the files change; `ctxagent trust` / `ctxagent trust --revoke` change it "
                              "later.", style="dim"))
            yield from self.answer_widgets()
