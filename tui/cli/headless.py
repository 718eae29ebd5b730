"""`ctxagent -p "task"`: one turn without a terminal UI, text, JSON or stream-json output.

The prompt is `-p TEXT`; piped standard input is read to its end and appended to it after a blank
line (`git diff | ctxagent -p "review this"`), or is the whole prompt (`echo task | ctxagent -p`).
An empty prompt is a usage error (exit 2), never sent.

Text mode: stdout gets the answer only (the text of the step that ends the turn); progress — the
text of steps that call tools, one line per tool call, notices, warnings and errors — goes to
stderr. JSON mode: one JSON object on stdout, notices on stderr. Every error is printed once, and
everything printed goes through the display edge (`context/floor/display.py`): no control sequence
reaches the terminal, and invisible characters are shown. Stream-json mode (`tui/cli/stream_json.py`):
one JSON object per line on stdout as the run happens, the last one the result with its exit code.

Exit codes (stable, for scripts):
    0  the turn finished (end_turn)
    1  the provider failed after retries, or the stream broke (the partial reply is kept in the log),
       or ctxagent's state could not be written mid-turn (disk full)
    2  configuration or usage error (no model, a retired model, bad config file, unknown session, a
       `.ctxagent/` shipped by the repository or one that cannot be written, a project command the
       user has not confirmed: nothing is sent)
    3  authentication failed (bad or missing API key)
    4  the context cannot fit: one message larger than the window, or the provider still says the
       prompt is too long after compacting
    5  the step limit was reached
    6  the turn finished, but an edit or command was refused (no --yes); JSON: "refused" lists them;
       or a user_prompt hook blocked the prompt (stop_reason "blocked")
    7  the reply was cut: the model hit its output limit (stop_reason "max_tokens") or the reply
       passed ctxagent's size cap (stop_reason "response_cap")
    130 cancelled (Ctrl-C)

JSON fields (also stream-json's last line, `result`, with `exit_code`): session, result, steps, tool_calls, usage, stop_reason ("end_turn" | "max_tokens" |
"response_cap" | "max_steps" | "error" | "cancelled" | "blocked"), refused [{tool, permission, target}],
permission_mode, context, and error {type, message} when the turn failed.

`--permission-mode plan`: only read-only tools run (agent/permissions.py); the answer is the model's
plan, printed like any answer, with a line on stderr saying nothing was changed (exit 0).
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ctxagent.agent.config import flags_from_args, load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.parts import deny_mutations
from ctxagent.agent.permissions import PLAN_MODE, inline_text
from ctxagent.agent.providers.protocol import CUT_STOPS
from ctxagent.agent.session import find_repo_root, open_session
from ctxagent.agent.trust import describe_untrusted
from ctxagent.agent.updates import (
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    HandoffDrafted,
    ModelWaiting,
    Notice,
    PermissionDecision,
    PermissionRequest,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from ctxagent.context.errors import ConfigError, CtxagentError, HistoryError
from ctxagent.context.events import TemplateRef
from ctxagent.context.floor.display import echo, echo_json, plural
from ctxagent.context.floor.state_paths import describe_os_error
from ctxagent.context.request import Usage

EXIT_OK, EXIT_PROVIDER, EXIT_CONFIG, EXIT_AUTH, EXIT_OVERFLOW, EXIT_MAX_STEPS = 0, 1, 2, 3, 4, 5
EXIT_REFUSED, EXIT_CUT, EXIT_CANCELLED = 6, 7, 130


def _write(stream: TextIO, text: str) -> None:
    echo(text, file=stream, end="")


class TextPrinter:
    """Text mode: a step's text goes to stdout when the step ends the turn (no tool calls), else to
    stderr as progress; tool lines and notices go to stderr. Remembers the errors it printed."""

    def __init__(self, out: TextIO, err: TextIO):
        self.out, self.err = out, err
        self._step_text: list[str] = []
        self.printed_errors: set[str] = set()

    def __call__(self, ev: AgentEvent) -> None:
        if isinstance(ev, AssistantDelta):
            self._step_text.append(ev.text)
        elif isinstance(ev, AssistantDone):
            text = "".join(self._step_text) or ev.text
            self._step_text = []
            if text.strip():
                _write(self.out if ev.tool_calls == 0 else self.err, text if text.endswith("\n") else text + "\n")
        elif isinstance(ev, ToolStarted):
            args = json.dumps(ev.arguments, ensure_ascii=False)
            _write(self.err, f"▸ {ev.name} {args[:160]}\n")
        elif isinstance(ev, ToolFinished):
            status = "error" if ev.is_error else "ok"
            spilled = " (spilled)" if ev.meta.get("spill") else ""
            first = ev.content.strip().splitlines()[0][:120] if ev.content.strip() else ""
            _write(self.err, f"  {status} {ev.duration_ms} ms{spilled}: {first}\n")
        elif isinstance(ev, Notice):
            notice(self.err, ev, self.printed_errors)
        elif isinstance(ev, ModelWaiting):
            waiting(self.err, ev)
        elif isinstance(ev, HandoffDrafted):
            print_handoff(self.err, ev)


def print_handoff(err: TextIO, ev: HandoffDrafted) -> None:
    """Headless has no editor: the draft (also in the log, event `ev.event_id`) is printed whole."""
    _write(err, f"── handoff draft (logged as event {ev.event_id}; start the new session with it) ──\n{ev.text}"
                f"── end of handoff draft ──\n")


def waiting(err: TextIO, ev: ModelWaiting) -> None:
    if ev.seconds:
        _write(err, f"ctxagent: waiting for the model ({ev.seconds:.0f} s)\n")


def notice(err: TextIO, ev: Notice, printed_errors: set[str]) -> None:
    if ev.level == "error":
        printed_errors.add(ev.message)
        _write(err, f"ctxagent: {ev.message}\n")
    else:
        _write(err, f"[{ev.level}] {ev.message}\n")


class RefusingApprover:
    """Without --yes, edits and commands are refused (the model is told why); each refusal is said
    on stderr at once and collected for the exit code and the JSON."""

    def __init__(self, err: TextIO):
        self.err = err
        self.refused: list[dict[str, str]] = []
        self.on_refused: Callable[[dict[str, str]], None] | None = None  # stream-json's `refused` line

    def __call__(self, req: PermissionRequest) -> PermissionDecision:
        first_line = req.preview.splitlines()[0] if req.preview else ""
        target = req.target or str(req.arguments.get("path") or req.arguments.get("command") or first_line)
        # all of it, or its head and its end with the count between: `| sh` hides at the end
        self.refused.append({"tool": req.tool, "permission": req.permission, "target": inline_text(target, 2000)})
        if self.on_refused is not None:
            self.on_refused(self.refused[-1])
        why = (f"{req.note} It cannot be confirmed in a headless run." if not req.can_remember and req.note
               else f"this run may not {'edit files' if req.permission == 'edit' else 'run commands'}; "
                    "run with --yes to allow it")
        _write(self.err, f"ctxagent: refused {req.tool} {inline_text(target, 300)} — {why}\n")
        return deny_mutations(req)


def _exit_code(stop: str, error_type: str | None, refused: bool) -> int:
    if stop == "end_turn":
        return EXIT_REFUSED if refused else EXIT_OK
    if stop in CUT_STOPS:
        return EXIT_CUT
    if stop == "blocked":
        return EXIT_REFUSED
    if stop == "cancelled":
        return EXIT_CANCELLED
    if stop == "max_steps":
        return EXIT_MAX_STEPS
    if error_type == "AuthError":
        return EXIT_AUTH
    if error_type in ("ContextOverflowError", "ContextLengthError"):
        return EXIT_OVERFLOW
    if error_type in ("ConfigError", "ModelNotFoundError"):
        return EXIT_CONFIG
    return EXIT_PROVIDER


def _custom_command(root: Path, prompt: str, err: TextIO) -> tuple[str, TemplateRef | None]:
    """`-p "/name args"` runs a custom command (agent/custom_commands.py): its expansion is what is sent
    (and logged with the command), printed to stderr first. Headless has no one to ask: a project command
    runs only when the user confirmed its bytes (`ctxagent trust`, or once in the app), else a ConfigError
    saying so and how (exit 2, nothing sent)."""
    from ctxagent.agent.custom_commands import confirmation, expand_prompt, refusal

    found = expand_prompt(root, prompt)
    if found is None:
        return prompt, None
    command, expanded, ref = found
    if confirmation(root, command) in ("new", "changed"):
        raise ConfigError(refusal(root, command))
    _write(err, f"ctxagent: /{command.qualified} ({command.path}) expands to:\n{expanded}\n---\n")
    return expanded, ref


class PromptError(ValueError):
    """No prompt to send, or piped input too large to read."""


MAX_PIPED_BYTES = 8 * 1024 * 1024  # far past any window; a larger input is refused, not read whole
NO_PROMPT = 'no prompt: give -p the task (ctxagent -p "fix the tests"), or pipe it in (echo "fix the tests" | ctxagent -p)'


def read_prompt(text: str | None, stdin: Any) -> str:
    """`-p TEXT` and, when standard input is not a terminal, what is piped in: appended after a blank
    line, or the whole prompt. Raises PromptError when nothing is left to send."""
    piped = ""
    if _is_piped(stdin):
        source = getattr(stdin, "buffer", stdin)
        data = source.read(MAX_PIPED_BYTES + 1)
        raw = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else str(data or "")
        if len(raw.encode("utf-8", errors="replace")) > MAX_PIPED_BYTES:
            raise PromptError(f"the piped input is over {MAX_PIPED_BYTES // (1024 * 1024)} MB; "
                              "pass a file's path in the prompt instead (the agent reads it, in parts)")
        piped = raw.rstrip()
    prompt = "\n\n".join(part for part in ((text or "").strip() and (text or ""), piped) if part.strip())
    if not prompt.strip():
        raise PromptError(NO_PROMPT)
    return prompt


def _is_piped(stdin: Any) -> bool:
    """Standard input is a pipe, a file or a socket (not a terminal, not /dev/null, not a stream
    without a file descriptor, such as a test runner's stand-in)."""
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (AttributeError, ValueError, OSError):  # None, closed, or no descriptor
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def run_headless(args: Any, out: TextIO | None = None, err: TextIO | None = None, stdin: Any = None) -> int:
    from ctxagent.agent.providers.catalogue import refresh_for_start

    out, err = out or sys.stdout, err or sys.stderr  # looked up now: a caller may have redirected them
    try:
        prompt = read_prompt(args.prompt, sys.stdin if stdin is None else stdin)
    except PromptError as exc:
        _write(err, f"ctxagent: {exc}\n")
        return EXIT_CONFIG

    cwd = Path(args.cwd).resolve() if getattr(args, "cwd", None) else Path.cwd()
    root = find_repo_root(cwd)
    printed_errors: set[str] = set()
    approver = RefusingApprover(err)
    try:
        flags = flags_from_args(args)
        config = load_config(root, flags)
        if config.ignored_keys:  # headless never asks: say what was left out, what the files hold, how to allow it
            _write(err, f"ctxagent: {describe_untrusted(root, config.ignored_keys, first_look=False)}\n")
        message, template = _custom_command(root, prompt, err)  # before the session: a refusal leaves no log
        resume = args.resume if args.resume is not None else ("" if args.continue_ else None)
        session = open_session(root, config, resume, keep_model=flags.get("model") is None,  # --model wins
                               keep_mode=flags.get("permission_mode") is None)
        for line in session.notices:  # a resume on another base URL than the log recorded
            _write(err, f"ctxagent: {line}\n")
        refresh_for_start(session.config)  # the provider's model list, when a day old (short timeout, never fatal)
        printer: Any = None
        if args.output == "text":
            printer = TextPrinter(out, err)
        elif args.output == "stream-json":
            from ctxagent.tui.cli.stream_json import StreamPrinter

            printer = stream = StreamPrinter(out, session.log.sanitize)
            approver.on_refused = lambda refused: stream.emit("refused", **refused)
        if printer is not None:
            printed_errors = printer.printed_errors
        agent = create_agent(session, on_event=printer or (lambda ev: _json_notice(ev, err, printed_errors)),
                             approver=approver)
        if args.output == "stream-json":
            printer.session_started(agent)
        if agent.parts.mcp is not None:  # one prompt and no one to watch a status bar: wait for the servers
            agent.parts.mcp.hub.wait_started()
            for state in agent.parts.mcp.hub.states():
                if state.state not in ("ready", "starting"):
                    _write(err, f"ctxagent: MCP server {state.name} {state.state}: {state.error}\n")
    except (ConfigError, HistoryError) as exc:
        _write(err, f"ctxagent: {exc}\n")
        return EXIT_CONFIG
    except CtxagentError as exc:
        _write(err, f"ctxagent: {exc}\n")
        return EXIT_PROVIDER
    except OSError as exc:
        _write(err, f"ctxagent: cannot set up the session: {describe_os_error(exc)}\n")
        return EXIT_CONFIG
    cancel = threading.Event()
    try:
        done = agent.run_turn(message, cancel, template=template)
    except KeyboardInterrupt:
        cancel.set()
        _close(session)
        _write(err, "ctxagent: cancelled\n")
        return EXIT_CANCELLED
    except OSError as exc:  # the session log or another state file could not be written
        _write(err, f"ctxagent: cannot write ctxagent's state: {describe_os_error(exc)}; the session log holds "
                    "everything written before\n")
        return EXIT_PROVIDER
    except CtxagentError as exc:
        _write(err, f"ctxagent: {exc}\n")
        return EXIT_PROVIDER
    finally:
        if agent.parts.mcp is not None:
            agent.parts.mcp.close()
        _close(session)
    stop = done.stop_reason
    code = _exit_code(stop, done.error_type or None, bool(approver.refused))
    if done.error and done.error not in printed_errors:
        _write(err, f"ctxagent: {done.error}\n")
    if stop in CUT_STOPS:
        why = ("the model reached its output limit (max_tokens)" if stop == "max_tokens"
               else "the reply passed ctxagent's size cap")
        _write(err, f"ctxagent: the reply was cut: {why}; what arrived is kept in the session\n")
    if session.config.permission_mode == PLAN_MODE and stop == "end_turn":
        # the plan is the answer (stdout); nothing was changed, and nobody is here to accept it
        _write(err, "ctxagent: plan mode — only read-only tools ran, nothing was changed; to carry the plan out, "
                    f"run again with --permission-mode ask (or --yes) and --resume {session.id}\n")
    if stop == "max_steps" and args.output == "text":
        _write(err, f"ctxagent: stopped at the step limit ({plural(done.steps, 'step')}) before the model "
                    "finished; go on with `ctxagent --continue -p \"continue\"`, or allow more with --max-steps\n")
    if args.output == "json":
        echo_json(_json_result(agent, done, approver.refused), indent=None, file=out)
    elif args.output == "stream-json":
        printer.write({"type": "result", "exit_code": code, **_json_result(agent, done, approver.refused)})
    return code


def _this_run(events: list[Any]) -> list[Any]:
    start = max((e.id for e in events if e.kind == "user"), default=0)
    return events[start:]


def _close(session: Any) -> None:
    try:
        session.log.close()
    except OSError:
        pass  # already reported; a full disk must not turn the report into a traceback


def _json_notice(ev: AgentEvent, err: TextIO, printed_errors: set[str]) -> None:
    if isinstance(ev, Notice):
        notice(err, ev, printed_errors)
    elif isinstance(ev, ModelWaiting):
        waiting(err, ev)
    elif isinstance(ev, HandoffDrafted):
        print_handoff(err, ev)


def _json_result(agent: Any, done: TurnFinished, refused: list[dict[str, str]]) -> dict[str, Any]:
    log = agent.session.log
    turn_events = [e for e in _this_run(log.events) if e.kind in ("assistant", "tool_result")]
    usage = sum((e.assistant.usage for e in turn_events if e.kind == "assistant"), Usage())
    result: dict[str, Any] = {
        "session": agent.session.id,
        "result": log.sanitize(done.text) if log.sanitize else done.text,  # as logged: keys redacted
        "steps": done.steps,
        "tool_calls": sum(1 for e in turn_events if e.kind == "tool_result"),
        "usage": dataclasses.asdict(usage),
        "stop_reason": done.stop_reason,
        "refused": refused,
        "permission_mode": agent.session.config.permission_mode,
        "context": agent.last_report.to_dict() if agent.last_report else None,
    }
    if done.stop_reason == "error":
        result["error"] = {"type": done.error_type, "message": done.error}
    return result
