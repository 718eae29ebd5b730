"""`ctxagent bench startup`: how long a user waits, from the command to an agent that answers.

- `ctxagent --version` and `ctxagent --help`: wall time of a fresh process (median of `runs`).
- launch → ready, the way a user meets it: the real `ctxagent` in a pseudo-terminal (120×40) against
  the loopback scripted model, through the real provider SDK (`anthropic:` or `openai:` with
  `--base-url`). A message is typed as soon as the input box is drawn (the status line's "starting"
  is on screen); "ready" is when that message's request reaches the model server — the SDK imported,
  the agent built, the context built and sent. Both moments are measured from the launch.

Nothing here is a test (`tests/bench/test_startup_bench.py` checks only that it measures); the numbers
are machine- and load-dependent, and docs/BENCHMARKS.md §3 says under which load they were taken.
"""

from __future__ import annotations

import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxagent.tui.lab.bench.perf import _ctxagent_cmd

MODELS = ("anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini")
DRAWN = "starting"  # the status line's activity until the agent is ready (tui/app/agent_start.py)
_ESCAPES = re.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])")
TIMEOUT_S = 120.0


def bench_wall(args: list[str], runs: int = 5) -> dict[str, Any]:
    """A fresh `ctxagent ARGS` process, start to exit: the median of `runs`."""
    cmd = [*_ctxagent_cmd(), *args]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        times.append((time.perf_counter() - t0) * 1000)
    return {"command": "ctxagent " + " ".join(args), "p50_ms": round(statistics.median(times), 1),
            "min_ms": round(min(times), 1), "runs": runs}


def _launch_once(model: str, root: Path) -> dict[str, Any]:
    import fcntl
    import pty
    import struct
    import termios

    from ctxagent.tui.lab.scripted.server import ScriptedServer

    repo = root / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("hello\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root), "TERM": "xterm-256color", "LANG": "C.UTF-8",
           "CTXAGENT_HOME": str(root / "home"), "CTXAGENT_EMBEDDINGS": "off",
           "ANTHROPIC_API_KEY": "sk-ant-bench-0000000000000000", "OPENAI_API_KEY": "sk-bench-00000000000000000000"}
    server = ScriptedServer([{"text": "Ready and answering."}] * 4)
    url = server.start()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen([*_ctxagent_cmd(), "--model", model, "--base-url", url, "--yes"], cwd=repo, env=env,
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    drawn = ready = None
    seen = ""
    try:
        while time.perf_counter() - t0 < TIMEOUT_S and proc.poll() is None:
            if select.select([master], [], [], 0.01)[0]:
                try:
                    seen = (seen + _ESCAPES.sub("", os.read(master, 65536).decode("utf-8", "replace")))[-20_000:]
                except OSError:
                    break
            now = time.perf_counter() - t0
            if drawn is None and DRAWN in seen:
                drawn = now
                os.write(master, b"hello\r")  # typed as soon as the box is there
            if drawn is not None and server.requests:
                ready = now
                break
    finally:
        try:
            os.write(master, b"\x11")  # Ctrl+Q
            proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        os.close(master)
        server.stop()
    if drawn is None or ready is None:
        return {"error": f"{'the input was never drawn' if drawn is None else 'no request reached the model'} "
                         f"within {TIMEOUT_S:.0f} s; last screen text: {seen[-300:]!r}"}
    return {"drawn_ms": round(drawn * 1000, 1), "ready_ms": round(ready * 1000, 1)}


def bench_launch(model: str = MODELS[0], runs: int = 3) -> dict[str, Any]:
    """Launch → input drawn and launch → ready for `model`, the median and minimum of `runs`."""
    if sys.platform == "win32":
        return {"model": model, "skipped": "needs a pseudo-terminal (POSIX)"}
    rows = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="ctxagent-launch-") as tmp:
            rows.append(_launch_once(model, Path(tmp)))
    failed = [r["error"] for r in rows if "error" in r]
    if failed:
        return {"model": model, "skipped": failed[0]}
    drawn, ready = [r["drawn_ms"] for r in rows], [r["ready_ms"] for r in rows]
    return {"model": model, "runs": runs, "drawn_p50_ms": statistics.median(drawn), "drawn_min_ms": min(drawn),
            "ready_p50_ms": statistics.median(ready), "ready_min_ms": min(ready)}


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def startup_all(runs: int = 3, models: tuple[str, ...] = MODELS) -> dict[str, Any]:
    load = load_average()
    result = {"version": bench_wall(["--version"], runs=max(runs, 5)), "help": bench_wall(["--help"], runs=max(runs, 5)),
              "launch": [bench_launch(m, runs) for m in models]}
    return {**result, "load_before": load, "load_after": load_average()}


def startup_text(result: dict[str, Any]) -> str:
    from ctxagent.tui.lab.bench.tables import markdown

    rows: list[list[Any]] = []
    for key in ("version", "help"):
        v = result.get(key) or {}
        if v:
            rows.append([f"`{v['command']}`", v["p50_ms"], v["min_ms"], f"{v['runs']} runs"])
    for launch in result.get("launch") or []:
        if "skipped" in launch:
            rows.append([f"launch → ready ({launch['model']})", None, None, launch["skipped"]])
            continue
        rows.append([f"launch → input drawn ({launch['model']})", launch["drawn_p50_ms"], launch["drawn_min_ms"],
                     f"{launch['runs']} runs"])
        rows.append([f"launch → ready ({launch['model']})", launch["ready_p50_ms"], launch["ready_min_ms"],
                     "a message typed when the box is drawn reaches the model"])
    table = markdown(("start-up", "wall ms (p50)", "min ms", "note"), rows)
    return f"{table}\n\nload average (1 min): {result.get('load_before')} before, {result.get('load_after')} after"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("startup", help="--version, --help, and launch → ready in a pseudo-terminal, per provider SDK")
    p.add_argument("--runs", type=int, default=3, help="launches per provider (median and minimum; default 3)")
    p.add_argument("--model", action="append", help=f"a model to launch with (default: {', '.join(MODELS)})")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--out", help="also write the JSON result to this file")
    p.set_defaults(func=_run)


def _run(args: Any) -> int:
    from ctxagent.tui.lab.bench.options import emit

    result = startup_all(args.runs, tuple(args.model) if args.model else MODELS)
    emit(args, [result], startup_text)
    return 0
