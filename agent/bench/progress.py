"""A small progress bar on stderr for long benchmark runs (silent when stderr is not a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`with Progress(total, "replay") as p: p.advance()` draws `label [####....] 12/40 3.1s`."""

    def __init__(self, total: int, label: str = "", *, stream: TextIO | None = None, enabled: bool | None = None,
                 width: int = 30, min_interval: float = 0.2):
        self.total = max(int(total), 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width = width
        self.min_interval = min_interval
        self.done = 0
        self.note = ""
        self._start = time.monotonic()
        self._last_draw = 0.0

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1, note: str | None = None) -> None:
        self.done += n
        if note is not None:
            self.note = note
        self._draw()

    def line(self) -> str:
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self._start
        note = f" {self.note}" if self.note else ""
        return f"{self.label} [{bar}] {self.done}/{self.total} {elapsed:.1f}s{note}"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self.min_interval and self.done < self.total:
            return
        self._last_draw = now
        self.stream.write("\r" + self.line()[:160] + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
