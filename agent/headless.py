"""`ctxagent -p "task"`: one turn without a terminal UI, text or JSON output.

Exit codes (stable, for scripts):
    0  the turn finished (end_turn)
    1  the provider failed after retries, or the stream broke (the partial reply is kept in the log),
       or ctxagent's state could not be written mid-turn (disk full)
    2  configuration or usage error (no model, bad key name, bad config file, unknown session, a
       `.ctxagent/` shipped by the repository or one that cannot be written)
    3  authentication failed (bad or missing API key)
    4  the context cannot fit even after spill / prune / compact (one message larger than the window)
    5  the step limit was reached
    130 cancelled (Ctrl-C)
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from ctxagent.agent.config import flags_from_args, load_config
from ctxagent.agent.events import AgentEvent, AssistantDelta, AssistantDone, Notice, ToolFinished, ToolStarted
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import find_repo_root, open_session
from ctxagent.agent.trust import describe_ignored
from ctxagent.context.errors import ConfigError, CtxagentError, HistoryError
from ctxagent.context.paths import describe_os_error

EXIT_OK, EXIT_PROVIDER, EXIT_CONFIG, EXIT_AUTH, EXIT_OVERFLOW, EXIT_MAX_STEPS, EXIT_CANCELLED = 0, 1, 2, 3, 4, 5, 130


class TextPrinter:
    """Streams the reply and prints one line per tool call (to stderr for notices)."""

    def __init__(self, out: TextIO, err: TextIO):
        self.out, self.err = out, err
        self._mid_line = False

    def __call__(self, ev: AgentEvent) -> None:
        if isinstance(ev, AssistantDelta):
            self.out.write(ev.text)
            self.out.flush()
            self._mid_line = not ev.text.endswith("\n")
        elif isinstance(ev, AssistantDone) and self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        elif isinstance(ev, ToolStarted):
            args = json.dumps(ev.arguments, ensure_ascii=False)
            self.out.write(f"▸ {ev.name} {args[:160]}\n")
        elif isinstance(ev, ToolFinished):
            status = "error" if ev.is_error else "ok"
            spilled = " (spilled)" if ev.meta.get("spill") else ""
            first = ev.content.strip().splitlines()[0][:120] if ev.content.strip() else ""
            self.out.write(f"  {status} {ev.duration_ms} ms{spilled}: {first}\n")
        elif isinstance(ev, Notice):
            self.err.write(f"[{ev.level}] {ev.message}\n")
        self.out.flush()


def _exit_code(stop: str, error_type: str | None) -> int:
    if stop == "end_turn":
        return EXIT_OK
    if stop == "cancelled":
        return EXIT_CANCELLED
    if stop == "max_steps":
        return EXIT_MAX_STEPS
    if error_type == "AuthError":
        return EXIT_AUTH
    if error_type in ("ContextOverflowError",):
        return EXIT_OVERFLOW
    if error_type in ("ConfigError", "ModelNotFoundError"):
        return EXIT_CONFIG
    return EXIT_PROVIDER


def run_headless(args: Any, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    cwd = Path(args.cwd).resolve() if getattr(args, "cwd", None) else Path.cwd()
    root = find_repo_root(cwd)
    try:
        config = load_config(root, flags_from_args(args))
        if config.ignored_keys:  # headless never asks: say what was left out and how to allow it
            err.write(f"ctxagent: {describe_ignored(config.ignored_keys)}\n")
        resume = args.resume if args.resume is not None else ("" if args.continue_ else None)
        session = open_session(root, config, resume)
        printer = TextPrinter(out, err) if args.output == "text" else None
        agent = create_agent(session, on_event=printer or (lambda ev: _json_notice(ev, err)))
    except (ConfigError, HistoryError) as exc:
        err.write(f"ctxagent: {exc}\n")
        return EXIT_CONFIG
    except CtxagentError as exc:
        err.write(f"ctxagent: {exc}\n")
        return EXIT_PROVIDER
    except OSError as exc:
        err.write(f"ctxagent: cannot set up the session: {describe_os_error(exc)}\n")
        return EXIT_CONFIG
    cancel = threading.Event()
    try:
        done = agent.run_turn(args.prompt, cancel)
    except KeyboardInterrupt:
        cancel.set()
        _sync(session)
        err.write("ctxagent: cancelled\n")
        return EXIT_CANCELLED
    except OSError as exc:  # the session log or another state file could not be written
        err.write(f"ctxagent: cannot write ctxagent's state: {describe_os_error(exc)}; the session log holds "
                  "everything written before\n")
        return EXIT_PROVIDER
    except CtxagentError as exc:
        err.write(f"ctxagent: {exc}\n")
        return EXIT_PROVIDER
    finally:
        _sync(session)
    this_run = max((e.id for e in session.log.events if e.kind == "user"), default=0)
    errors = [e for e in session.log.events[this_run:] if e.kind == "error"]  # not a resumed session's old ones
    last_error = errors[-1].data if errors and done.stop_reason == "error" else None
    code = _exit_code(done.stop_reason, last_error.get("error_type") if last_error else None)
    if last_error and args.output == "text":
        err.write(f"ctxagent: {last_error.get('message')}\n")
    if args.output == "json":
        out.write(json.dumps(_json_result(agent, done, last_error), ensure_ascii=False) + "\n")
    return code


def _sync(session: Any) -> None:
    try:
        session.log.sync()
    except OSError:
        pass  # already reported; a full disk must not turn the report into a traceback


def _json_notice(ev: AgentEvent, err: TextIO) -> None:
    if isinstance(ev, Notice):
        err.write(f"[{ev.level}] {ev.message}\n")


def _json_result(agent: Any, done: Any, error: dict[str, Any] | None) -> dict[str, Any]:
    log = agent.session.log
    start = max((e.id for e in log.events if e.kind == "user"), default=0)  # this run's turn only
    turn_events = [e for e in log.events[start:] if e.kind in ("assistant", "tool_result")]
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read": 0, "cache_write": 0}
    for e in turn_events:
        if e.kind == "assistant":
            for k in usage:
                usage[k] += int(e.data.get("usage", {}).get(k, 0) or 0)
    result: dict[str, Any] = {
        "session": agent.session.id,
        "result": log.sanitize(done.text) if log.sanitize else done.text,  # as logged: keys redacted
        "steps": done.steps,
        "tool_calls": sum(1 for e in turn_events if e.kind == "tool_result"),
        "usage": usage,
        "stop_reason": done.stop_reason,
        "context": agent.last_report.to_dict() if agent.last_report else None,
    }
    if error:
        result["error"] = {"type": error.get("error_type"), "message": error.get("message")}
    return result
