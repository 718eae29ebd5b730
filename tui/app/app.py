"""The ctxagent Textual app: a session screen (tui/app/screens/session_screen.py) as its default screen, the
set-up screen when no model is usable, and the keys that work everywhere; and `run_app`, which
opens it from the command line (`ctxagent`, --resume, --continue, demo).

Start-up is built for a usable prompt at once: only what the first frame needs happens before the
app starts (the config, the session log); the first frame shows the session screen with the input
focused (keys typed early land in it); the agent — provider, tokenizer, memory, checkpoints — is
built on a worker thread after that frame, a message sent before it is ready waits for it, and a
configuration it cannot use opens the set-up screen.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ctxagent.tui.app.messages import SetupNeeded
from ctxagent.tui.app.screens.session_screen import SessionScreen
from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

if TYPE_CHECKING:
    from ctxagent.agent import Agent, Config, Session
    from ctxagent.tui.app.control import AgentFactory, SessionControl, SessionOpener
    from ctxagent.tui.app.screens.setup_screen import LocalServer, SetupChoice

CTRL_C_AGAIN_S = 2.0  # a second Ctrl+C within this time quits


class DemoLike(Protocol):
    """What the set-up screen's demo button starts (the lab's scripted demo, tui/lab/scripted/demo.py,
    handed in by the console script: the app does not import the lab)."""

    repo: Path
    flags: dict[str, Any]
    label: str
    prompt: str

    def stop_server(self) -> None: ...

    def stop(self) -> None: ...


class CtxApp(App[int]):
    TITLE = "ctxagent"
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+c", "ctrl_c", "Interrupt · clear · quit", show=False, priority=True),
    ]

    def __init__(
        self,
        session: Session | None = None,
        make_agent: AgentFactory | None = None,
        *,
        label: str = "",
        initial_input: str = "",
        open_session: SessionOpener | None = None,
        reload_config: Callable[[], Config] | None = None,
        local_server: LocalServer | None = None,
        probe: bool = True,
        prepare_demo: Callable[[], DemoLike] | None = None,
    ) -> None:
        super().__init__()
        self.prepare_demo = prepare_demo
        self.reload_config = reload_config
        self.session = session
        self.make_agent = make_agent
        self.label = label
        self.initial_input = initial_input
        self.open_session = open_session
        self.local_server = local_server
        self.probe = probe
        self.demo: DemoLike | None = None
        self._ctrl_c_armed = 0.0  # when a Ctrl+C that did nothing else asked for a second one
        self._armed_by_interrupt = False

    # -- screens ----------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        if self.session is None or self.make_agent is None:
            return Screen()
        return SessionScreen(self.session, self.make_agent, label=self.label, initial_input=self.initial_input,
                             open_session=self.open_session, reload_config=self.reload_config)

    def on_mount(self) -> None:
        if self.session is None or self.make_agent is None:
            self.ask_for_setup("no session")

    @property
    def session_screen(self) -> SessionScreen:
        """The session's screen (the bottom of the stack, under any modal)."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, SessionScreen):
                return screen
        raise LookupError("no session screen")

    @property
    def agent(self) -> Agent | None:
        return self.session_screen.agent

    def get_system_commands(self, screen: Screen[Any]) -> Any:
        from ctxagent.tui.app.commands import all_commands
        from ctxagent.tui.app.slash import run_slash

        yield from super().get_system_commands(screen)
        for cmd in all_commands():
            yield SystemCommand(f"/{cmd.name}", cmd.help, partial(self._palette_slash, run_slash, cmd.name))

    def _palette_slash(self, run: Callable[[SessionControl, str], None], name: str) -> None:
        try:
            run(self.session_screen, f"/{name}")
        except LookupError:
            self.notify("Set up a model first.", severity="warning")

    # -- set-up -------------------------------------------------------------------------------------
    def on_setup_needed(self, message: SetupNeeded) -> None:
        self.ask_for_setup(message.problem)

    @work(thread=True, group="setup", name="probe")
    def ask_for_setup(self, problem: str) -> None:
        """No usable model: look for a local server (off the UI thread), then show the set-up screen."""
        from ctxagent.tui.app.screens.setup_screen import probe_local_server

        local = self.local_server or (probe_local_server() if self.probe else None)
        self.call_from_thread(self._show_setup, problem, local)

    def _show_setup(self, problem: str, local: LocalServer | None) -> None:
        from ctxagent.tui.app.screens.setup_screen import SetupScreen

        self.push_screen(SetupScreen(problem, local), self._after_setup)

    def _after_setup(self, choice: SetupChoice | None) -> None:
        if choice is None:
            self.exit(2)
            return
        if choice.kind == "demo":
            self._start_demo()
            return
        screen = self.session_screen
        screen.session.config.model = choice.model
        screen.session.config.base_url = choice.base_url
        screen.starter.build()

    def _start_demo(self) -> None:
        """The set-up screen's demo button: the same scripted demo as `ctxagent demo`, in this app."""
        screen = self.session_screen if any(isinstance(s, SessionScreen) for s in self.screen_stack) else None
        self._prepare_demo(screen)

    @work(thread=True, group="setup", name="demo", description="prepare the demo")
    def _prepare_demo(self, screen: SessionScreen | None) -> None:
        from ctxagent.agent import load_config, open_session

        if self.prepare_demo is None:
            self.call_from_thread(self.notify, "the demo is started by the `ctxagent` command (`ctxagent demo`)",
                                  severity="warning")
            return
        demo = self.prepare_demo()
        session = open_session(demo.repo, load_config(demo.repo, demo.flags))
        agent = screen.new_agent(session) if screen is not None else None
        self.call_from_thread(self._show_demo, demo, session, agent)

    def _show_demo(self, demo: DemoLike, session: Session, agent: Agent | None) -> None:
        self.demo = demo
        self.session = session
        if agent is None:  # no session screen yet (the app opened without a session)
            if self.make_agent is None:
                from ctxagent.agent import create_agent

                self.make_agent = create_agent
            self.push_screen(SessionScreen(session, self.make_agent, label=demo.label, initial_input=demo.prompt,
                                           open_session=self.open_session))
            return
        screen = self.session_screen
        screen.label = demo.label
        screen.switch_session(session, agent)
        screen.offer_input(demo.prompt)

    # -- keys that work everywhere --------------------------------------------------------------------
    def action_ctrl_c(self) -> None:
        """First press: interrupt the running turn, else clear the input; with nothing to do, or right
        after an interrupt, it asks for a second press — which quits. After an interrupt the second
        press counts from when the turn actually stopped (it may take a moment), not from the first."""
        now = time.monotonic()
        if self._ctrl_c_armed and now - self._armed_since() < CTRL_C_AGAIN_S:
            self.action_quit_now()
            return
        done = self.screen.ctrl_c() if isinstance(self.screen, SessionScreen) else ""
        if done == "cleared":
            self._ctrl_c_armed = 0.0
            return
        self._ctrl_c_armed = now
        self._armed_by_interrupt = done == "interrupted"
        self.notify("Press Ctrl+C again to quit.", timeout=CTRL_C_AGAIN_S)

    def _armed_since(self) -> float:
        if not self._armed_by_interrupt or not isinstance(self.screen, SessionScreen):
            return self._ctrl_c_armed
        screen = self.screen
        if screen.busy:  # the interrupted turn is still stopping: the second press is still meant
            return time.monotonic()
        return max(self._ctrl_c_armed, screen.turn_ended_at)

    async def action_quit(self) -> None:
        self.action_quit_now()

    def action_quit_now(self) -> None:
        self.exit(0)

    def exit(self, result: int | None = None, return_code: int = 0, message: Any = None) -> None:
        """Every way out (/quit, Ctrl+Q, the set-up screen, an error) first tells the workers: a running
        turn stops, and a question waiting for an answer (tui/app/bridge.py) gives up — a permission asked
        is denied — so no worker thread is left waiting and the process ends."""
        for screen in self.screen_stack:
            if isinstance(screen, SessionScreen):
                screen.stopping = True
                screen.cancel.set()
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        if self.demo is not None:
            self.demo.stop_server()  # the repository goes after its session is closed (run_app)


