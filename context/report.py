"""`ContextReport`: what one build put in the window, persisted in the session log every step.

Slices (what counts where):
    system   the system prompt and project instructions (AGENTS.md / CLAUDE.md)
    tools    the tool schemas plus every tool result shown in the history
    hot      user and assistant messages shown in the history, and compaction summaries
    warm     the warm block (pinned constraints, open tasks, recalled memory records)
    reserve  room kept for the model's reply (≥ max output tokens requested)
`used` is what the build put there; `budget` is the slice's share of the window after unused
shares flowed to hot. `total` excludes the reserve; `usage_pct` = (total + reserve) / window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SLICES = ("system", "hot", "warm", "tools", "reserve")


@dataclass
class ContextReport:
    step: int
    turn: int
    window: int
    budget: dict[str, int]
    used: dict[str, int]
    total: int  # local-counter tokens of the request (without the reserve)
    usage_pct: float  # 0..100, calibrated, reserve included
    calibrated_total: int
    calibration_ratio: float
    system_in_window: bool
    oldest_visible_turn: int
    messages: int  # visible messages sent
    spilled: int = 0  # tool results shown as spill previews in this build
    pruned: int = 0  # tool results (and old tool calls' long arguments) cut to head/tail in this build
    compacted: list[int] | None = None  # [first_id, last_id] of a compaction made for this build
    loss_pct: float = 0.0  # share of the history's tokens not shown verbatim
    red_flags: list[str] = field(default_factory=list)
    advice: str = "ok"  # "ok" | "compress" (≥ 75 %) | "new_session" (≥ 90 %)
    strategy: str = "ctxagent"
    summary_method: str | None = None  # "model" | "extractive" when a compaction happened
    notes: list[str] = field(default_factory=list)
    # schema tokens of the tools sent, by who offers them: "built-in", then each MCP server by name
    # (tools named mcp__<server>__<tool>), and "search_tools" when MCP tools are deferred behind it
    schema_tokens: dict[str, int] = field(default_factory=dict)
    # the prompt-cache effect of a clear or compaction since the request sent before (builder/relief_price.py
    # ReliefPrice.to_dict: tokens kept, dropped and re-written, cost before / after); None: no relief
    relief_price: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ContextReport:
        known = {f for f in ContextReport.__dataclass_fields__}
        return ContextReport(**{k: v for k, v in d.items() if k in known})
