"""What each slash command does: one small function per command of the registry (tui/commands.py).

A handler takes the session screen and the argument text. Anything that may call the model or
touch files (compact, rewind, new session, resume, model switch) runs as a session action on a
worker thread (`SessionScreen.start_action`); the operations themselves live in agent/.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ctxagent.tui.chat import NoticeLine
from ctxagent.tui.commands import help_text, parse_slash
from ctxagent.tui.messages import Outcome

if TYPE_CHECKING:
    from ctxagent.tui.rewind_screen import RewindChoice
    from ctxagent.tui.session_screen import SessionScreen

Handler = Callable[["SessionScreen", str], None]
HANDLERS: dict[str, Handler] = {}
NEED_NO_AGENT = {"help", "quit", "clear", "cost"}


def handles(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


def run_slash(screen: SessionScreen, text: str) -> None:
    parsed = parse_slash(text)
    if parsed is None:
        return
    if parsed.command is None:
        screen.say(f"unknown command /{parsed.name} — /help lists them", "error")
        return
    if screen.agent is None and parsed.command.name not in NEED_NO_AGENT:
        screen.say("The model is not ready yet.", "warning")
        return
    HANDLERS[parsed.command.name](screen, parsed.arg)


# -- simple ones --------------------------------------------------------------------------------

@handles("help")
def show_help(screen: SessionScreen, arg: str) -> None:
    from ctxagent.tui.pickers import InfoModal

    screen.app.push_screen(InfoModal("## Slash commands\n\n" + help_text()))


@handles("quit")
def quit_app(screen: SessionScreen, arg: str) -> None:
    screen.stopping = True
    screen.cancel.set()
    screen.app.exit(0)


@handles("cost")
def show_cost(screen: SessionScreen, arg: str) -> None:
    from ctxagent.tui.pickers import InfoModal
    from ctxagent.tui.transcript import cost_markdown

    screen.app.push_screen(InfoModal(cost_markdown(screen.status.info.model, screen.session.log.events)))


@handles("clear")
def clear(screen: SessionScreen, arg: str) -> None:
    screen.chat.remove_children()
    screen.chat.mount(NoticeLine("view cleared — the session log keeps everything (/rewind, /resume, /context)"))


@handles("memory")
def memory(screen: SessionScreen, arg: str) -> None:
    from ctxagent.tui.memory_screen import MemoryScreen

    assert screen.agent is not None
    screen.app.push_screen(MemoryScreen(screen.agent.memory, arg))


@handles("remember")
def remember(screen: SessionScreen, arg: str) -> None:
    if not arg.strip():
        screen.say("usage: /remember TEXT — e.g. /remember never edit generated files", "warning")
        return
    assert screen.agent is not None
    try:
        screen.agent.remember(arg)
    except Exception as exc:  # memory is a side system: the pin is in the log regardless
        screen.say(f"memory store: {exc}", "warning")
    screen.chat.mount(NoticeLine(f"📌 pinned: {arg.strip()}"))


@handles("context")
def context(screen: SessionScreen, arg: str) -> None:
    """The last request the agent built; measure the next one first when there is none yet (a resume)."""
    agent = screen.agent
    assert agent is not None
    if agent.last_build is None:
        def work() -> Outcome:
            agent.preview()  # None when even the relieved history cannot fit: the screen says so
            return Outcome(True, then=partial(_show_context, screen))

        screen.start_action("measure", work, activity="measuring")
        return
    _show_context(screen)


def _show_context(screen: SessionScreen) -> None:
    from ctxagent.tui.context_screen import ContextScreen, ContextSnapshot

    agent = screen.agent
    assert agent is not None
    cfg = screen.session.config
    budget = agent.parts.budget
    screen.app.push_screen(ContextScreen(ContextSnapshot(
        build=agent.last_build, sent=agent.last_build_sent, shares={s: budget.base(s) for s in budget.fractions},
        tokenizer=agent.parts.tokenizer, events=list(screen.session.log.events),
        thresholds=(float(cfg.compress_at), float(cfg.new_session_at)),
    )))


# -- the model ----------------------------------------------------------------------------------

@handles("model")
def model(screen: SessionScreen, arg: str) -> None:
    name = arg.strip()
    if not name:
        screen.say(f"model: {screen.status.info.model} — switch with /model provider:name")
        return
    from ctxagent.agent.session_ops import switch_model

    old = screen.agent

    def work() -> Outcome:
        try:
            agent = switch_model(screen.session, name, screen.new_agent, carry_from=old)
        except Exception as exc:
            return Outcome(False, f"cannot switch to {name}: {exc} — still on {screen.status.info.model}")
        return Outcome(True, f"model: {agent.model_label}", agent=agent)

    screen.start_action("model switch", work, activity="switching model")


# -- compaction and sessions --------------------------------------------------------------------

@handles("compact")
def compact(screen: SessionScreen, arg: str) -> None:
    agent = screen.agent
    assert agent is not None
    focus = arg.strip() or None
    screen.start_action("compact", lambda: Outcome(agent.compact(focus) is not None), activity="compacting")


@handles("new")
def new(screen: SessionScreen, arg: str) -> None:
    new_session(screen, with_summary=arg.strip().lower() in ("summary", "seed", "--summary"))


def new_session(screen: SessionScreen, with_summary: bool) -> None:
    agent = screen.agent
    assert agent is not None
    old_id = screen.session.id

    def work() -> Outcome:
        new = agent.new_session(with_summary, screen.open_session)
        new_agent = screen.new_agent(new)
        what = "with a summary of" if with_summary else "after"
        return Outcome(True, f"new session {new.id} {what} {old_id}", session=new, agent=new_agent)

    screen.start_action("new session", work, activity="new session")


@handles("resume")
def resume(screen: SessionScreen, arg: str) -> None:
    from ctxagent.agent.session import list_sessions
    from ctxagent.tui.pickers import SessionPicker

    if screen.busy:
        screen.say("wait for the turn to end first", "warning")
        return
    screen.app.push_screen(SessionPicker(list_sessions(screen.session.root), str(screen.session.id)),
                           partial(_resume_picked, screen))


def _resume_picked(screen: SessionScreen, session_id: str | None) -> None:
    if not session_id or session_id == str(screen.session.id):
        return
    open_session = screen.open_session
    if open_session is None:
        from ctxagent.agent.session import open_session
    root, config = screen.session.root, screen.session.config

    def work() -> Outcome:
        new = open_session(root, config, resume=session_id)
        agent = screen.new_agent(new)
        return Outcome(True, f"resumed session {session_id}", session=new, agent=agent)

    screen.start_action("resume", work, activity="resuming")


# -- rewind ---------------------------------------------------------------------------------------

@handles("rewind")
def rewind(screen: SessionScreen, arg: str) -> None:
    from ctxagent.tui.rewind_screen import RewindScreen

    agent = screen.agent
    assert agent is not None
    if screen.busy:
        screen.say("wait for the turn to end (or Esc) before rewinding", "warning")
        return

    def work() -> Outcome:
        menu = agent.rewind_menu()  # reads the shadow repository: off the UI thread

        def pick() -> None:
            if menu.note and menu.turns:
                screen.say(f"{menu.note}; conversation rewind only", "warning")
            screen.app.push_screen(RewindScreen(menu.turns, has_code=menu.has_code), partial(_rewind_picked, screen))

        return Outcome(True, then=pick)

    screen.start_action("rewind", work, activity="reading checkpoints")


def _rewind_picked(screen: SessionScreen, choice: RewindChoice | None) -> None:
    from ctxagent.agent.session_ops import describe_rewind, find_user_turn

    if choice is None:
        return
    agent = screen.agent
    assert agent is not None

    def work() -> Outcome:
        text = find_user_turn(screen.session.log, choice.turn).user.text
        result = agent.rewind(choice.turn, choice.mode, screen.bridge.confirm_overwrite)
        restore = text if choice.mode in ("both", "conversation") else ""
        return Outcome(True, describe_rewind(result, choice.turn, choice.mode), rerender=True, restore_input=restore)

    screen.start_action("rewind", work, activity="rewinding")
