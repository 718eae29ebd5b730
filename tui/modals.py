"""Breakpoint prompts (compress: a non-blocking bar; new session: a modal) and the permission modal.

All keyboard-driven: every button has a one-key shortcut shown on it. The bar's keys (Ctrl+O,
Ctrl+L) are ones the input box does not use, so it never takes a key from what is being typed. The
permission box shows what the agent wants to run with every control character made visible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.agent import PermissionDecision, PermissionRequest
from ctxagent.context import show_controls
from ctxagent.tui.safe import judged, plain
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
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


class BreakpointBar(Horizontal):
    """Shown when usage crosses the compress breakpoint: [Compact now ^O] [Later ^L]. Never blocks typing."""

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
        yield Button("Later ^L", id="bp-later", compact=True)

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def show(self, pct: float) -> None:
        self.query_one("#bp-text", Label).update(
            Text(f"⚠ Context {pct:.0f}% full — compact older turns?")
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


class BreakpointModal(ModalScreen[str]):
    """Crossing the new-session breakpoint: "new_session" (with summary) | "compact" | "continue"."""

    DEFAULT_CSS = MODAL_CSS.format(name="BreakpointModal")
    BINDINGS = [
        Binding("n", "choose('new_session')", "New session"),
        Binding("c", "choose('compact')", "Compact"),
        Binding("escape,x", "choose('continue')", "Continue"),
    ]

    def __init__(self, pct: float) -> None:
        super().__init__()
        self.pct = pct

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"■ The context window is {self.pct:.0f}% full.", style="bold"))
            yield Static(
                "Answers degrade and the next step may not fit. Start a new session seeded with a "
                "summary and the warm memory, compact older turns, or continue as is."
            )
            with Horizontal():
                yield Button(r"\[N]ew session with summary", id="new_session", variant="primary")
                yield Button(r"\[C]ompact", id="compact", variant="warning")
                yield Button(r"Continue \[x]", id="continue")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class PermissionModal(ModalScreen[PermissionDecision]):
    """Allow once / allow for this session / deny (with an optional reason for the model)."""

    DEFAULT_CSS = MODAL_CSS.format(name="PermissionModal") + """
    PermissionModal #perm-preview { height: auto; max-height: 16; border: round $panel-lighten-2; }
    PermissionModal Input { margin-top: 1; }
    """
    BINDINGS = [
        Binding("y", "allow_once", "Allow once"),
        Binding("a", "allow_session", "Allow for session"),
        Binding("n", "deny", "Deny"),
        Binding("escape", "deny", "Deny", show=False),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        req = self.request
        what = "edit a file" if req.permission == "edit" else "run a command"
        with Vertical():
            yield Static(plain(f"{'The ' + req.agent if req.agent else 'The agent'} wants to {what}: {req.tool}", style="bold"))
            with VerticalScroll(id="perm-preview"):
                yield Static(self._preview(), id="perm-preview-body")
            yield Input(placeholder="reason for denying (optional, sent to the model) — Enter denies", id="perm-reason")
            with Horizontal():
                yield Button(r"\[Y] Allow once", id="allow_once", variant="success")
                yield Button(r"\[A]llow for session", id="allow_session", variant="primary")
                yield Button(r"\[N] Deny", id="deny", variant="error")

    def on_mount(self) -> None:
        self.query_one("#allow_once", Button).focus()

    def _preview(self) -> Syntax | Text:
        """What is asked, every control character visible (an ESC in a command could hide part of it)."""
        from rich.syntax import Syntax  # pygments' lexer table: not before the first frame

        text = show_controls(self.request.preview or "")
        if self.request.permission == "edit" and text.strip():
            return Syntax(text, "diff", theme="ansi_dark", word_wrap=True)
        if self.request.permission == "command":
            command = text or show_controls(str(self.request.arguments.get("command", "")))
            return Syntax(command, "bash", theme="ansi_dark", word_wrap=True)
        return judged(text or str(self.request.arguments))

    def _reason(self) -> str:
        return self.query_one("#perm-reason", Input).value.strip()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        {"allow_once": self.action_allow_once, "allow_session": self.action_allow_session}.get(
            str(event.button.id), self.action_deny
        )()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_deny()

    def action_allow_once(self) -> None:
        self.dismiss(PermissionDecision(allow=True))

    def action_allow_session(self) -> None:
        self.dismiss(PermissionDecision(allow=True, remember=True))

    def action_deny(self) -> None:
        self.dismiss(PermissionDecision(allow=False, reason=self._reason()))


class TrustModal(ModalScreen[bool]):
    """Asked once per repository whose own config sets security-relevant keys (agent/trust.py):
    True to trust it (those keys apply from now on), False to keep them ignored. Only Ctrl+T trusts —
    letters typed ahead, meant for the prompt, must never answer this."""

    DEFAULT_CSS = MODAL_CSS.format(name="TrustModal") + """
    TrustModal #trust-text { height: auto; max-height: 20; }
    """
    BINDINGS = [
        Binding("ctrl+t", "answer(True)", "Trust this repository"),
        Binding("escape", "answer(False)", "Keep them ignored"),
    ]

    def __init__(self, description: str) -> None:
        super().__init__()
        self.description = description

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("This repository's .ctxagent/config.toml asks for more than ctxagent gives an "
                              "untrusted repository.", style="bold"))
            with VerticalScroll(id="trust-text"):
                yield Static(plain(self.description))
            yield Static(Text("Trust it only if you wrote these settings or checked them. You are asked once; "
                              "`ctxagent trust` / `ctxagent trust --revoke` change it later.", style="dim"))
            with Horizontal():
                for button in (Button(Text("Trust this repository ^T"), id="trust", variant="warning"),
                               Button(Text("Keep them ignored (Esc)"), id="ignore", variant="primary")):
                    button.can_focus = False  # an Enter typed ahead for the prompt must not press one
                    yield button

    def on_key(self, event: events.Key) -> None:
        if event.is_printable:  # type-ahead meant for the prompt answers nothing here
            event.stop()
            event.prevent_default()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trust")

    def action_answer(self, trust: bool) -> None:
        self.dismiss(trust)
