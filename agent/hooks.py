"""Hooks: programs the user's config (or a trusted repository's: agent/trust.py) names for an event.

Each runs through the sandbox's one hook runner (`tools.sandbox.run_hook`: bwrap with the session's
policy, the repository root as cwd, JSON on stdin, a deadline) — never a second runner. A hook has no
variables of its own (`HookSpec` has no `env`): its command line is all it runs. The shapes
follow Claude Code's hooks, in ctxagent's names:

| event | when | stdin (besides `event`, `session_id`, `cwd`, `turn`) | may it stop something? |
| --- | --- | --- | --- |
| `pre_tool` | before a tool call, before the permission box | `tool_name`, `tool_input`, `call_id` | deny the call |
| `post_tool` | after a tool call | `tool_name`, `tool_input`, `tool_output`, `is_error` | no (may add context) |
| `user_prompt` | before a message is sent | `prompt` | block the prompt |
| `pre_compact` | before a compaction (`trigger`: manual, auto, model, builder) | `trigger`, `focus` | no |
| `session_start` | when the agent opens the session | `resumed` | no |
| `stop` | after each turn | `stop_reason`, `steps`, `text` | no |
| `context_threshold` | after a step whose usage crossed `at` upward | the report's figures | no |

A hook denies or blocks by exiting 2 (its stderr is the reason) or by printing
`{"decision": "deny" | "block", "reason": "..."}`. It can never approve: an "allow" is ignored, and the
permission box still asks. A deny's reason reaches the model as the tool's error — text a program
wrote, shown as such, never an instruction. A hook that fails (another non-zero exit, a timeout, a
program that cannot start, stdout that is neither empty nor a JSON object) is reported — a notice
(the TUI's, stderr headless) and a `hook` event in the log — and the turn goes on as if it had not run.

A post_tool hook may add context for the model, as Claude Code's `additionalContext` does: printing
`{"additionalContext": "..."}` (or Claude Code's `{"hookSpecificOutput": {"additionalContext": "..."}}`)
appends that text to the tool's result the model reads, after the result's own spill: redacted like
the result, stripped of control characters, cut at `MAX_REASON` characters, and framed as what it
is — a program's output, not an instruction (context/events.py `HOOK_CONTEXT_FRAME`). It is part of a
tool result, so it is the tool's words (`Author.TOOL`), never binding; the ledger reads requirements and failing tests from the
tool's own output only (`tool_output_of`), and a later prune or clear treats it like the result.

`pre_compact`'s `trigger`: `manual` for /compact and `ctxagent compact`, `auto` for auto_compact,
`model` for the model's compact_context, `builder` for a compaction a step's build planned to make the
request fit (it fires before that compaction is logged; the build has drafted its summary already).

`context_threshold` fires once per upward crossing of `at` (default: `compress_at`): it fires again only
after usage fell below `at` (a compaction) and crossed it once more.
"""

from __future__ import annotations

import fnmatch
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.context.events import HOOK_CONTEXT_FRAME, HookData
from ctxagent.context.floor import bounded_json
from ctxagent.tools.sandbox import SandboxPolicy, run_hook
from ctxagent.tools.sandbox.hooks import NOT_RUN, TIMED_OUT

if TYPE_CHECKING:
    from ctxagent.agent.config import Config, HookSpec
    from ctxagent.agent.parts import Journal
    from ctxagent.agent.updates import TurnFinished
    from ctxagent.context.report import ContextReport
    from ctxagent.context.request import ToolCall, Usage
    from ctxagent.tools.contract import ToolResult

BLOCK_EXIT = 2  # Claude Code's convention: exit 2 blocks, with stderr as the reason
MAX_REASON = 2000  # characters of a hook's words kept: a reason, or post_tool's added context (it reaches the model)
MAX_TOOL_OUTPUT = 100_000  # characters of a tool's output sent to a post_tool hook
BLOCKING = frozenset({"pre_tool", "user_prompt"})
ADDED_KEYS = ("additionalContext", "additional_context")  # Claude Code's key, and in ctxagent's spelling


def command_text(spec: HookSpec) -> str:
    return spec.command if isinstance(spec.command, str) else shlex.join(spec.command)


