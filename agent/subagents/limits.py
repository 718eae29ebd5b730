"""The line that names a sub-agent, a leaf: the child's system prompt ends with it, and the scripted
model server (tui/lab/scripted/script.py, through the agent face) picks a sub-agent's script by it."""

from __future__ import annotations

SUBAGENT_LINE = "Sub-agent task: "  # then its task's description
