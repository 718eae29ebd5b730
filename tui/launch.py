"""Build the session from CLI arguments and run the app (`ctxagent`, --resume, --continue, demo).

Only what the first frame needs happens before the app starts (the config, the session log); the
agent is built by the app on a worker thread, and a configuration it cannot use opens the set-up
screen there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.context.errors import CtxagentError

if TYPE_CHECKING:
    from ctxagent.agent.loop import Agent
    from ctxagent.agent.session import Session


def _resume_ref(args: argparse.Namespace) -> str | None:
    if getattr(args, "continue_", False):
        return ""
    resume = getattr(args, "resume", None)
    return None if resume is None else str(resume)


def launch(args: argparse.Namespace, *, label: str = "", initial_input: str = "", probe: bool = True) -> int:
    """Open the app; `initial_input` is pre-typed in the input box (the demo's suggested request)."""
    from ctxagent.agent.config import flags_from_args, load_config
    from ctxagent.agent.session import find_repo_root, open_session
    from ctxagent.tui.app import CtxApp

    root = find_repo_root(Path(getattr(args, "cwd", None) or ".").resolve())
    flags = flags_from_args(args)
    try:
        config = load_config(root, flags)
        session = open_session(root, config, resume=_resume_ref(args))
    except CtxagentError as exc:
        print(f"ctxagent: {exc}", file=sys.stderr)
        return 2
    app = CtxApp(session, _create_agent, label=label or getattr(args, "label", "") or "", initial_input=initial_input,
                 probe=probe, reload_config=lambda: load_config(root, flags))
    try:
        result = app.run()
    finally:
        session.log.close()
        if app.session is not None and app.session is not session:
            app.session.log.close()
    return int(result or 0)


def _create_agent(session: Session, **kwargs: Any) -> Agent:
    """The agent factory, imported when the app's worker first builds an agent (not before the first frame)."""
    from ctxagent.agent.factory import create_agent

    return create_agent(session, **kwargs)