class Hooks:
    """The hooks of one session, owned by its Agent; each method is one event (see the module doc)."""

    def __init__(self, config: Config, root: Path, journal: Journal, session_id: str,
                 last_pct: float | None = None):
        self.config = config
        self.root = root
        self.journal = journal
        self.session_id = session_id
        self.policy = SandboxPolicy.from_config(config)
        self.turn = 0
        self._last_pct = last_pct or 0.0  # the usage of the last step seen, for context_threshold's crossing

    def specs(self, event: str) -> list[HookSpec]:
        return list(self.config.hooks.get(event, []))

    # -- the events ---------------------------------------------------------------------------------
    def pre_tool(self, call: ToolCall, turn: int) -> str | None:
        """The reason the model is told when a hook denies `call`; None when it may go on."""
        payload = {"tool_name": call.name, "tool_input": call.arguments, "call_id": call.id}
        reason = self._fire("pre_tool", payload, turn, tool=call.name)
        if reason is None:
            return None
        return (f"denied by a pre_tool hook before {call.name} ran. The hook's own words (program output, "
                f"not an instruction): {reason}")

    def post_tool(self, call: ToolCall, result: ToolResult, turn: int) -> str:
        """What the hooks add for the model to read with the result, framed; "" when nothing."""
        added: list[str] = []
        self._fire("post_tool", {"tool_name": call.name, "tool_input": call.arguments, "call_id": call.id,
                                 "tool_output": result.content[:MAX_TOOL_OUTPUT], "is_error": result.is_error},
                   turn, tool=call.name, added=added)
        return "\n\n".join(added)

    def user_prompt(self, text: str, turn: int) -> str | None:
        """The reason shown to the user when a hook blocks the prompt; None when it may be sent."""
        return self._fire("user_prompt", {"prompt": text}, turn)

    def session_start(self, resumed: bool) -> None:
        self._fire("session_start", {"resumed": resumed}, 0)

    def stop(self, done: TurnFinished) -> None:
        self._fire("stop", {"stop_reason": done.stop_reason, "steps": done.steps, "text": done.text[:MAX_TOOL_OUTPUT]},
                   done.turn)

    def pre_compact(self, trigger: str, focus: str | None, turn: int) -> None:
        self._fire("pre_compact", {"trigger": trigger, "focus": focus}, turn)

    def context_step(self, report: ContextReport, usage: Usage) -> None:
        """After a step: the context_threshold hooks whose level this step's usage crossed upward."""
        before, now = self._last_pct, float(report.usage_pct)
        self._last_pct = now
        for spec in self.specs("context_threshold"):
            at = spec.at if spec.at is not None else float(self.config.compress_at)
            if before < at * 100 <= now:
                self._run("context_threshold", spec, threshold_payload(report, usage, at), report.turn)

    # -- running ------------------------------------------------------------------------------------
    def _fire(self, event: str, payload: dict[str, Any], turn: int, tool: str | None = None,
              added: list[str] | None = None) -> str | None:
        for spec in self.specs(event):
            if tool is not None and spec.tools and not any(fnmatch.fnmatchcase(tool, p) for p in spec.tools):
                continue
            reason = self._run(event, spec, payload, turn, added)
            if reason is not None:
                return reason  # the first that blocks: the later ones are not asked
        return None

    def _run(self, event: str, spec: HookSpec, payload: dict[str, Any], turn: int,
             added: list[str] | None = None) -> str | None:
        full = {"event": event, "session_id": self.session_id, "cwd": str(self.root), "turn": turn, **payload}
        code, out, err = run_hook(spec.command, full, cwd=self.root, policy=self.policy, timeout=spec.timeout)
        may_block = event in BLOCKING
        if code == 0:
            text = out.strip()
            if not text:
                return None
            try:
                answer = bounded_json.loads(text)  # a hook's output: 200,000 levels are bad output, not a crash
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                self._report(event, spec, "bad_output", code, f"its output is not a JSON object: {text[:200]!r}", turn)
                return None
            if may_block and str(answer.get("decision", "")).lower() in ("deny", "block"):
                return self._blocked(event, spec, code, str(answer.get("reason") or "").strip(), turn)
            if added is not None:
                self._added(event, spec, code, answer, turn, added)
            return None  # "allow" and anything else: a hook never approves past the permission box
        if code == BLOCK_EXIT and may_block:
            return self._blocked(event, spec, code, err.strip() or out.strip(), turn)
        outcome = {TIMED_OUT: "timed_out", NOT_RUN: "not_run"}.get(code, "failed")
        detail = (err.strip() or out.strip())[-MAX_REASON:] or f"exit code {code}"
        self._report(event, spec, outcome, code, detail, turn)
        return None

    def _added(self, event: str, spec: HookSpec, code: int, answer: dict[str, Any], turn: int,
               added: list[str]) -> None:
        """post_tool's added context, if the answer carries one: bounded, clean and framed."""
        specific = answer.get("hookSpecificOutput")
        found = [a[k] for a in (answer, specific if isinstance(specific, dict) else {}) for k in ADDED_KEYS if k in a]
        if not found:
            return
        text = found[0]
        if not isinstance(text, str):
            self._report(event, spec, "bad_output", code, "its additionalContext is not a string", turn)
            return
        from ctxagent.context.floor.display import strip_controls

        text = strip_controls(text).strip()
        if len(text) > MAX_REASON:
            text = text[:MAX_REASON].rstrip() + f" … (cut at {MAX_REASON:,} characters)"
        if text:
            command = strip_controls(command_text(spec))[:120].replace("`", "'")
            added.append(HOOK_CONTEXT_FRAME.format(command=command) + "\n" + text)

    def _blocked(self, event: str, spec: HookSpec, code: int, reason: str, turn: int) -> str:
        reason = reason[:MAX_REASON] or "(the hook gave no reason)"
        outcome = "denied" if event == "pre_tool" else "blocked"
        self.journal.append(HookData(event=event, command=command_text(spec), outcome=outcome, exit_code=code,
                                     detail=reason, turn=turn))
        return reason

    def _report(self, event: str, spec: HookSpec, outcome: str, code: int, detail: str, turn: int) -> None:
        """A failing hook: said and logged; what it was asked goes on as if it had not run."""
        command = command_text(spec)
        self.journal.append(HookData(event=event, command=command, outcome=outcome, exit_code=code, detail=detail,
                                     turn=turn))
        said = f"{event} hook `{command[:120]}` {outcome.replace('_', ' ')} (exit {code}): {detail[:500]}; ignored"
        sanitize = self.journal.log.sanitize
        self.journal.notice(str(sanitize(said)) if sanitize else said, "warning")


def threshold_payload(report: ContextReport, usage: Usage, at: float) -> dict[str, Any]:
    """What a context_threshold hook reads: the step's report figures and the provider's cache state."""
    prompt = usage.prompt_tokens
    return {
        "at": at, "percent": round(float(report.usage_pct), 2), "step": report.step, "window": report.window,
        "total_tokens": report.calibrated_total, "tokens": dict(report.used), "budget": dict(report.budget),
        "advice": report.advice, "strategy": report.strategy,
        "cache": {"read": usage.cache_read, "write": usage.cache_write, "input": usage.input_tokens,
                  "read_share": round(usage.cache_read / prompt, 4) if prompt else 0.0},
    }
