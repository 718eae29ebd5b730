"""`ctxagent -p TASK --output stream-json`: the run as it happens, one JSON object per line on stdout.

As `claude -p --output-format stream-json` and `codex exec --json` do, every line is an object whose
`type` says what it is; a reader acts on the types it knows and skips the others. In order:

    session_started   {session, model, cwd, version, permission_mode, strategy, tools: [names]}
    turn_started      {turn, prompt}
    step_started      {step, turn}
    context_report    {step, report: the step's context report (`ctxagent report`'s fields)}
    text_delta        {step, text}            (the reply as it streams)
    assistant_message {step, text, tool_calls, usage, partial}
    tool_call         {id, name, arguments}
    tool_result       {id, name, is_error, duration_ms, content, spilled}
    waiting           {step, seconds}         (a retry's back-off, a slow first byte)
    notice            {level, message}        ("info" | "warning" | "error")
    refused           {tool, permission, target}  (an edit or command refused: no --yes)
    compaction        {method, tokens_before, tokens_after, messages}
    handoff           {goal, text, event_id}  (a drafted handoff: start the next session with it)
    subagent          {call_id, session, event: one of these objects, from the sub-agent}
    result            {exit_code, and every field of `--output json`}   (always the last line)

Nothing here is raw: every string goes through the session's redaction floor (`log.sanitize`: the
configured keys and every secret shape) and the display edge's JSON (`echo_json`). A reply's text
streams up to its last whitespace (`RedactedStream`), so a key split across two deltas is redacted whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TextIO

from ctxagent.agent import __version__
from ctxagent.agent.updates import (
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    CompactionDone,
    ContextBuilt,
    HandoffDrafted,
    ModelWaiting,
    Notice,
    StepStarted,
    SubAgentUpdate,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)
from ctxagent.context.floor.display import echo_json

PEM = "-----BEGIN"  # an open private-key block is held whole until it ends (it spans lines)


class RedactedStream:
    """A reply's deltas, redacted: each `push` returns the new text that is safe to show. The whole text
    so far is redacted, and what is shown stops at its last whitespace (a key, a token or a password is
    one run without spaces: the run still arriving is held until it ends) and before a private-key
    block that has not ended yet, so a secret still arriving is never shown in part."""

    def __init__(self, sanitize: Callable[[str], str]):
        self.sanitize = sanitize
        self.raw: list[str] = []
        self.shown = 0

    def push(self, text: str, final: bool = False) -> str:
        self.raw.append(text)
        clean = self.sanitize("".join(self.raw))
        end = len(clean)
        if not final:
            end = max((clean.rfind(c) + 1 for c in (" ", "\n", "\t")), default=0)
            begin = clean.rfind(PEM, 0, end)
            if begin >= 0 and clean.find("-----END", begin) < 0:
                end = begin
        end = max(self.shown, end)
        out, self.shown = clean[self.shown:end], end
        return out

    def finish(self) -> str:
        out = self.push("", final=True)
        self.raw, self.shown = [], 0
        return out


Line = dict[str, Any]


class StreamPrinter:
    """The agent's events as stream-json lines on `out` (see the module's doc)."""

    def __init__(self, out: TextIO | None, sanitize: Callable[[Any], Any] | None = None, *, deltas: bool = True):
        self.out = out
        self.sanitize: Callable[[Any], Any] = sanitize or (lambda v: v)
        self.deltas = deltas  # False for a sub-agent: its text arrives in its assistant_message
        self.printed_errors: set[str] = set()
        self._text = RedactedStream(lambda s: str(self.sanitize(s)))

    def emit(self, kind: str, **fields: Any) -> None:
        self.write({"type": kind, **fields})

    def write(self, line: Line) -> None:
        if self.out is not None:
            echo_json(self.sanitize(line), indent=None, file=self.out)

    def session_started(self, agent: Any) -> None:
        session = agent.session
        cfg = session.config
        self.emit("session_started", session=str(session.id), model=agent.model_label, cwd=str(session.root),
                  version=__version__, permission_mode=cfg.permission_mode, strategy=cfg.strategy,
                  tools=agent.parts.registry.names())

    def __call__(self, ev: AgentEvent) -> None:
        for line in self.lines(ev):
            self.write(line)

    def lines(self, ev: AgentEvent) -> list[Line]:
        """The lines `ev` makes (none for an event with nothing to say on this stream)."""
        if isinstance(ev, AssistantDelta):
            text = self._text.push(ev.text) if self.deltas else ""
            return [{"type": "text_delta", "step": ev.step, "text": text}] if text else []
        if isinstance(ev, AssistantDone):
            rest = self._text.finish() if self.deltas else ""
            done = {"type": "assistant_message", "step": ev.step, "text": ev.text, "tool_calls": ev.tool_calls,
                    "usage": dataclasses.asdict(ev.usage), "partial": ev.partial}
            return [*([{"type": "text_delta", "step": ev.step, "text": rest}] if rest else []), done]
        if isinstance(ev, SubAgentUpdate):
            inner = StreamPrinter(None, deltas=False).lines(ev.event)
            return [{"type": "subagent", "call_id": ev.call_id, "session": ev.session, "event": e} for e in inner]
        if isinstance(ev, Notice) and ev.level == "error":
            self.printed_errors.add(ev.message)
        line = _line(ev)
        return [line] if line is not None else []


def _line(ev: AgentEvent) -> Line | None:
    if isinstance(ev, TurnStarted):
        return {"type": "turn_started", "turn": ev.turn, "prompt": ev.text}
    if isinstance(ev, StepStarted):
        return {"type": "step_started", "step": ev.step, "turn": ev.turn}
    if isinstance(ev, ContextBuilt):
        return {"type": "context_report", "step": ev.step, "report": ev.report.to_dict()}
    if isinstance(ev, ToolStarted):
        return {"type": "tool_call", "id": ev.call_id, "name": ev.name, "arguments": ev.arguments}
    if isinstance(ev, ToolFinished):
        return {"type": "tool_result", "id": ev.call_id, "name": ev.name, "is_error": ev.is_error,
                "duration_ms": ev.duration_ms, "content": ev.content, "spilled": bool(ev.meta.get("spill"))}
    if isinstance(ev, ModelWaiting):
        return {"type": "waiting", "step": ev.step, "seconds": ev.seconds}
    if isinstance(ev, Notice):
        return {"type": "notice", "level": ev.level, "message": ev.message}
    if isinstance(ev, HandoffDrafted):
        return {"type": "handoff", "goal": ev.goal, "text": ev.text, "event_id": ev.event_id}
    if isinstance(ev, CompactionDone):
        return {"type": "compaction", "method": ev.method, "tokens_before": ev.tokens_before,
                "tokens_after": ev.tokens_after, "messages": ev.messages}
    return None
