"""Running one step's tool calls: permissions, the pre-change checkpoint, sanitize → spill → log.

`ToolRunner` is owned by the `Agent` (agent/loop.py). It keeps what the permissions and the code
checkpoints need across calls: the tools allowed for the rest of the session, and the turn's
checkpoint and changed files (`start_turn` / `end_turn` bracket a turn). What a question is about —
the key an "allow for this session" answer covers, the preview, instruction files — is decided in
agent/permissions.py. The tools get the session's services (`ToolServices`: spill store, log,
memory — the user's store too — summarizer, session, turn).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ctxagent.agent.mcp.config import is_mcp_tool
from ctxagent.agent.parts import AgentParts, Approver, Journal
from ctxagent.agent.permissions import Allowance, ask_about, must_ask, plan_refusal
from ctxagent.agent.updates import PermissionRequest, ToolFinished, ToolStarted
from ctxagent.context.errors import CtxagentError
from ctxagent.context.events import (
    CheckpointData,
    ImageRef,
    PermissionData,
    SpillRef,
    ToolMeta,
    ToolResultData,
)
from ctxagent.context.images import store_image
from ctxagent.context.ledger import result_facts
from ctxagent.context.request import ToolCall
from ctxagent.context.tool_meta import changed_files_of_call
from ctxagent.tools.atomic_write import sweep_repository
from ctxagent.tools.call_groups import call_groups, run_together
from ctxagent.tools.contract import BudgetStatus, ToolContext, ToolResult, ToolServices, malformed_json
from ctxagent.tools.tests_runner import detect_test_command

if TYPE_CHECKING:
    from ctxagent.agent.hooks import Hooks
    from ctxagent.agent.session import Session


class ToolRunner:
    """Runs the tool calls of a session's steps (the model's, and the user's own @file / !command)."""

    hooks: Hooks | None = None  # the Agent's (agent/hooks.py): pre_tool may deny a call, post_tool sees its result

    def __init__(self, session: Session, parts: AgentParts, journal: Journal, approver: Approver):
        self.session = session
        self.parts = parts
        self.journal = journal
        self.approver = approver
        self.allowed_for_session: set[Allowance] = set()  # "allow for this session": a tool and its exact target
        self.turn_checkpoint: str | None = None  # taken before the turn's first file-changing tool
        self.turn_files: set[str] = set()
        self._temp_files_swept = False
        self._hook_context: dict[str, str] = {}  # a call's post_tool additions, appended after its spill
        # the budget tools' services, which the Agent lends (tools/budget_tools.py)
        self.status: Callable[[], BudgetStatus] | None = None
        self.request_compaction: Callable[[str | None], None] | None = None
        self.handoff: Callable[[str | None], str] | None = None
        self.touched: Callable[[list[str]], None] | None = None  # the paths a step's tools worked on (the Agent's)

    def start_turn(self) -> None:
        self.turn_checkpoint = None
        self.turn_files = set()

    def end_turn(self, turn: int) -> None:
        """The checkpoint of what the turn left, when it changed anything (also after a cancel)."""
        checkpoints = self.parts.checkpoints
        if self.turn_checkpoint and checkpoints is not None:
            files = sorted(self.turn_files)
            self.journal.safe(lambda: checkpoints.mark_turn_end(self.session.id, turn, files))

    def run(self, calls: list[ToolCall], turn: int, cancel: threading.Event, *, by_user: bool = False) -> None:
        """Run `calls` and log their results; `by_user`: the user's own calls from the prompt (`!command`,
        `@file`), which are never asked (agent/permissions.py `must_ask`)."""
        if not self._temp_files_swept:  # a write killed mid-way (SIGKILL) may have left its temp file
            self._temp_files_swept = True
            self.journal.safe(lambda: sweep_repository(self.session.root))
        ctx = ToolContext(
            root=self.session.root,
            cancel=cancel,
            config=self.parts.tool_config,
            state_dir=self.session.state_dir,
            services=ToolServices(
                spill=self.parts.spill,
                log=self.session.log,
                memory=self.parts.memory,
                user_memory=self.parts.user_memory,
                summarize=self.parts.summarize,
                session=self.session.id,
                turn=turn,
                status=self.status,
                request_compaction=self.request_compaction,
                handoff=self.handoff,
                images=self.parts.takes_images,
            ),
        )
        registry = self.parts.registry
        for group in call_groups(calls, registry):  # consecutive task calls run together, logged in call order
            if any(registry.permission(c.name) == "read" and registry.may_change_files(c.name, c.arguments)
                   and not cancel.is_set() for c in group):
                self._checkpoint(turn)  # before a sub-agent that may edit: the parent's rewind undoes it
            for call in group:
                self.journal.emit(ToolStarted(call.id, call.name, call.arguments))
            timed = run_together(group, lambda c: self._execute(c, ctx, turn, cancel, by_user),
                                 limit=self.session.config.subagent_parallel)
            for call, (result, ms) in zip(group, timed, strict=True):
                self._append_result(call, result, ms, turn)
        if self.touched is not None:
            paths = [c.arguments.get("path") for c in calls if isinstance(c.arguments, dict)]
            touched = self.touched
            self.journal.safe(lambda: touched([p for p in paths if isinstance(p, str)] + sorted(self.turn_files)))

    def _execute(self, call: ToolCall, ctx: ToolContext, turn: int, cancel: threading.Event,
                 by_user: bool = False) -> tuple[ToolResult, int]:
        """One call's result and how long ctxagent spent on it (ms): the tool's run, or for a refused
        call the deciding, never the wait for the user's answer."""
        started = time.monotonic()
        if cancel.is_set():
            result = ToolResult("cancelled by the user before this tool ran", is_error=True)
        elif call.malformed:
            result = ToolResult(f"error: invalid arguments for {call.name}: {malformed_json(call.raw_arguments)}",
                                is_error=True)
        elif (denied := self.hooks.pre_tool(call, turn) if self.hooks else None) is not None:
            result = ToolResult(denied, is_error=True, meta={"denied": True})  # before the box: nothing to ask
        else:
            refusal, waited = self._permitted(call, turn, by_user)
            if refusal is not None:
                result = refusal
                started += waited  # the user's time to answer is not ctxagent's
            else:
                started = time.monotonic()  # the time the user took to decide is not the tool's
                call_ctx = dataclasses.replace(ctx, services=dataclasses.replace(ctx.services, call_id=call.id))
                result = self.parts.registry.run(call.name, call.arguments, call_ctx)
                if self.parts.registry.permission(call.name) != "read" and not result.is_error:
                    changed = result.meta.get("changed_files") or changed_files_of_call(call.name, call.arguments)
                    self.turn_files.update(str(f) for f in changed or result.meta.get("files") or [])
                else:  # what a read-only call changed all the same (a sub-agent), also when it stopped early
                    self.turn_files.update(str(f) for f in result.meta.get("changed_files") or [])
                if self.hooks and (added := self.hooks.post_tool(call, result, turn)):
                    self._hook_context[call.id] = added
        return result, int((time.monotonic() - started) * 1000)

    def _permitted(self, call: ToolCall, turn: int, by_user: bool = False) -> tuple[ToolResult | None, float]:
        """(None when the call may run, otherwise the refusal to show the model; the seconds spent
        waiting for the user's answer)."""
        registry = self.parts.registry
        kind = registry.permission(call.name)
        if kind == "read" and not registry.must_ask(call.name, call.arguments) or registry.get(call.name) is None:
            return None, 0.0
        args = call.arguments
        mode = self.session.config.permission_mode
        # plan mode holds the model to read-only tools; the user's own @file / !command is theirs (must_ask)
        planning = None if by_user else plan_refusal(mode, call.name, kind)
        if planning is not None:
            self.journal.append(PermissionData(call_id=call.id, decision="deny", reason="plan mode"))
            return ToolResult(planning, is_error=True, meta={"denied": True}), 0.0
        command = self._command(call.name, args) if kind == "command" else ""
        ask = ask_about(call.name, kind, args, root=self.session.root, command=command)
        # e.g. memory for every project, an instruction file: no mode and no allowance covers it
        always = ask.always or registry.must_ask(call.name, args)
        waited = 0.0
        if must_ask(ask.allowance, kind, mode, self.allowed_for_session, always=always, by_user=by_user):
            asked_at = time.monotonic()
            decision = self.approver(PermissionRequest(call.id, call.name, kind, args, ask.preview,
                                                       target=ask.allowance.target, note=ask.note,
                                                       can_remember=not always))
            waited = time.monotonic() - asked_at
            self.journal.append(PermissionData(call_id=call.id, decision="allow" if decision.allow else "deny",
                                               reason=decision.reason))
            if not decision.allow:
                reason = f" Reason: {decision.reason}" if decision.reason else ""
                return ToolResult(f"permission denied for {call.name}.{reason}", is_error=True, meta={"denied": True}), waited
            if decision.remember and not always:
                self.allowed_for_session.add(ask.allowance)
        # Shell and test commands can change files too: checkpoint before the first of either.
        self._checkpoint(turn)
        return None, waited

    def _checkpoint(self, turn: int) -> None:
        """The turn's checkpoint, taken once, before its first call that may change files."""
        checkpoints = self.parts.checkpoints
        if self.turn_checkpoint is None and checkpoints is not None:
            at = self.session.log.next_id
            commit = self.journal.safe(lambda: checkpoints.snapshot(self.session.id, turn, at))
            if commit:
                self.turn_checkpoint = commit
                self.journal.append(CheckpointData(turn=turn, commit=commit))

    def _command(self, name: str, args: dict[str, Any]) -> str:
        """The command line that will run: run_tests without one runs the configured or detected
        command (tools/tests_runner.py resolves it the same way)."""
        given = args.get("command")
        if is_mcp_tool(name):
            return ""  # an outside tool's arguments are all its own: it is asked and allowed on all of them
        if name != "run_tests":
            return given if isinstance(given, str) else str(given or "")
        command = (given if isinstance(given, str) else "").strip()
        configured = str(self.parts.tool_config.get("test_command") or "").strip()
        return command or configured or detect_test_command(self.session.root) or ""

    def _store_images(self, result: ToolResult, content: str) -> tuple[list[ImageRef], str]:
        """The result's images put in the session's attachment store (bytes out of the log): their
        references, and the content with a line for any that could not be stored."""
        refs: list[ImageRef] = []
        for image in result.images:
            try:
                refs.append(store_image(self.parts.spill, image))
            except CtxagentError as exc:
                content += f"\n[an image ({image.media_type}, {image.size:,} bytes) could not be kept: {exc}]"
        return refs, content

    def _append_result(self, call: ToolCall, result: ToolResult, duration_ms: int, turn: int) -> None:
        # Sanitize before anything is persisted: the spill file must not hold secrets either.
        log = self.session.log
        content = log.sanitize(result.content) if log.sanitize else result.content
        facts = result_facts(call.name, call.arguments, content) if not result.is_error else {}
        spill_meta = None
        if call.name != "read_spill":  # a page of a spill is already bounded; spilling it again would loop
            content, spill_meta = self.parts.spill.maybe_spill(content, self.parts.counter, self.session.config.spill_tokens)
        added = self._hook_context.pop(call.id, "")
        if added:  # after the spill: a hook's note is read with the preview, never buried in the spill file
            content = f"{content}\n\n{log.sanitize(added) if log.sanitize else added}"
        meta = {k: v for k, v in result.meta.items() if k != "diff" or len(str(v)) < 20000} | facts
        images, content = self._store_images(result, content)
        if not result.is_error and "changed_files" not in meta:
            # THE record of what this call changed (context/tool_meta.py), so no reader has to guess later
            changed = changed_files_of_call(call.name, call.arguments)
            if changed:
                meta["changed_files"] = changed
        self.journal.record(ToolResultData(
            call_id=call.id,
            name=call.name,
            content=content,
            is_error=result.is_error,
            duration_ms=duration_ms,
            meta=ToolMeta.model_validate(meta),
            spill=SpillRef.model_validate(spill_meta) if spill_meta is not None else None,
            turn=turn,
            images=images or None,
        ))
        shown = {**meta, "spill": spill_meta} | ({"images": [r.to_data() for r in images]} if images else {})
        self.journal.emit(ToolFinished(call.id, call.name, content, result.is_error, duration_ms, shown))

