"""The context strategies by name: the one list. The config (`strategy = …`), the CLI's `--strategy`
and the builder's dispatch (context/builder/dispatch.py, which maps each name to the module that builds
it) read it here.

A leaf, apart from the builder: the config is read before the TUI's first frame, which must not wait
for the builder, the tokenizer or memory to load.
"""

from __future__ import annotations

from ctxagent.context.server_edits import SERVER_STRATEGIES

CTXAGENT = "ctxagent"  # the engineered context: ledger, relief tiers, memory recall
BASELINES = ("full", "window")  # for comparison: everything verbatim, a sliding window
STRATEGIES = (CTXAGENT, *BASELINES, *SERVER_STRATEGIES)  # + the providers' own server-side context management
