"""Calibrator: per model, a moving ratio of provider-reported prompt tokens to our local estimate.

Local tokenizers differ from Claude's or Gemini's; the ratio (EMA, clamped to a sane range,
starting at 1.0) is applied to the gauge and the budget. Persisted as JSON per model under the
user state dir (the caller passes the path, e.g. user_state_dir() / "calibration" / f"{model}.json").
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

from ctxagent.context.floor.state_paths import user_state_dir

MIN_RATIO = 0.5
MAX_RATIO = 3.0
DEFAULT_ALPHA = 0.3
MIN_ESTIMATE = 50  # tiny requests say little about the ratio (framing dominates)


def default_path(model: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model) or "model"
    return user_state_dir() / "calibration" / f"{safe}.json"


class Calibrator:
    def __init__(self, model: str, path: Path | None = None, alpha: float = DEFAULT_ALPHA):
        self.model = model
        self.path = Path(path) if path is not None else None
        self.alpha = alpha
        self.ratio = 1.0
        self.samples = 0
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            ratio = float(data.get("ratio", 1.0))
            if math.isfinite(ratio):
                self.ratio = min(MAX_RATIO, max(MIN_RATIO, ratio))
                self.samples = int(data.get("samples", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # a damaged calibration file just means starting over at 1.0

    def update(self, estimate: int, reported: int | None) -> float:
        """Fold one observation (our estimate vs the provider's input tokens) into the ratio."""
        if not reported or reported <= 0 or estimate < MIN_ESTIMATE:
            return self.ratio
        observed = min(MAX_RATIO, max(MIN_RATIO, reported / estimate))
        # the first sample replaces the prior outright; later ones move it gently
        self.ratio = observed if self.samples == 0 else (1 - self.alpha) * self.ratio + self.alpha * observed
        self.ratio = min(MAX_RATIO, max(MIN_RATIO, self.ratio))
        self.samples += 1
        self.save()
        return self.ratio

    def apply(self, n: int) -> int:
        return math.ceil(n * self.ratio)

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"model": self.model, "ratio": round(self.ratio, 6), "samples": self.samples})
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cal-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
