"""Calibrator: per model, provider-reported prompt tokens as a fixed prefix plus a ratio of our estimate.

    reported ≈ intercept + slope · local

Local tokenizers differ from Claude's or Gemini's, and a provider adds tokens our count never sees
(framing, a system prompt of its own): a pure ratio absorbs such a constant only by growing, and is
then wrong whenever the request size jumps (right after a compaction). The fit, online over the
last WINDOW (estimate, reported) pairs, newer pairs weighing more (half-life HALF_LIFE pairs):

- robust: weighted least squares on relative errors, re-weighted (Huber) so that one odd call does
  not drag the line;
- bounded: slope in [MIN_RATIO, MAX_RATIO] and |intercept| ≤ MAX_INTERCEPT (a fit outside them is not
  used), a prediction never below MIN_RATIO × the estimate, a reported count taken as at most
  MAX_INTERCEPT + MAX_RATIO × the estimate;
- with little data (fewer than MIN_FIT pairs, or their sizes too alike to tell a prefix from a
  ratio), it falls back to the ratio alone: the weighted median of reported / estimate (the first
  pair sets it outright);
- a shift (SHIFT_RUN newest pairs all off the fit by more than SHIFT_TOL, on the same side: another
  tool set, another model behind the same name) drops the older pairs, so the fit follows at once.

`ratio` is the effective ratio at the newest estimate (prediction / estimate): what the builder's
budget and the gauge multiply by (one float, recorded per step). `apply(n)` is the prediction itself.
Persisted as JSON per model under the user state dir (the caller passes the path, e.g.
user_state_dir() / "calibration" / f"{model}.json"); a file of the older ratio-only form loads as
that ratio.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import tempfile
from pathlib import Path

from ctxagent.context.floor.state_paths import user_state_dir

MIN_RATIO = 0.5
MAX_RATIO = 3.0
MIN_ESTIMATE = 50  # tiny requests say little about the ratio (framing dominates)
WINDOW = 64  # pairs the fit is made over (the newest)
# The three constants below were chosen on half of the mini-swe-agent runs (hashed by run id) and are
# measured on the other half and on the Claude Code and OpenHands sessions (BENCHMARKS §2).
HALF_LIFE = 2.0  # a pair this many pairs old weighs half as much as the newest
MIN_FIT = 6  # pairs before an intercept is fitted; fewer: the ratio alone
MIN_SPREAD = 0.15  # the sizes' weighted coefficient of variation below which a prefix cannot be told apart
MAX_INTERCEPT = 64_000  # provider tokens
HUBER = 0.01  # relative residual past which a pair's weight is cut (Huber's k, on relative errors)
HUBER_ROUNDS = 4
SHIFT_RUN = 3
SHIFT_TOL = 0.10


def default_path(model: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model) or "model"
    return user_state_dir() / "calibration" / f"{safe}.json"


def _clamp(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


def _weighted_median(values: list[float], weights: list[float]) -> float:
    pairs = sorted(zip(values, weights, strict=True))
    half = sum(weights) / 2
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= half:
            return v
    return pairs[-1][0]


def fit_line(pairs: list[tuple[float, float]], prior: float | None = None) -> tuple[float, float, bool]:
    """(intercept, slope, identified) of `pairs` (local, reported), oldest first, by the rules above;
    `identified` is False for a fallback. `prior`: the slope of the last line identified, kept (with the
    offset refitted) while the pairs are too few or too alike to identify one: after a shift, or while
    the requests grow slowly; without one the fallback is the ratio alone."""
    n = len(pairs)
    if n == 0:
        return 0.0, 1.0 if prior is None else prior, False
    age_w = [0.5 ** ((n - 1 - i) / HALF_LIFE) for i in range(n)]
    fallback = (0.0, _clamp(_weighted_median([y / x for x, y in pairs], age_w), MIN_RATIO, MAX_RATIO), False)
    if prior is not None:
        offset = _weighted_median([y - prior * x for x, y in pairs], age_w)
        if abs(offset) <= MAX_INTERCEPT:
            fallback = (offset, prior, False)
    if n < MIN_FIT:
        return fallback
    total = sum(age_w)
    mx = sum(w * x for w, (x, _) in zip(age_w, pairs, strict=True)) / total
    sd = math.sqrt(sum(w * (x - mx) ** 2 for w, (x, _) in zip(age_w, pairs, strict=True)) / total)
    if mx <= 0 or sd / mx < MIN_SPREAD:
        return fallback
    robust = [1.0] * n
    a, b = fallback[0], fallback[1]
    for _ in range(HUBER_ROUNDS):
        # least squares on relative residuals: each pair weighs w / y²
        ws = [aw * rw / (y * y) for aw, rw, (_, y) in zip(age_w, robust, pairs, strict=True)]
        sw = sum(ws)
        sx = sum(w * x for w, (x, _) in zip(ws, pairs, strict=True))
        sy = sum(w * y for w, (_, y) in zip(ws, pairs, strict=True))
        sxx = sum(w * x * x for w, (x, _) in zip(ws, pairs, strict=True))
        sxy = sum(w * x * y for w, (x, y) in zip(ws, pairs, strict=True))
        det = sw * sxx - sx * sx
        if det <= 0:
            return fallback
        b = (sw * sxy - sx * sy) / det
        a = (sy - b * sx) / sw
        robust = [min(1.0, HUBER / max(1e-12, abs(y - a - b * x) / y)) for x, y in pairs]
    if not (MIN_RATIO <= b <= MAX_RATIO and abs(a) <= MAX_INTERCEPT):
        return fallback
    return a, b, True


class Calibrator:
    def __init__(self, model: str, path: Path | None = None):
        self.model = model
        self.path = Path(path) if path is not None else None
        self.intercept = 0.0
        self.slope = 1.0
        self.samples = 0
        self.pairs: list[tuple[float, float]] = []  # (local, reported), oldest first, at most WINDOW
        self.prior: float | None = None  # the slope of the last line the pairs identified (see fit_line)
        self._last = 0  # the newest estimate fed (where `ratio` is read)
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            pairs = [(float(x), float(y)) for x, y in data.get("pairs") or []]
            if pairs and all(math.isfinite(x) and math.isfinite(y) and x >= MIN_ESTIMATE and y > 0 for x, y in pairs):
                self.pairs = pairs[-WINDOW:]
                prior = data.get("prior")
                self.prior = float(prior) if isinstance(prior, int | float) and MIN_RATIO <= prior <= MAX_RATIO else None
                self.intercept, self.slope, _ = fit_line(self.pairs, self.prior)
                self._last = int(self.pairs[-1][0])
            else:
                ratio = float(data.get("ratio", 1.0))  # the ratio-only form
                if not math.isfinite(ratio):
                    return
                self.slope = _clamp(ratio, MIN_RATIO, MAX_RATIO)
            self.samples = int(data.get("samples", len(self.pairs)))
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # a damaged calibration file just means starting over at 1.0

    @property
    def ratio(self) -> float:
        """Provider tokens per local token at the newest estimate (the slope before any)."""
        if self._last <= 0:
            return _clamp(self.slope, MIN_RATIO, MAX_RATIO)
        return self.predict(self._last) / self._last

    def predict(self, n: float) -> float:
        """Provider tokens for `n` local tokens (never below MIN_RATIO × n)."""
        if n <= 0:
            return 0.0
        return max(MIN_RATIO * n, self.intercept + self.slope * n)

    def update(self, estimate: int, reported: int | None) -> float:
        """Fold one observation (our estimate vs the provider's input tokens) into the fit; the ratio."""
        if not reported or reported <= 0 or estimate < MIN_ESTIMATE:
            return self.ratio
        x, y = float(estimate), float(reported)
        y = _clamp(y, MIN_RATIO * x, MAX_INTERCEPT + MAX_RATIO * x)
        self.pairs.append((x, y))
        self.pairs = self._after_shift(self.pairs)[-WINDOW:]
        self.intercept, self.slope, identified = fit_line(self.pairs, self.prior)
        if identified:
            self.prior = self.slope
        self.samples += 1
        self._last = estimate
        self.save()
        return self.ratio

    def _after_shift(self, pairs: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """`pairs` without the ones before a shift: the newest SHIFT_RUN all off the older pairs' fit by more
        than SHIFT_TOL on the same side."""
        if len(pairs) <= SHIFT_RUN + 1:
            return pairs
        a, b, _ = fit_line(pairs[:-SHIFT_RUN], self.prior)
        errs = [(a + b * x - y) / y for x, y in pairs[-SHIFT_RUN:]]
        if all(e > SHIFT_TOL for e in errs) or all(e < -SHIFT_TOL for e in errs):
            return pairs[-SHIFT_RUN:]
        return pairs

    def apply(self, n: int) -> int:
        return math.ceil(self.predict(n))

    def median_error(self) -> float | None:
        """The fit's median relative error over its pairs (None without any)."""
        if not self.pairs:
            return None
        return statistics.median(abs(self.predict(x) - y) / y for x, y in self.pairs)

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"model": self.model, "ratio": round(self.ratio, 6), "intercept": round(self.intercept, 3),
                              "slope": round(self.slope, 6), "prior": self.prior, "samples": self.samples,
                              "pairs": [[round(x, 1), round(y, 1)] for x, y in self.pairs]})
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cal-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
