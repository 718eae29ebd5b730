"""Progress of long benchmark runs on stderr: a redrawn bar on a terminal, plain lines otherwise, with an ETA.

    with Progress(120, "replay mini-swe-agent") as p:
        p.phase("fit pass", 5885, cost=1.0)      # units of this phase, and what one costs against the others
        p.advance(40, note="astropy__astropy-7671")
        p.phase("replay", 5885, cost=8.0)

A run may have phases (the replay's fit pass, then the runs themselves). The ETA covers every phase
left: the current one at its measured rate, the ones still to come at the rate the `cost`s predict
from what has been measured so far (the first phase's rate, scaled), so it is there from the first
unit on and sharpens as work is done. When stderr is not a terminal (a log file, CI, a pipe) the
same line is printed as a plain line at most every `line_every` seconds and at each phase's end,
instead of nothing.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO

from ctxagent.context.floor.display import for_display


@dataclass
class _Phase:
    name: str
    total: int
    cost: float
    done: int = 0
    started: float = 0.0
    seconds: float = 0.0  # time spent in it so far (set when it ends)


def clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """`with Progress(total, label) as p: p.advance()`; see the module's docstring for phases."""

    def __init__(self, total: int, label: str = "", *, stream: TextIO | None = None, enabled: bool | None = None,
                 width: int = 24, min_interval: float = 0.2, line_every: float = 15.0, plain: bool | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = True if enabled is None else enabled
        self.plain = (not tty) if plain is None else plain
        self.width = width
        self.min_interval = min_interval
        self.line_every = line_every
        self.note = ""
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._last_state = ""
        self._phases: list[_Phase] = [_Phase("", max(int(total), 0), 1.0, started=self._start)]
        self._current = 0
        self._planned: list[_Phase] = []

    # -- the phases --------------------------------------------------------------------------------
    def plan(self, phases: list[tuple[str, int, float]]) -> None:
        """Announce the phases still to come (name, units, cost per unit), so the ETA counts them."""
        self._planned = [_Phase(n, max(int(t), 0), c) for n, t, c in phases]

    def phase(self, name: str, total: int, cost: float = 1.0) -> None:
        """Start a phase of `total` units (ending the current one)."""
        now = time.monotonic()
        cur = self._phases[self._current]
        cur.seconds = now - cur.started
        if cur.done:
            self._emit(force=True)  # where the phase that ends got to
        self._planned = [p for p in self._planned if p.name != name]
        if not cur.name and not cur.done:
            self._phases[self._current] = _Phase(name, max(int(total), 0), cost, started=now)
        else:
            self._phases.append(_Phase(name, max(int(total), 0), cost, started=now))
            self._current = len(self._phases) - 1
        self.note = ""
        self._emit(force=True)

    @property
    def done(self) -> int:
        return self._phases[self._current].done

    @property
    def total(self) -> int:
        return self._phases[self._current].total

    def __enter__(self) -> Progress:
        if not self.plain:  # plain lines start with the first phase or the first unit done
            self._emit(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1, note: str | None = None) -> None:
        self._phases[self._current].done += n
        if note is not None:
            self.note = note
        self._emit()

    # -- the estimate ------------------------------------------------------------------------------
    def _rate(self) -> float | None:
        """Seconds per unit of cost 1, from the work measured so far."""
        spent = units = 0.0
        now = time.monotonic()
        for i, p in enumerate(self._phases):
            secs = (now - p.started) if i == self._current else p.seconds
            if p.done:
                spent += secs
                units += p.done * p.cost
        return spent / units if units else None

    def eta(self) -> float | None:
        rate = self._rate()
        if rate is None:
            return None
        cur = self._phases[self._current]
        left = max(cur.total - cur.done, 0) * cur.cost + sum(p.total * p.cost for p in self._planned)
        return left * rate

    def line(self) -> str:
        cur = self._phases[self._current]
        frac = min(cur.done / cur.total, 1.0) if cur.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self._start
        eta = self.eta()
        name = f" {cur.name}" if cur.name else ""
        eta_s = f", ETA {clock(eta)}" if eta is not None and cur.done < cur.total + 1 else ""
        note = f" {self.note}" if self.note else ""
        return f"{self.label}{name} [{bar}] {cur.done:,}/{cur.total:,} {clock(elapsed)} elapsed{eta_s}{note}"

    def _emit(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        cur = self._phases[self._current]
        if self.plain:
            if force or now - self._last_draw >= self.line_every or (cur.total and cur.done == cur.total):
                state = f"{cur.name}|{cur.done}|{cur.total}|{self.note}"
                if state == self._last_state and now - self._last_draw < self.line_every:
                    return  # nothing moved since the last line
                self._last_draw = now
                self._last_state = state
                self.stream.write(for_display(self.line()[:200]) + "\n")
                self.stream.flush()
            return
        if not force and now - self._last_draw < self.min_interval and cur.done < cur.total:
            return
        self._last_draw = now
        self.stream.write("\r" + for_display(self.line()[:160]) + "\x1b[K")  # its own line redrawn
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            if self.plain:
                self.stream.write(for_display(self.line()[:200]) + " — done\n")
            else:
                self._emit(force=True)
                self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
