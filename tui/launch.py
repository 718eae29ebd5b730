"""Build the session and agent from CLI arguments and run the app (`ctxagent`, --resume, --continue, demo)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ConfigError, CtxagentError


def _resume_ref(args: argparse.Namespace) -> str | None:
    if getattr(args, "continue_", False):
        return ""
    resume = getattr(args, "resume", None)
    return None if resume is None else str(resume)


def model_problem(session: Any, make_agent: Any) -> str:
    """"" when an agent can be built for the session's config, else what is wrong (for the setup screen)."""
    try:
        make_agent(session)
    except ConfigError as exc:
        return str(exc)
    return ""


def launch(args: argparse.Namespace, *, label: str = "", initial_input: str = "", probe: bool = True) -> int:
    """Open the app; `initial_input` is pre-typed in the input box (the demo's suggested request)."""
    from ctxagent.agent.config import flags_from_args, load_config
    from ctxagent.agent.factory import create_agent
    from ctxagent.agent.session import find_repo_root, open_session
    from ctxagent.tui.app import CtxApp
    from ctxagent.tui.setup_screen import probe_local_server

    root = find_repo_root(Path(getattr(args, "cwd", None) or ".").resolve())
    try:
        config = load_config(root, flags_from_args(args))
        session = open_session(root, config, resume=_resume_ref(args))
    except CtxagentError as exc:
        print(f"ctxagent: {exc}", file=sys.stderr)
        return 2
    problem = model_problem(session, create_agent)
    local = probe_local_server() if problem and probe else None
    app = CtxApp(session, create_agent, label=label or getattr(args, "label", "") or "",
                 setup_problem=problem, local_server=local, initial_input=initial_input)
    try:
        result = app.run()
    finally:
        session.log.close()
    return int(result or 0)
