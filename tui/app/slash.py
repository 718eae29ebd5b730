"""What each slash command does: one small function per command of the registry (tui/app/commands.py).

A handler takes the session it works on, as a `SessionControl` (tui/app/control.py), and the argument
text. Anything that may call the model or touch files (compact, rewind, new session, resume, model
switch) runs as a session action on a worker thread (`SessionControl.start_action`); the operations
themselves live in agent/.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ctxagent.tui.app.commands import help_text, parse_slash, set_custom, unescape
from ctxagent.tui.app.messages import Outcome

if TYPE_CHECKING:
    from ctxagent.agent import CustomCommand
    from ctxagent.tui.app.control import SessionControl
    from ctxagent.tui.app.screens.rewind_screen import RewindChoice

Handler = Callable[["SessionControl", str], None]
HANDLERS: dict[str, Handler] = {}
NEED_NO_AGENT = {"help", "quit", "clear", "cost"}


def handles(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


def run_input(control: SessionControl, text: str) -> bool:
    """What Enter does with the input line: a slash command, `!command`, or a message for the model
    (`//text`: text starting with a slash). False when it was not taken (the box keeps the text)."""
    stripped = text.lstrip()
    if not stripped:
        return False
    from ctxagent.agent import pasted_image

    image = pasted_image(control.session.root, text)  # a pasted image path (absolute ones start with "/")
    if image is not None:
        mention = f"@{image}"
        return control.start_turn(mention, lambda agent, cancel: agent.run_turn(mention, cancel))
    if parse_slash(text) is not None:
        run_slash(control, text)
        return True
    if stripped.startswith("!") and not stripped.startswith("!!"):
        command = stripped[1:].strip()
        if not command:
            control.say("usage: !COMMAND — e.g. !git status", "warning")
            return False
        return control.start_turn(f"!{command}", lambda agent, cancel: agent.run_command(command, cancel))
    message = unescape(text)
    return control.start_turn(message, lambda agent, cancel: agent.run_turn(message, cancel))


def run_slash(control: SessionControl, text: str) -> None:
    parsed = parse_slash(text)
    if parsed is None:
        return
    if parsed.command is None:
        refresh_custom_commands(control)  # a template written since the session started
        parsed = parse_slash(text)
    if parsed is None or parsed.command is None:
        name = parsed.name if parsed else text.strip()
        control.say(f"unknown command /{name} — /help lists them", "error")
        return
    if control.agent is None and parsed.command.name not in NEED_NO_AGENT:
        control.say("The model is not ready yet.", "warning")
        return
    if parsed.command.custom is not None:
        run_custom(control, parsed.command.custom, parsed.arg)
        return
    HANDLERS[parsed.command.name](control, parsed.arg)


# -- custom commands (prompt templates: agent/custom_commands.py) ----------------------------------

def refresh_custom_commands(control: SessionControl) -> None:
    """(Re)load the project's and the user's templates into the registry; skipped files are said."""
    from ctxagent.agent import load_commands

    loaded = load_commands(control.session.root)
    set_custom(loaded.commands)
    for problem in loaded.problems:
        control.notice(f"custom command {problem}", "warning")


def run_custom(control: SessionControl, command: CustomCommand, arg: str) -> None:
    """Send the expansion as a message, logged with its command (`template_ref`: a project's text is not
    the user's words). A project command runs only once the user confirmed its bytes: the first time, and
    whenever its file changed, the box shows its expansion (and what changed) and asks."""
    from ctxagent.agent import confirm_commands, confirmation, confirmation_text, expand_command, template_ref
    from ctxagent.context import CtxagentError
    from ctxagent.tui.app.screens.pickers import ConfirmModal

    text = expand_command(command, arg)
    if not text.strip():
        control.say(f"/{command.qualified} expands to nothing — {command.path}", "warning")
        return
    ref = template_ref(command, arg)

    def send() -> None:
        control.start_turn(text, lambda agent, cancel: agent.run_turn(text, cancel, template=ref))

    root = control.session.root
    state = confirmation(root, command)
    if state in ("mine", "confirmed"):
        send()
        return

    def answered(yes: bool | None) -> None:
        if not yes:
            control.notice(f"/{command.qualified} not sent")
            return
        try:
            confirm_commands(root, [command])
        except CtxagentError as exc:  # an unwritable trust list: sent this once, asked again next time
            control.say(f"{exc} — /{command.qualified} is sent this once", "warning")
        send()

    why = "changed since you confirmed it" if state == "changed" else "the repository's text, not yours"
    question = f"Send the project's command /{command.qualified} ({why}) as this message?"
    control.app.push_screen(ConfirmModal(question, confirmation_text(root, command, text)), answered)


# -- simple ones --------------------------------------------------------------------------------

@handles("help")
def show_help(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.pickers import InfoModal

    refresh_custom_commands(control)
    control.app.push_screen(InfoModal("## Help\n\n" + help_text()))


@handles("quit")
def quit_app(control: SessionControl, arg: str) -> None:
    control.quit()


@handles("cost")
def show_cost(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.pickers import InfoModal
    from ctxagent.tui.app.widgets.transcript import cost_markdown

    control.app.push_screen(InfoModal(cost_markdown(control.model_label, control.session.log.events)))


@handles("agents")
def agents(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.agents_screen import AgentTranscriptScreen, agents_markdown, find_child
    from ctxagent.tui.app.screens.pickers import InfoModal
    from ctxagent.tui.app.widgets.subagent_panel import SubAgentPanel

    panels = [p for p in control.app.query(SubAgentPanel) if p.state == "running"]
    log = control.session.log
    if not arg.strip():
        running = [(p.session, p.description, len(p.steps)) for p in panels]
        control.app.push_screen(InfoModal(agents_markdown(log, running)))
        return
    found = find_child(log, arg, [p.session for p in panels])
    if found is None:
        control.say(f"no single sub-agent of this session starts with {arg.strip()!r} (/agents lists them)", "warning")
        return
    control.app.push_screen(AgentTranscriptScreen(log, found))


@handles("clear")
def clear(control: SessionControl, arg: str) -> None:
    control.clear_chat()
    control.notice("view cleared — the session log keeps everything (/rewind, /resume, /context)")


@handles("memory")
def memory(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.memory_screen import MemoryScreen

    assert control.agent is not None
    control.app.push_screen(MemoryScreen(control.agent.memory, arg))


@handles("mcp")
def mcp(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.pickers import InfoModal

    agent = control.agent
    assert agent is not None
    runtime = agent.parts.mcp
    text = runtime.markdown() if runtime is not None else (
        "No MCP servers are configured. Add `[mcp_servers.NAME]` to your config.toml (see the README); a trusted "
        "repository's `.mcp.json` is read too.")
    control.app.push_screen(InfoModal("## MCP servers\n\n" + text))


@handles("remember")
def remember(control: SessionControl, arg: str) -> None:
    if not arg.strip():
        control.say("usage: /remember TEXT — e.g. /remember never edit generated files", "warning")
        return
    assert control.agent is not None
    try:
        control.agent.remember(arg)
    except Exception as exc:  # memory is a side system: the pin is in the log regardless
        control.say(f"memory store: {exc}", "warning")
    control.notice(f"📌 pinned: {arg.strip()}")


@handles("context")
def context(control: SessionControl, arg: str) -> None:
    """The last request the agent built; measure the next one first when there is none yet (a resume)."""
    agent = control.agent
    assert agent is not None
    if agent.last_build is None:
        def work() -> Outcome:
            agent.preview()  # None when even the relieved history cannot fit: the screen says so
            return Outcome(True, then=partial(_show_context, control))

        control.start_action("measure", work, activity="measuring")
        return
    _show_context(control)


def _show_context(control: SessionControl) -> None:
    from ctxagent.tui.app.screens.context_screen import ContextScreen, ContextSnapshot

    agent = control.agent
    assert agent is not None
    cfg = control.session.config
    budget = agent.parts.budget
    control.app.push_screen(ContextScreen(ContextSnapshot(
        build=agent.last_build, sent=agent.last_build_sent, shares={s: budget.base(s) for s in budget.fractions},
        tokenizer=agent.parts.tokenizer, events=list(control.session.log.events),
        thresholds=(float(cfg.compress_at), float(cfg.new_session_at)),
    )))


# -- git and instruction files (tui/app/screens/git_screens.py, tui/app/screens/init_box.py) ----------------------------

@handles("diff")
def diff(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.git_screens import show_diff

    show_diff(control)


@handles("commit")
def commit(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.git_screens import start_commit

    start_commit(control)


@handles("init")
def init(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.init_box import start_init

    start_init(control, arg)


# -- the model ----------------------------------------------------------------------------------

@handles("model")
def model(control: SessionControl, arg: str) -> None:
    name = arg.strip()
    if not name:
        control.say(f"model: {control.model_label} — switch with /model provider:name")
        return
    from ctxagent.agent import switch_model

    old = control.agent

    def work() -> Outcome:
        try:
            agent = switch_model(control.session, name, control.new_agent, carry_from=old)
        except Exception as exc:
            return Outcome(False, f"cannot switch to {name}: {exc} — still on {control.model_label}")
        return Outcome(True, f"model: {agent.model_label}", agent=agent)

    control.start_action("model switch", work, activity="switching model")


# -- compaction and sessions --------------------------------------------------------------------

@handles("compact")
def compact(control: SessionControl, arg: str) -> None:
    agent = control.agent
    assert agent is not None
    focus = arg.strip() or None
    control.start_action("compact", lambda: Outcome(agent.compact(focus) is not None), activity="compacting")


@handles("handoff")
def handoff(control: SessionControl, arg: str) -> None:
    agent = control.agent
    assert agent is not None
    # a fold of the log (quick, on the UI thread); its HandoffDrafted opens the editor (tui/app/screens/handoff.py),
    # as the model's handoff tool does
    agent.handoff(arg.strip() or None)


@handles("new")
def new(control: SessionControl, arg: str) -> None:
    new_session(control, with_summary=arg.strip().lower() in ("summary", "seed", "--summary"))


def new_session(control: SessionControl, with_summary: bool) -> None:
    agent = control.agent
    assert agent is not None
    old_id = control.session.id

    def work() -> Outcome:
        new = agent.new_session(with_summary, control.open_session)
        new_agent = control.new_agent(new)
        what = "with a summary of" if with_summary else "after"
        return Outcome(True, f"new session {new.id} {what} {old_id}", session=new, agent=new_agent)

    control.start_action("new session", work, activity="new session")


@handles("resume")
def resume(control: SessionControl, arg: str) -> None:
    from ctxagent.agent import list_sessions
    from ctxagent.tui.app.screens.pickers import SessionPicker

    if control.busy:
        control.say("wait for the turn to end first", "warning")
        return
    control.app.push_screen(SessionPicker(list_sessions(control.session.root), str(control.session.id)),
                            partial(_resume_picked, control))


def _resume_picked(control: SessionControl, session_id: str | None) -> None:
    if not session_id or session_id == str(control.session.id):
        return
    from ctxagent.agent import open_session

    opener = control.open_session or open_session
    root, config = control.session.root, control.session.config

    def work() -> Outcome:
        new = opener(root, config, resume=session_id, keep_model=True,  # the session's own model, not this one's
                     keep_mode=True)
        agent = control.new_agent(new)
        return Outcome(True, f"resumed session {session_id}", session=new, agent=agent)

    control.start_action("resume", work, activity="resuming")


def breakpoint_chosen(control: SessionControl, choice: str | None) -> None:
    """The breakpoint bar's or the full-window dialog's answer: compact now, or a new session that
    starts from a summary of this one ("later" and no answer do nothing)."""
    if choice == "compact":
        compact(control, "")
    elif choice == "new_session":
        new_session(control, with_summary=True)


# -- rewind ---------------------------------------------------------------------------------------

@handles("rewind")
def rewind(control: SessionControl, arg: str) -> None:
    from ctxagent.tui.app.screens.rewind_screen import RewindScreen

    agent = control.agent
    assert agent is not None
    if control.busy:
        control.say("wait for the turn to end (or Esc) before rewinding", "warning")
        return

    def work() -> Outcome:
        menu = agent.rewind_menu()  # reads the shadow repository: off the UI thread

        def pick() -> None:
            if menu.note and menu.turns:
                control.say(f"{menu.note}; conversation rewind only", "warning")
            control.app.push_screen(RewindScreen(menu.turns, has_code=menu.has_code), partial(_rewind_picked, control))

        return Outcome(True, then=pick)

    control.start_action("rewind", work, activity="reading checkpoints")


def _rewind_picked(control: SessionControl, choice: RewindChoice | None) -> None:
    from ctxagent.agent import describe_rewind, find_user_turn

    if choice is None:
        return
    agent = control.agent
    assert agent is not None

    def work() -> Outcome:
        text = find_user_turn(control.session.log, choice.turn).user.text
        result = agent.rewind(choice.turn, choice.mode, control.confirm_overwrite)
        restore = text if choice.mode in ("both", "conversation") else ""
        return Outcome(True, describe_rewind(result, choice.turn, choice.mode), rerender=True, restore_input=restore)

    control.start_action("rewind", work, activity="rewinding")
