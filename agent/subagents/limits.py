"""The sub-agents' defaults and the line that names one, a leaf: the config (agent/config.py) reads them before anything else is
imported, and the task tool and the parallel runner take the configured values from the session's config."""

from __future__ import annotations

MAX_PARALLEL = 3  # `task` calls of one step running at once (config `subagent_parallel`)
ANSWER_TOKENS = 2000  # the most of a sub-agent's answer the parent's window gets verbatim (`subagent_answer_tokens`)
# The line a sub-agent's system prompt ends with, then its task's description (the scripted model
# server picks a sub-agent's script by it: tui/lab/scripted/script.py).
SUBAGENT_LINE = "Sub-agent task: "
