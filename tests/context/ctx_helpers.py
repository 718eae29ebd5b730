"""Helpers for the context-engine tests: build event logs by hand, count, build requests."""

from __future__ import annotations

from typing import Any

from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildInputs, BuildResult
from ctxagent.context.history import Event
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import CachedCounter, TokenCounter, get_counter

TOOLS = [
    ToolSpec("read_file", "Read a file with line numbers.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("grep", "Search files.", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
    ToolSpec("edit_file", "Replace text in a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
]
SYSTEM = "You are ctxagent, a careful coding agent. Follow the user's constraints."

_COUNTERS: dict[str, CachedCounter] = {}


def counter(family: str = "o200k_base") -> CachedCounter:
    if family not in _COUNTERS:
        _COUNTERS[family] = CachedCounter(get_counter(family))
    return _COUNTERS[family]


class Log:
    """An in-memory event log with the same id discipline as SessionLog (ids are positions)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.turn = 0
        self._call = 0
        self.now = 0.0  # the time new events get (0: none, as in logs without times)

    def add(self, kind: str, **data: Any) -> Event:
        ev = Event(len(self.events), kind, data, self.now)
        self.events.append(ev)
        return ev

    def user(self, text: str) -> Event:
        self.turn += 1
        return self.add("user", text=text, turn=self.turn)

    def assistant(self, text: str = "", calls: list[tuple[str, dict[str, Any]]] | None = None) -> list[str]:
        ids: list[str] = []
        tool_calls = []
        for name, args in calls or []:
            self._call += 1
            ids.append(f"call_{self._call}")
            tool_calls.append({"id": ids[-1], "name": name, "arguments": args})
        self.add("assistant", text=text, tool_calls=tool_calls, stop_reason="tool_use" if tool_calls else "end_turn")
        return ids

    def tool(self, call_id: str, name: str, content: str, is_error: bool = False, **extra: Any) -> Event:
        data: dict[str, Any] = {"call_id": call_id, "name": name, "content": content, "is_error": is_error, "meta": extra.pop("meta", {})}
        data.update(extra)
        return self.add("tool_result", **data)

    def step(self, name: str, args: dict[str, Any], content: str, text: str = "", is_error: bool = False, **extra: Any) -> Event:
        (cid,) = self.assistant(text, [(name, args)])
        return self.tool(cid, name, content, is_error, **extra)


def inputs(log: Log | list[Event], window: int = 32_000, max_output: int = 4096, c: TokenCounter | None = None, **kw: Any) -> BuildInputs:
    events = log.events if isinstance(log, Log) else log
    turn = kw.pop("turn", log.turn if isinstance(log, Log) else 0)
    return BuildInputs(
        events=list(events), system=kw.pop("system", SYSTEM), tools=kw.pop("tools", TOOLS),
        budget=kw.pop("budget", Budget(window, max_output=max_output)), counter=c or counter(),
        step=kw.pop("step", 1), turn=turn, **kw,
    )


def run(log: Log | list[Event], **kw: Any) -> BuildResult:
    return build(inputs(log, **kw))


def numbered_lines(n: int, word: str = "output") -> str:
    return "\n".join(f"{i:05d} {word} line with some text and value={i * 7}" for i in range(n))
