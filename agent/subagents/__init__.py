"""Sub-agents: the `task` tool runs a child `Agent` in its own window and hands back a bounded result.

- child.py: the child's session (its own log under `sessions/subagents/`, linked both ways to the
  parent and the call), its parts (the parent's provider or the sub-agent model, a tool subset, its
  own budget and calibration), and one run, which never raises into the parent's step.
- tool.py: the `task` tool itself (arguments, the bounded result with its handles).
- parallel.py: the `task` calls of one step, run together (bounded) with results in call order.
"""
