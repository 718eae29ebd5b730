"""The `task` tool: delegate one task to a sub-agent in its own window; get back a bounded answer.

The parent's window gets the sub-agent's final answer, capped (config `subagent_answer_tokens`, default 2,000; beyond that it is
spilled and `read_spill` pages it), a line saying how it stopped, and the handle to the child's log:
`read_event session=CHILD id=N` opens any of its events, so the details are one call away and
never in the window by default. A sub-agent that stops at its step limit, its window or an error
hands back what it has, with that stop reason: the parent's step goes on.

The model never chooses a sub-agent's model (nor so its provider, nor where a key goes): every
sub-agent runs on the one the user's config names (`subagent_model`, else the session's model). The
schema offers no `model`; a call that names another one is refused before anything is made or read
(a `scripted:PATH` model too: no repository file chooses a child's replies, nor answers whether a
path exists).
"""

from __future__ import annotations

import threading
from typing import Any

from ctxagent.agent.subagents.child import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TOOLS,
    TASK_TOOL,
    ChildOutcome,
    ChildSpec,
    ParentSide,
    child_usage_row,
    run_child,
)
from ctxagent.context.errors import ContextOverflowError, ToolError
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

MAX_STEPS_CAP = 200
# the smallest window a sub-agent can work in: its system prompt and tool schemas (~1.6k tokens), the
# reply's reserve (1,024) and room for the task and a few results
MIN_WINDOW = 4000


class TaskArgs(ToolArgs):
    description: str = Field(description="short task name")
    prompt: str = Field(description="the whole task; the sub-agent sees nothing else")
    tools: list[str] | None = Field(None, description="tool names (default: read-only)")
    # not in the schema: a model that names one anyway is told which model its sub-agents run on
    model: SkipJsonSchema[str | None] = None
    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS_CAP)
    window: int | None = Field(None, ge=MIN_WINDOW, description=f"its window in tokens (at least {MIN_WINDOW:,})")


DESCRIPTION = ("Delegate a self-contained task to a sub-agent with a fresh window; get back its answer (capped) "
               "and a handle to its transcript. Task calls in one step run in parallel.")

STOPS = {
    "end_turn": "finished",
    "max_steps": "stopped at its step limit; this is what it had",
    "cancelled": "cancelled; this is what it had",
    "max_tokens": "its last reply was cut at the output limit",
    "response_cap": "its last reply was cut at the size cap",
}


OVERFLOW = ContextOverflowError.__name__  # its request could not fit its window, even relieved
WINDOW_FULL = "stopped: its window is full, even with its history pruned and compacted; this is what it had"


def check_spec(args: TaskArgs, side: ParentSide) -> ChildSpec:
    names = list(dict.fromkeys(args.tools)) if args.tools is not None else [
        n for n in DEFAULT_TOOLS if side.parts.registry.get(n) is not None]
    if TASK_TOOL in names:
        raise ToolError("a sub-agent cannot start sub-agents (nesting depth is 1): leave 'task' out of tools")
    unknown = [n for n in names if side.parts.registry.get(n) is None]
    if unknown:
        known = ", ".join(n for n in side.parts.registry.names() if n != TASK_TOOL)
        raise ToolError(f"unknown tool(s) for the sub-agent: {', '.join(unknown)}; available: {known}")
    if not args.description.strip() or not args.prompt.strip():
        raise ToolError("a task needs a non-empty description and prompt")
    model = side.default_model()
    if args.model is not None and args.model.strip() != model:
        raise ToolError(f"the sub-agent's model is not the call's to choose: every sub-agent runs on {model}, the "
                        "model the user's config names (subagent_model, else the session's); call task again "
                        "without `model`")
    return ChildSpec(description=" ".join(args.description.split())[:100], prompt=args.prompt, tools=names,
                     model=model, max_steps=args.max_steps or DEFAULT_MAX_STEPS, window=args.window)


def result_of(outcome: ChildOutcome, side: ParentSide, root_label: str) -> ToolResult:
    done = outcome.finished
    stop = done.stop_reason
    said = STOPS.get(stop) or (WINDOW_FULL if done.error_type == OVERFLOW else f"stopped by an error ({done.error_type}: {done.error})")
    # within the parent's own spill threshold too, so the answer is never spilled twice
    cap = max(200, min(side.session.config.subagent_answer_tokens, side.session.config.spill_tokens - 200))
    answer, spilled = side.parts.spill.maybe_spill(done.text or "(no answer)", side.parts.counter, cap)
    tokens = outcome.usage.prompt_tokens + outcome.usage.output_tokens
    head = f"[sub-agent {outcome.session}: {said} — {done.steps} step(s), {tokens:,} tokens]"
    handle = (f"[its transcript: read_event session={outcome.session} id=N (N = 0–{outcome.last_event}; "
              f"{outcome.last_event} is its last event)]")
    meta: dict[str, Any] = {"subagent": {
        "session": outcome.session, "description": outcome.description, "path": root_label, "model": outcome.model, "stop_reason": stop,
        "steps": done.steps, "usage": child_usage_row(outcome), "peak_tokens": outcome.peak_tokens,
        "last_event": outcome.last_event, "answer_spill": spilled["handle"] if spilled else None,
    }} | ({"changed_files": outcome.changed_files} if outcome.changed_files else {})
    failed = stop in ("error", "cancelled") and not done.text
    return ToolResult(f"{head}\n{answer}\n{handle}", is_error=failed, meta=meta)


def make_task_tool(side: ParentSide) -> FunctionTool[TaskArgs]:
    def run(args: TaskArgs, ctx: ToolContext) -> ToolResult:
        spec = check_spec(args, side)
        outcome = run_child(side, spec, ctx.services.call_id, ctx.cancel or threading.Event())
        try:
            label = str(outcome.path.relative_to(side.session.root))
        except ValueError:
            label = str(outcome.path)
        return result_of(outcome, side, label)

    return FunctionTool(TASK_TOOL, DESCRIPTION, TaskArgs, "read", run, parallel=True, changes_files=may_change_files)


def may_change_files(args: dict[str, Any], registry: ToolRegistry) -> bool:
    """A call whose sub-agent gets a tool that is not read-only (an edit, a command): the parent takes its
    turn's checkpoint before it runs, so rewinding the parent's turn undoes the child's edits. (Without
    `tools` the sub-agent gets the read-only default.)"""
    tools = args.get("tools")
    return isinstance(tools, list) and any(
        isinstance(n, str) and registry.get(n) is not None and registry.permission(n) != "read" for n in tools)
