"""Plan mode in the app: Shift+Tab cycles the permission mode, and a plan the model proposes opens a box.

The mode is the session's `permission_mode` (agent/permissions.py has its rules: in plan mode only
read-only tools run). Shift+Tab goes ask → auto-edit → plan → ask (yolo joins the cycle only in a session
started in it: a key never turns it on). A turn that ends in plan mode with an answer is the model's plan:
the box shows it whole, and the user accepts it — the mode switches to ask (each edit asked) or auto-edit,
and the plan is sent as the next message — or keeps planning (Esc: the mode stays, the input is theirs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.agent import PLAN_MODE, next_mode
from ctxagent.tui.modals import MODAL_CSS, ChoiceModal
from ctxagent.tui.safe import plain
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:
    from ctxagent.agent import TurnFinished
    from ctxagent.tui.control import SessionControl

# What each mode means, said when Shift+Tab switches to it.
MODE_WORDS = {
    "ask": "every edit and command is asked",
    "auto-edit": "edits run unasked, commands are asked",
    PLAN_MODE: "read-only tools only; the model proposes a plan for you to accept",
    "yolo": "nothing is asked",
}
ACCEPTED = "The plan is accepted. Carry it out now, step by step, and check the result:\n\n{plan}"
_STARTED: dict[str, str] = {}  # the mode each session started in (session id → mode): yolo stays reachable


def cycle_mode(control: SessionControl) -> str:
    """Shift+Tab: switch the session to the next mode, show it, and say what it means."""
    cfg = control.session.config
    started = _STARTED.setdefault(str(control.session.id), cfg.permission_mode)
    return set_mode(control, next_mode(cfg.permission_mode, started))


def set_mode(control: SessionControl, mode: str) -> str:
    """Switch the session to `mode`; logged now when idle, else by the turn's next step (the agent's
    thread is the one writing the log then)."""
    from ctxagent.agent import record_mode

    control.session.config.permission_mode = mode  # one of PERMISSION_MODES (the Literal is not checked by mypy)
    if not control.busy:
        record_mode(control.session.log, mode)
    control.show_session_facts()
    control.notice(f"permission mode: {mode} — {MODE_WORDS[mode]} (Shift+Tab: next mode)")
    return mode


class PlanModal(ChoiceModal):
    """The model's plan: dismisses with the mode to carry it out in ("ask" | "auto-edit"), or "keep"."""

    DEFAULT_CSS = MODAL_CSS.format(name="PlanModal") + "PlanModal VerticalScroll { height: auto; max-height: 24; }\n"
    BINDINGS = [
        Binding("a", "choose('ask')", "Accept, ask each edit"),
        Binding("e", "choose('auto-edit')", "Accept, edits unasked"),
        Binding("k,escape", "choose('keep')", "Keep planning"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("■ The model proposes this plan", style="bold"))
            with VerticalScroll():
                yield Static(plain(self.plan), id="plan-text")
            yield Static("Accept it to leave plan mode and send the plan as your next message, or keep planning "
                         "(write what to change).")
            with Horizontal():
                yield from self.buttons((r"\[A]ccept, ask each edit", "ask", "primary"),
                                        (r"Accept, \[E]dits unasked", "auto-edit", "warning"),
                                        (r"\[K]eep planning", "keep", "default"))


def after_turn(control: SessionControl, ev: TurnFinished) -> None:
    """What a finished turn opens: the /init draft's box (tui/init_box.py), else the plan box."""
    from ctxagent.tui.init_box import offer_init

    if not offer_init(control, ev):
        offer_plan(control, ev)


def offer_plan(control: SessionControl, ev: TurnFinished) -> bool:
    """After a turn: in plan mode, an answer is a plan — open the box. True when it opened."""
    if control.session.config.permission_mode != PLAN_MODE or ev.stop_reason != "end_turn" or not ev.text.strip():
        return False
    plan = ev.text.strip()
    control.app.push_screen(PlanModal(plan), lambda choice: _answered(control, plan, choice))
    return True


def _answered(control: SessionControl, plan: str, choice: str | None) -> None:
    if choice not in ("ask", "auto-edit"):
        control.notice("still planning — say what to change in the plan (Shift+Tab leaves plan mode)")
        return
    set_mode(control, choice)
    text = ACCEPTED.format(plan=plan)
    control.start_turn(text, lambda agent, cancel: agent.run_turn(text, cancel))
