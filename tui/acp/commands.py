"""Slash commands over ACP: advertised as `available_commands_update`, run when a prompt starts with one.

Each calls the same operation the app's command calls (the Agent's methods, which call
agent/session_ops.py): /compact → `Agent.compact`, /rewind → `Agent.rewind` (the one rewind; files
changed outside the agent are skipped, as headless, since an editor cannot be asked mid-command),
/remember → `Agent.remember`; /context prints the per-step table of `ctxagent report`
(context/monitor.py) under the window's current split, and /cost the session's tokens and cost.
There is no /handoff in ctxagent yet, so none is advertised. The app's /new, /resume, /model and
/clear are the editor's own business over ACP (a new thread, the session list, its own view).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxagent.context.monitor import usage_text

if TYPE_CHECKING:
    from ctxagent.agent.loop import Agent
    from ctxagent.tui.acp.stream import SessionStream


@dataclass(frozen=True)
class AcpCommand:
    name: str
    description: str
    hint: str  # what the argument is ("" when it takes none)
    run: Callable[[Agent, SessionStream, str], str]


def _compact(agent: Agent, stream: SessionStream, arg: str) -> str:
    done = agent.compact(arg.strip() or None)
    if done is None:
        return "Nothing to compact yet."
    turns = f"turns {done.first_turn}–{done.last_turn}" if done.first_turn else "the oldest messages"
    return (f"Compacted {turns} ({done.messages} messages, {done.method} summary): "
            f"{done.tokens_before:,} → {done.tokens_after:,} tokens. The originals stay in the log.")


def _rewind(agent: Agent, stream: SessionStream, arg: str) -> str:
    from ctxagent.agent.session_ops import REWIND_MODES, describe_rewind

    words = arg.split()
    menu = agent.rewind_menu()
    if not words:
        if not menu.turns:
            return "No turns to rewind to yet."
        rows = [f"- turn {t.turn}: {t.first_line}" + (f" (changed {', '.join(t.files_changed[:4])})" if t.files_changed else "")
                for t in menu.turns if t.visible]
        note = f"\n\nCode cannot be restored: {menu.note}." if not menu.has_code else ""
        return ("Usage: /rewind TURN [both|code|conversation] goes back to just before TURN.\n\n" + "\n".join(rows) + note)
    if not words[0].isdigit() or (len(words) > 1 and words[1] not in REWIND_MODES) or len(words) > 2:
        return "Usage: /rewind TURN [both|code|conversation] — e.g. /rewind 2 conversation"
    turn = int(words[0])
    mode = words[1] if len(words) > 1 else ("both" if menu.has_code else "conversation")
    result = agent.rewind(turn, mode)  # type: ignore[arg-type]  # mode is one of REWIND_MODES: checked above
    agent.preview()
    return describe_rewind(result, turn, mode) + (
        ". The editor still shows the rewound messages; the model no longer sees them." if mode != "code" else ".")


def _remember(agent: Agent, stream: SessionStream, arg: str) -> str:
    if not arg.strip():
        return "Usage: /remember TEXT — e.g. /remember never edit generated files"
    agent.remember(arg)
    return f"Pinned for every step of this session: {arg.strip()}"


def _context(agent: Agent, stream: SessionStream, arg: str) -> str:
    from ctxagent.context.monitor import format_report_table

    report = agent.last_report if agent.last_build is None else agent.last_build.report
    if report is None:
        return "No context built yet: send a message first."
    slices = " · ".join(f"{name} {int(report.used.get(name, 0)):,}" for name in ("system", "hot", "warm", "tools", "reserve"))
    head = (f"Context: {usage_text(report.usage_pct, 1)} of {report.window:,} tokens at step {report.step} "
            f"({report.calibrated_total:,} prompt tokens as the provider counts; advice: {report.advice})\n"
            f"Slices (ctxagent's count): {slices}")
    return head + "\n\n```\n" + format_report_table(agent.reports) + "\n```"


def _cost(agent: Agent, stream: SessionStream, arg: str) -> str:
    from ctxagent.context.request import Usage

    calls = [e for e in agent.log.events if e.kind == "assistant" and not e.assistant.direct]
    total = sum((e.assistant.usage for e in calls), Usage())
    cost = f"${stream.cost:.4f}" if stream.cost is not None else "unknown (no prices for this model)"
    return (f"{len(calls)} model calls with {agent.model_label}: input {total.input_tokens:,} · output {total.output_tokens:,} · "
            f"cache read {total.cache_read:,} · cache write {total.cache_write:,} tokens · cost {cost}")


COMMANDS: tuple[AcpCommand, ...] = (
    AcpCommand("compact", "Summarize older turns now (originals stay in the log)", "optional focus for the summary", _compact),
    AcpCommand("rewind", "Go back to before a turn: code, conversation, or both (no argument: list the turns)",
               "TURN [both|code|conversation]", _rewind),
    AcpCommand("context", "What fills the window: slices and the per-step table", "", _context),
    AcpCommand("remember", "Pin a constraint that is recalled into every step", "TEXT", _remember),
    AcpCommand("cost", "Tokens and cost of this session so far", "", _cost),
)
_BY_NAME = {c.name: c for c in COMMANDS}


def parse_command(text: str) -> tuple[AcpCommand, str] | None:
    """(command, argument) when `text` is one of ours ("/compact keep the API notes"); "//x" and an
    unknown "/word" are messages for the model."""
    s = text.strip()
    if s.startswith("／"):  # full-width slash (Chinese input methods), as in the app
        s = "/" + s[1:]
    if not s.startswith("/") or s.startswith("//"):
        return None
    head, _, rest = s[1:].partition(" ")
    command = _BY_NAME.get(head.lower())
    return (command, rest.strip()) if command is not None else None


def available_commands_update() -> Any:
    from acp.helpers import update_available_commands
    from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

    return update_available_commands(
        AvailableCommand(name=c.name, description=c.description,
                         input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.hint)) if c.hint else None)
        for c in COMMANDS
    )
