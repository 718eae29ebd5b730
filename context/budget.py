"""The window budget: slices as fractions of the window W, a reserve for the reply, and the limit.

    reserve = max(fraction_reserve · W, max_output)     room for the model's answer
    limit   = W − reserve                                what a request may never exceed

When nothing is left to cut, the reserve yields (down to `reply_floor`) and the request asks for a
shorter reply instead of failing (context/builder/relief.py, the last tier).

Slices (system, hot, warm, tools) are shares of W; a slice's unused share flows to hot, so the
recent conversation gets whatever the stable parts did not need.

The tools slice is also enforced, not only reported (context/builder/slice_relief.py): once the tool results
shown exceed `tools_high` × its share (default 0.6), old tool traffic is cleared in the view to one
line each, oldest first, down to about `tools_low` × it (default 0.1), keeping that of the last
`protect_turns` user turns that is also in the last `protect_steps` model steps (default 8; up to 31:
the boundary moves in chunks of `step_chunk` × protect_steps steps, default 3 × 8). Tool results never borrow unused warm/system share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ctxagent.context.errors import ConfigError

# of the window at most for the task state a compaction masks, quoted word for word (builder/task_state.py)
TASK_STATE_SHARE = 0.15

DEFAULT_FRACTIONS: dict[str, float] = {"system": 0.15, "hot": 0.40, "warm": 0.25, "tools": 0.15, "reserve": 0.05}

# Named profiles: "coding" keeps more of the recent turns verbatim (tool output matters), "design"
# keeps more recalled decisions and constraints (long discussions where early choices matter).
PROFILES: dict[str, dict[str, float]] = {
    "default": dict(DEFAULT_FRACTIONS),
    "coding": {"system": 0.12, "hot": 0.50, "warm": 0.15, "tools": 0.18, "reserve": 0.05},
    "design": {"system": 0.12, "hot": 0.33, "warm": 0.38, "tools": 0.12, "reserve": 0.05},
}

SLICE_NAMES = ("system", "hot", "warm", "tools", "reserve")

DEFAULT_MAX_OUTPUT = 8192
# relief starts when tool traffic exceeds 60 % of the tools slice and cuts it to about 10 %: with cuts
# that go down to one line (context/builder/slice_relief.py), a deep, rare cut is what a prompt cache rewards
# (each cut rewrites the history after it once; every token kept is read again at every step)
DEFAULT_TOOLS_HIGH = 0.6
DEFAULT_TOOLS_LOW = 0.1
DEFAULT_PROTECT_STEPS = 8  # within one long turn, the last 8 (to 15) steps' tool traffic stays verbatim
# ... and the boundary advances DEFAULT_STEP_CHUNK × protect_steps steps at a time (slice_relief.candidate_end):
# each advance is a cut that re-writes the history after it, so a longer chunk re-writes less and keeps more
# verbatim. Fitted held apart (`bench fit --sweep step_chunk`): every split but two picks 3 (docs/BENCHMARKS.md §1)
DEFAULT_STEP_CHUNK = 3.0
STEP_CHUNK_BEFORE_RECORDED = 1.0  # what a log written before the step chunk was recorded was built with
# the last relief tier (context/builder/relief.py): when nothing else is left to cut, the reply's reserve
# yields down to this floor and the request asks for a shorter reply (enough for a tool call or a short answer)
MIN_REPLY_TOKENS = 1024


def default_max_output(window: int, model_max: int | None = None) -> int:
    """The reply's reserve when the user sets none: the model's max output, at most 8,192 and W / 8."""
    cap = min(DEFAULT_MAX_OUTPUT, max(MIN_REPLY_TOKENS, window // 8))
    return min(model_max, cap) if model_max else cap


@dataclass
class Budget:
    window: int
    fractions: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FRACTIONS))
    max_output: int = DEFAULT_MAX_OUTPUT
    profile: str = "default"
    # slice enforcement (context/builder/slice_relief.py): shown tool results over tools_high × the tools slice
    # are pruned down to about tools_low × it; results in the last protect_steps model steps are kept
    tools_high: float = DEFAULT_TOOLS_HIGH
    tools_low: float = DEFAULT_TOOLS_LOW
    protect_steps: int = DEFAULT_PROTECT_STEPS
    step_chunk: float = DEFAULT_STEP_CHUNK

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ConfigError(f"window must be positive, got {self.window}")
        merged = dict(DEFAULT_FRACTIONS)
        merged.update(self.fractions or {})
        unknown = set(merged) - set(SLICE_NAMES)
        if unknown:
            raise ConfigError(f"unknown budget slice(s): {', '.join(sorted(unknown))}")
        if any(v < 0 for v in merged.values()):
            raise ConfigError("budget fractions must be >= 0")
        total = sum(merged.values())
        if total <= 0:
            raise ConfigError("budget fractions sum to zero")
        # normalise so a config that sums to 0.98 or 1.1 still describes the whole window; fractions
        # that already sum to 1 are kept as given, so a Budget rebuilt from a report's fractions is
        # the same budget (inspect re-builds past steps from them)
        scale = 1.0 if abs(total - 1.0) < 1e-9 else total
        self.fractions = {k: round(merged[k] / scale, 12) for k in SLICE_NAMES}
        if not 0 <= self.tools_low < self.tools_high:
            raise ConfigError(f"need 0 <= tools_low < tools_high, got {self.tools_low} and {self.tools_high}")
        if self.protect_steps < 0:
            raise ConfigError(f"protect_steps must be >= 0, got {self.protect_steps}")
        if not self.step_chunk > 0:
            raise ConfigError(f"step_chunk must be > 0, got {self.step_chunk}")
        if self.max_output < 1:
            raise ConfigError(f"max_output must be >= 1, got {self.max_output}")
        if self.limit < 1:
            raise ConfigError(
                f"window {self.window} leaves no room for a prompt after reserving {self.reserve} tokens for the reply "
                f"(max_output {self.max_output}); lower max_output or use a larger window"
            )

    @classmethod
    def from_profile(cls, name: str, window: int, max_output: int = DEFAULT_MAX_OUTPUT) -> Budget:
        if name not in PROFILES:
            raise ConfigError(f"unknown budget profile {name!r}; known: {', '.join(PROFILES)}")
        return cls(window=window, fractions=dict(PROFILES[name]), max_output=max_output, profile=name)

    @property
    def reserve(self) -> int:
        return max(math.ceil(round(self.fractions["reserve"] * self.window, 6)), self.max_output)

    @property
    def limit(self) -> int:
        """The most tokens a request may hold (W − reserve)."""
        return self.window - self.reserve

    @property
    def reply_floor(self) -> int:
        """The least reply a request may leave room for, once the reserve has yielded (never above the reserve)."""
        return min(self.reserve, MIN_REPLY_TOKENS)

    def yielded_limit(self, calibration_ratio: float = 1.0) -> int:
        """effective_limit with the reply's reserve at its floor: the last relief tier's limit (local tokens)."""
        ratio = calibration_ratio if calibration_ratio and calibration_ratio > 0 else 1.0
        room = self.window - self.reply_floor
        return min(room, math.floor(room / ratio))

    def reply_room(self, local_total: int, calibration_ratio: float = 1.0) -> int:
        """The longest reply a request of `local_total` tokens leaves room for, at most max_output."""
        ratio = calibration_ratio if calibration_ratio and calibration_ratio > 0 else 1.0
        return min(self.max_output, self.window - max(local_total, math.ceil(local_total * ratio)))

    def base(self, name: str) -> int:
        """A slice's nominal share of the window, before unused shares flow to hot."""
        if name == "reserve":
            return self.reserve
        return math.floor(round(self.fractions[name] * self.window, 6))

    def slices(self, used: dict[str, int] | None = None) -> dict[str, int]:
        """Slice budgets for a build: system / warm / tools keep min(base, used); the rest goes to hot.

        Budgets sum to the window. A slice whose use exceeds its base is over its share (the report
        shows used > budget); only the total is a hard limit.
        """
        used = used or {}
        out: dict[str, int] = {}
        for name in ("system", "warm", "tools"):
            base = self.base(name)
            out[name] = min(base, int(used[name])) if name in used else base
        out["reserve"] = self.reserve
        out["hot"] = max(0, self.limit - out["system"] - out["warm"] - out["tools"])
        return {k: out[k] for k in SLICE_NAMES}

    def effective_limit(self, calibration_ratio: float = 1.0) -> int:
        """The local-counter limit such that both the local and the calibrated total fit."""
        ratio = calibration_ratio if calibration_ratio and calibration_ratio > 0 else 1.0
        return min(self.limit, math.floor(self.limit / ratio))