def run_app(args: argparse.Namespace, prepare_demo: Callable[[], DemoLike] | None = None) -> int:
    """`ctxagent` (and --resume / --continue, demo): build the session from the CLI args, run the app.
    `args.initial_input` is pre-typed in the input box (the demo's suggested request)."""
    from ctxagent.context import CtxagentError, echo

    try:
        session = open_from_args(args)
    except CtxagentError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2
    label = getattr(args, "app_label", "") or getattr(args, "label", "") or ""
    app = CtxApp(session, _create_agent, label=label, initial_input=getattr(args, "initial_input", "") or "",
                 probe=getattr(args, "probe", True), reload_config=partial(config_from_args, args, session),
                 prepare_demo=prepare_demo)
    try:
        result = app.run()
    finally:
        session.log.close()
        if app.session is not None and app.session is not session:
            app.session.log.close()
        if app.demo is not None:  # the set-up screen's demo: its throwaway repository goes with the app
            app.demo.stop()
    return int(result or 0)


def open_from_args(args: argparse.Namespace) -> Session:
    """The session the command line asks for: a new one, or a resumed one on the model it last ran
    with (unless --model names another). Raises CtxagentError."""
    from ctxagent.agent import find_repo_root, flags_from_args, load_config, open_session

    root = find_repo_root(Path(getattr(args, "cwd", None) or ".").resolve())
    flags = flags_from_args(args)
    config = load_config(root, flags)
    return open_session(root, config, resume=_resume_ref(args), keep_model=flags.get("model") is None,
                        keep_mode=flags.get("permission_mode") is None)


def config_from_args(args: argparse.Namespace, session: Session) -> Config:
    """The config again, from the same sources (after the user trusts the repository): a resumed
    `session` stays on its own model and mode, as `open_from_args` opened it."""
    from ctxagent.agent import flags_from_args, load_config, with_session_mode, with_session_model

    flags = flags_from_args(args)
    config = load_config(session.root, flags)
    if _resume_ref(args) is not None and flags.get("model") is None:
        config = with_session_model(config, session.log)
    if _resume_ref(args) is not None and flags.get("permission_mode") is None:
        config = with_session_mode(config, session.log)[0]  # never above the reloaded config's
    return config


def _resume_ref(args: argparse.Namespace) -> str | None:
    if getattr(args, "continue_", False):
        return ""
    resume = getattr(args, "resume", None)
    return None if resume is None else str(resume)


def _create_agent(session: Session, **kwargs: Any) -> Agent:
    """The agent factory, imported when the app's worker first builds an agent (not before the first frame)."""
    from ctxagent.agent import create_agent

    return create_agent(session, **kwargs)
