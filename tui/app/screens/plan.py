"""Plan mode in the app: Shift+Tab cycles the permission mode, and a plan the model proposes opens a box.

The mode is the session's `permission_mode` (agent/permissions.py has its rules: in plan mode only
read-only tools run). Shift+Tab goes ask → auto-edit → plan → ask (yolo joins the cycle only in a session
started in it: a key never turns it on). A turn that ends in plan mode with an answer is the model's plan:
the box shows it whole, and the user accepts it — the mode switches to ask (each edit asked) or auto-edit,
and the plan is sent as the next message — or keeps planning (Esc: the mode stays, the input is theirs;
a note typed in the box on what to change is sent as the next message, still in plan mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxagent.agent import PLAN_MODE, next_mode
from ctxagent.tui.app.safe import plain
from ctxagent.tui.app.screens.modals import MODAL_CSS
from ctxagent.tui.app.screens.question import Answer, GuardedModal
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

if TYPE_CHECKING:
    from ctxagent.agent import TurnFinished
    from ctxagent.tui.app.control import SessionControl

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


@dataclass(frozen=True)
class PlanAnswer:
    """The plan box's answer: the mode to carry the plan out in ("ask" | "auto-edit"), or "keep"
    planning; `note` is what the user wrote in the box (what to change), sent with it."""

    mode: str
    note: str = ""


class PlanModal(GuardedModal[PlanAnswer]):
    """The model's plan: 1 accepts it with each edit asked, 2 with edits unasked, 3 (or Enter, Esc) keeps
    planning. A letter starts a note on what to change — text, never an answer (`GuardedModal`)."""

    DEFAULT_CSS = MODAL_CSS.format(name="PlanModal") + """
    PlanModal VerticalScroll { height: auto; max-height: 24; }
    PlanModal Input { margin-top: 1; }
    """
    SAFE = "keep"
    SAFE_SAYS = "keep planning"
    FIELD = "#plan-note"
    FIELD_SAYS = "what to change"

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def answers(self) -> Sequence[Answer]:
        return (Answer("ask", "Accept, ask", "1", "primary"), Answer("auto-edit", "Accept, auto-edit", "2", "warning"),
                Answer("keep", "Keep planning", "3"))

    def result(self, value: str) -> PlanAnswer:
        return PlanAnswer(value, self.typed())

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("■ The model proposes this plan", style="bold"))
            with VerticalScroll():
                yield Static(plain(self.plan), id="plan-text")
            yield Static("Accept it — in ask mode (each edit asked) or auto-edit (edits unasked) — to leave plan mode "
                         "and send the plan as your next message, or keep planning: write what to change, and Enter "
                         "sends it.")
            yield Input(placeholder="what to change (optional) — Enter: keep planning and send it", id="plan-note",
                        select_on_focus=False)
            yield from self.answer_widgets()


def after_turn(control: SessionControl, ev: TurnFinished) -> None:
    """What a finished turn opens: the /init draft's box (tui/app/screens/init_box.py), else the plan box."""
    from ctxagent.tui.app.screens.init_box import offer_init

    if not offer_init(control, ev):
        offer_plan(control, ev)


def offer_plan(control: SessionControl, ev: TurnFinished) -> bool:
    """After a turn: in plan mode, an answer is a plan — open the box. True when it opened."""
    if control.session.config.permission_mode != PLAN_MODE or ev.stop_reason != "end_turn" or not ev.text.strip():
        return False
    plan = ev.text.strip()
    control.app.push_screen(PlanModal(plan), lambda choice: _answered(control, plan, choice))
    return True


def _answered(control: SessionControl, plan: str, answer: PlanAnswer | None) -> None:
    note = answer.note if answer is not None else ""
    if answer is None or answer.mode not in ("ask", "auto-edit"):
        if not note:
            control.notice("still planning — say what to change in the plan (Shift+Tab leaves plan mode)")
            return
        text = note  # what to change: the next message, still in plan mode
    else:
        set_mode(control, answer.mode)
        text = ACCEPTED.format(plan=plan) + (f"\n\n{note}" if note else "")
    control.start_turn(text, lambda agent, cancel: agent.run_turn(text, cancel))
