"""A session's agent events as ACP session/update notifications.

`SessionStream` is the `on_event` of the session's Agent (agent/updates.py events, emitted on the
turn's thread) and sends, through the Bridge:

- the reply as `agent_message_chunk`s, delta by delta;
- each tool call as `tool_call` (pending) then `tool_call_update` (completed / failed, with its output
  or its diff hunks, and the locations it touched) — tui/acp/tool_view.py;
- notices and compactions as `agent_thought_chunk`s (they are not the reply);
- `plan` with the open tasks the user stated (the ledger's TODO lines, context/pins.py), when they change;
- `usage_update` after every step, with the gauge's figures: the context report's calibrated
  `usage_pct` of the window (what the app's bar fills: prompt and reserve, in provider tokens), the
  window, and the session's cost summed per model call at the registry's prices, as the app's
  status line sums it (`cost_usd` on each call's provider-reported usage); no cost when the model's
  prices are unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.agent.providers.pricing import call_cost, session_cost
from ctxagent.agent.updates import (
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    CompactionDone,
    ContextBuilt,
    Notice,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)

if TYPE_CHECKING:
    from acp.schema import PlanEntry, UsageUpdate
    from ctxagent.context.history import Event, SessionLog
    from ctxagent.context.report import ContextReport
    from ctxagent.tui.acp.bridge import Bridge


def open_tasks(events: list[Event]) -> list[str]:
    from ctxagent.context.pins import collect_pins

    return [pin.text for pin in collect_pins(events) if pin.kind == "task"]


def usage_update(report: ContextReport, cost: float | None) -> UsageUpdate:
    from acp.schema import Cost, UsageUpdate

    used = max(0, round(float(report.usage_pct) * int(report.window) / 100))
    return UsageUpdate(
        session_update="usage_update", used=used, size=max(0, int(report.window)),
        cost=Cost(amount=round(cost, 6), currency="USD") if cost is not None else None,
        field_meta={"ctxagent": {"usagePct": round(float(report.usage_pct), 2), "promptTokens": int(report.calibrated_total),
                                 "step": report.step, "advice": report.advice}},
    )


class SessionStream:
    """on_event for one session's Agent (see the module's note)."""

    def __init__(self, bridge: Bridge, log: SessionLog, root: Path, model_label: str):
        self.bridge = bridge
        self.log = log  # read for the plan (its open tasks) and a resumed session's cost
        self.session_id = log.session_id
        self.root = root
        self.model_label = model_label
        self.cost = session_cost(log.events, model_label).total
        self.report: ContextReport | None = None
        self.plan: list[str] = open_tasks(log.events)
        self.streamed = False  # the running step sent text as deltas
        self.usage_updates = 0
        self._held: list[Any] | None = None

    def hold(self) -> None:
        """Keep updates until `release` (a new session's notices, before the client knows its id)."""
        self._held = []

    def release(self) -> None:
        held, self._held = self._held or [], None
        for update in held:
            self.bridge.notify(self.session_id, update)

    def send(self, update: Any) -> None:
        if self._held is not None:
            self._held.append(update)
            return
        self.bridge.notify(self.session_id, update)

    def say(self, text: str) -> None:
        from acp.helpers import update_agent_message_text

        self.send(update_agent_message_text(text))

    def thought(self, text: str) -> None:
        from acp.helpers import update_agent_thought_text

        self.send(update_agent_thought_text(text))

    def __call__(self, ev: AgentEvent) -> None:
        from acp.helpers import start_tool_call, update_tool_call
        from ctxagent.tui.acp.tool_view import finished_content, locations, title, tool_kind

        if isinstance(ev, AssistantDelta):
            if ev.text:
                self.streamed = True
                self.say(ev.text)
        elif isinstance(ev, AssistantDone):
            if ev.text and not self.streamed:
                self.say(ev.text)
            self.streamed = False
            cost = call_cost(self.model_label, ev.usage)
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost
            self.send_usage()
        elif isinstance(ev, ContextBuilt):
            self.report = ev.report
        elif isinstance(ev, ToolStarted):
            self.send(start_tool_call(ev.call_id, title(ev.name, ev.arguments), kind=tool_kind(ev.name), status="pending",
                                      locations=locations(self.root, ev.arguments) or None, raw_input=ev.arguments))
        elif isinstance(ev, ToolFinished):
            self.send(update_tool_call(
                ev.call_id, status="failed" if ev.is_error else "completed",
                content=finished_content(self.root, ev.name, ev.content, ev.is_error, ev.meta),
                locations=locations(self.root, {}, ev.meta) or None,
                raw_output={"is_error": ev.is_error, "duration_ms": ev.duration_ms},
            ))
        elif isinstance(ev, Notice):
            if ev.level != "error":  # an error ends the turn: the prompt's answer says it
                self.thought(f"[{ev.level}] {ev.message}")
        elif isinstance(ev, CompactionDone):
            turns = f"turns {ev.first_turn}–{ev.last_turn}" if ev.first_turn else "older messages"
            self.thought(f"compacted {turns} ({ev.messages} messages, {ev.method} summary); the originals stay in the log")
        elif isinstance(ev, (TurnStarted, TurnFinished)):
            self.send_plan()

    def send_usage(self) -> None:
        if self.report is not None:
            self.usage_updates += 1
            self.send(usage_update(self.report, self.cost))

    def send_plan(self, force: bool = False) -> None:
        tasks = open_tasks(self.log.events)
        if tasks == self.plan and not force:
            return
        self.plan = tasks
        self.send(plan_update(tasks))


def plan_update(tasks: list[str]) -> Any:
    from acp.helpers import plan_entry, update_plan

    entries: list[PlanEntry] = [plan_entry(text, priority="medium", status="pending") for text in tasks]
    return update_plan(entries)
