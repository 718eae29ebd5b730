"""The sub-agents' defaults, a leaf: the config (agent/config.py) reads them before anything else is
imported, and the task tool and the parallel runner take the configured values from the session's config."""

from __future__ import annotations

MAX_PARALLEL = 3  # `task` calls of one step running at once (config `subagent_parallel`)
ANSWER_TOKENS = 2000  # the most of a sub-agent's answer the parent's window gets verbatim (`subagent_answer_tokens`)
