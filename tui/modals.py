"""Breakpoint prompts (compress: a non-blocking bar; new session: a modal), the permission and trust boxes.

All keyboard-driven: every button has a one-key shortcut shown on it. The bar's keys (Ctrl+O,
Ctrl+G) are ones the input box does not use, so it never takes a key from what is being typed. A
modal question is a `GuardedModal`: keys typed ahead for the prompt never answer it. The permission
box shows all of what the agent wants to do, with every control and invisible character made visible.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar, TypeVar

from ctxagent.agent import PermissionDecision, PermissionRequest
from ctxagent.context import show_controls, usage_text
from ctxagent.tui.safe import judged, plain
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

if TYPE_CHECKING:
    from rich.syntax import Syntax

R = TypeVar("R")
# How long a question must have been on screen, with no key pressed, before a key answers it: keys
# typed for the prompt come faster than this; a person who stops to read the question answers after it.
ARM_SECONDS = 0.5

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


class GuardedModal(ModalScreen[R]):
    """A question that keys typed ahead — meant for the prompt — never answer: nothing is focused when
    it opens, and until it has been on screen for `ARM_SECONDS` with no key pressed, every key but
    Escape (which only ever says no) and every click on a button is ignored. A key in that time starts
    the wait again, so someone still typing their message never answers it, however long they type.
    The one rule for every modal question (permission, trust, overwrite, the full window)."""

    AUTO_FOCUS = ""  # not the app's "*": a focused button would take an Enter typed ahead
    ARM_SECONDS: ClassVar[float] = ARM_SECONDS
    _shown_at: float | None = None

    def on_mount(self) -> None:
        self.call_after_refresh(self._mark_shown)  # from the first frame that shows it, not from the push

    def _mark_shown(self) -> None:
        self._shown_at = time.monotonic()

    @property
    def armed(self) -> bool:
        """True once the box has been shown long enough for a key to be an answer to it."""
        return self._shown_at is not None and time.monotonic() - self._shown_at >= self.ARM_SECONDS

    def ignores(self, event: events.Key) -> bool:
        """Keys this box never takes, armed or not (the trust box: every printable key)."""
        return False

    def armed_key(self, event: events.Key) -> None:
        """A key the box may take, after the guard (the permission box routes letters to its reason)."""

    def on_key(self, event: events.Key) -> None:
        if event.key != "escape" and (not self.armed or self.ignores(event)):
            if not self.armed and self._shown_at is not None:
                self._shown_at = time.monotonic()  # still typing: the quiet moment starts again
            event.stop()
            event.prevent_default()
            return
        self.armed_key(event)


class ChoiceModal(GuardedModal[str]):
    """A box of a few choices, each a button whose id is the choice and a key bound to `choose(id)`;
    a click counts once the box is armed (`GuardedModal`), and no button takes focus (Enter answers nothing)."""

    @staticmethod
    def buttons(*choices: tuple[str, str, str]) -> list[Button]:
        """(label, id, variant) each, unfocusable."""
        out = []
        for label, choice, variant in choices:
            button = Button(label, id=choice, variant=variant)  # type: ignore[arg-type]
            button.can_focus = False
            out.append(button)
        return out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if self.armed:
            self.dismiss(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class EditorModal(ModalScreen[str | None]):
    """A box that edits a draft (the handoff message, a commit message, an AGENTS.md): the subclass composes
    a TextArea and the #confirm / #cancel buttons. Ctrl+S or Confirm dismisses with the text (`finished`),
    Esc or Cancel with None; an empty text is refused with `EMPTY`."""

    EMPTY: ClassVar[str] = "The text is empty."

    def finished(self, text: str) -> str:
        return text

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_confirm(self) -> None:
        text = self.query_one(TextArea).text
        if not text.strip():
            self.app.notify(self.EMPTY, severity="warning")
            return
        self.dismiss(self.finished(text))

    def action_cancel(self) -> None:
        self.dismiss(None)


class BreakpointModal(ChoiceModal):
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
            yield Static(Text(f"■ The context window is {usage_text(self.pct)} full.", style="bold"))
            yield Static(
                "Answers degrade and the next step may not fit. Start a new session seeded with a "
                "summary and the warm memory, compact older turns, or continue as is."
            )
            with Horizontal():
                yield from self.buttons((r"\[N]ew session with summary", "new_session", "primary"),
                                        (r"\[C]ompact", "compact", "warning"), (r"Continue \[x]", "continue", "default"))


class PermissionModal(GuardedModal[PermissionDecision]):
    """Allow once / allow for this session / deny (with an optional reason for the model).

    Y, A and N answer once the box is armed (`GuardedModal`); Enter and Escape deny; any other letter
    starts the reason, and from then on every key goes to it. The preview shows all of what is asked
    (agent/permissions.py) and scrolls with the arrow and page keys."""

    DEFAULT_CSS = MODAL_CSS.format(name="PermissionModal") + """
    PermissionModal #perm-preview { height: auto; max-height: 20; border: round $panel-lighten-2; }
    PermissionModal.-tall #perm-preview { height: 1fr; min-height: 4; }
    PermissionModal #perm-scroll-hint { display: none; }
    PermissionModal.-scrolls #perm-scroll-hint { display: block; }
    PermissionModal #perm-note { color: $warning; margin-bottom: 1; }
    PermissionModal Input { margin-top: 1; }
    """
    BINDINGS = [
        Binding("y", "allow_once", "Allow once"),
        Binding("a", "allow_session", "Allow for session"),
        Binding("n", "deny", "Deny"),
        Binding("enter", "deny", "Deny", show=False),
        Binding("escape", "deny", "Deny", show=False),
        Binding("up", "scroll_preview('up')", show=False),
        Binding("down", "scroll_preview('down')", show=False),
        Binding("pageup", "scroll_preview('page_up')", show=False),
        Binding("pagedown", "scroll_preview('page_down')", show=False),
        Binding("home", "scroll_preview('home')", show=False),
        Binding("end", "scroll_preview('end')", show=False),
    ]
    SHORTCUTS = frozenset("yan")
    # A preview longer than this takes the room left, not its own height: one as tall as the terminal
    # would push the reason field and the buttons out of the box, out of sight.
    TALL_LINES = 7

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
            self.set_class(lines > self.TALL_LINES, "-tall")
            yield Static(plain(f"{lines:,} lines — scroll with ↑ ↓ PgUp PgDn Home End to read them all",
                               style="dim"), id="perm-scroll-hint")
            with VerticalScroll(id="perm-preview"):
                yield Static(self._preview(), id="perm-preview-body")
            yield Input(placeholder="deny reason (optional, sent to the model) — Enter denies", id="perm-reason",
                        select_on_focus=False)
            with Horizontal():
                buttons = [Button(r"\[Y] Allow once", id="allow_once", variant="success")]
                if req.can_remember:
                    buttons.append(Button(r"\[A]llow for session", id="allow_session", variant="primary"))
                buttons.append(Button(r"\[N] Deny", id="deny", variant="error"))
                for button in buttons:
                    button.can_focus = False  # an Enter typed ahead must not press one
                    yield button

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

    def _reason(self) -> str:
        return self.query_one("#perm-reason", Input).value.strip()

    def armed_key(self, event: events.Key) -> None:
        if event.is_printable and event.character and event.key not in self.SHORTCUTS:
            reason = self.query_one("#perm-reason", Input)  # not focused yet: it would have taken the key
            reason.focus()
            reason.insert_text_at_cursor(event.character)
            event.stop()
            event.prevent_default()

    def on_mount(self) -> None:  # Textual calls GuardedModal's on_mount too (every class's handler)
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """Say that the preview scrolls whenever some of it is out of view (at this terminal's size)."""
        self.set_class(self.query_one("#perm-preview", VerticalScroll).max_scroll_y > 0, "-scrolls")

    def action_scroll_preview(self, how: str) -> None:
        getattr(self.query_one("#perm-preview", VerticalScroll), f"scroll_{how}")(animate=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if not self.armed:
            return
        {"allow_once": self.action_allow_once, "allow_session": self.action_allow_session}.get(
            str(event.button.id), self.action_deny
        )()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_deny()

    def action_allow_once(self) -> None:
        self.dismiss(PermissionDecision(allow=True))

    def action_allow_session(self) -> None:
        if self.request.can_remember:
            self.dismiss(PermissionDecision(allow=True, remember=True))

    def action_deny(self) -> None:
        self.dismiss(PermissionDecision(allow=False, reason=self._reason()))


class TrustModal(GuardedModal[bool]):
    """Asked once per repository whose own config sets security-relevant keys (agent/trust.py), and
    again when a file the user trusted changed: the description says what is ignored and shows the
    files (a diff against what was trusted). True to trust these bytes (those keys apply from now on),
    False to keep them ignored. Only Ctrl+T trusts — letters typed ahead, meant for the prompt, must
    never answer this (`GuardedModal`)."""

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
            yield Static(Text("This repository's .ctxagent/config.toml or .mcp.json asks for more than ctxagent "
                              "gives an untrusted repository (or changed since you trusted it).", style="bold"))
            with VerticalScroll(id="trust-text"):
                yield Static(plain(self.description))
            yield Static(Text("Trust it only if you wrote these settings or checked them. You are asked once, and "
                              "again when the files change; `ctxagent trust` / `ctxagent trust --revoke` change it "
                              "later.", style="dim"))
            with Horizontal():
                for button in (Button(Text("Trust this repository ^T"), id="trust", variant="warning"),
                               Button(Text("Keep them ignored (Esc)"), id="ignore", variant="primary")):
                    button.can_focus = False  # an Enter typed ahead for the prompt must not press one
                    yield button

    def ignores(self, event: events.Key) -> bool:
        return event.is_printable  # only Ctrl+T trusts, only Escape declines

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if self.armed:
            self.dismiss(event.button.id == "trust")

    def action_answer(self, trust: bool) -> None:
        self.dismiss(trust)
