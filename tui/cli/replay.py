"""`ctxagent replay [PATH]`: your own Claude Code sessions, replayed through ctxagent's context engine.

Reads the transcripts Claude Code keeps for this repository (or PATH: a transcript, a project folder,
or the whole projects folder), replays every model call per strategy (tui/lab/replay/, which reuses the
bench's replay), and prints per session what was sent and what ctxagent would have sent, the cost
with and without the prompt cache, overflows and retention, then a one-screen summary and a picture.
Progress goes to stderr; everything else to stdout. Nothing is sent anywhere; nothing is written
but what --out and --plot name.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo
from ctxagent.tui.cli.commands import add_command


def _strategies(text: str) -> list[str]:
    from ctxagent.tui.lab.bench.replay_setup import STRATEGIES

    names = list(STRATEGIES) if text == "all" else [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in STRATEGIES]
    if bad or not names:
        raise SystemExit(f"ctxagent replay: unknown strategy {', '.join(bad) or text!r}; choose from {', '.join(STRATEGIES)}")
    if text == "all":  # ctxagent first: the one the table and the picture compare with the original
        names.remove("ctxagent")
        names.insert(0, "ctxagent")
    return list(dict.fromkeys(names))


def _window(text: str) -> int:
    try:
        n = int(text.replace("_", "").replace(",", "").lower().replace("k", "000").replace("m", "000000"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--window wants a number of tokens (200000, 200k, 1m), not {text!r}") from None
    if n < 1000:
        raise argparse.ArgumentTypeError(f"--window {n} is too small to hold a request")
    return n


def run_replay(args: argparse.Namespace) -> int:
    from ctxagent.tui.lab.bench.options import write_atomically
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.replay import projects, report
    from ctxagent.tui.lab.replay.run import (
        DEFAULT_STRATEGIES,
        Options,
        default_window,
        main_model,
        replay_sessions,
    )
    from ctxagent.tui.lab.replay.sessions import parse_since, read_all

    strategies = _strategies(args.replay_strategy) if args.replay_strategy else list(DEFAULT_STRATEGIES)
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        echo(f"ctxagent replay: {exc}", err=True)
        return 2
    for flag, target, suffixes in (("--plot", args.plot, (".svg", ".png")), ("--out", args.out, None)):
        if target and suffixes and Path(target).suffix.lower() not in suffixes:
            echo(f"ctxagent replay: {flag} writes .svg or .png, not {target!r}", err=True)
            return 2
    path = Path(args.path) if args.path else None
    files, looked = projects.discover(path, args.all, Path.cwd())
    where = str(looked[0]) if len(looked) == 1 else ", ".join(str(p) for p in looked)
    if not files:
        echo(f"ctxagent replay: no Claude Code sessions here. Looked in: {where}\n"
             f"(Claude Code keeps them in {projects.projects_dir()}/<this folder, encoded>/; give a PATH, or --all "
             "for every project; $CLAUDE_CONFIG_DIR moves them.)", err=True)
        return 1
    with Progress(len(files), "reading transcripts") as bar:
        read = read_all(files, since, bar)
    if not read.sessions:
        why = f" active since {args.since}" if since is not None else " with a model call"
        echo(f"ctxagent replay: {len(files)} transcript(s) in {where}, none{why}.", err=True)
        return 1
    trajs = [s.traj for s in read.sessions]
    window, why = (args.replay_window, "given with --window") if args.replay_window else default_window(trajs)
    options = Options(window=window, strategies=strategies, main=main_model(trajs))
    with Progress(0, f"replay W={window:,}") as bar:
        replay = replay_sessions(read.sessions, options, jobs=args.jobs or 1, progress=bar)
    money = report.Money(options.main)
    echo(report.table_text(replay, money))
    echo()
    echo("\n".join(report.summary_lines(replay, read, where, money, why)))
    if args.picture or (args.picture is None and sys.stdout.isatty()):
        from ctxagent.tui.lab.replay.plot import terminal

        echo()
        color = sys.stdout.isatty()
        echo(terminal(replay, color=color), colors=color)  # its own colors; labels are from transcripts
    if args.plot:
        from ctxagent.tui.lab.replay.plot import write_plot

        try:
            write_plot(Path(args.plot), replay)
        except ImportError:
            echo("ctxagent replay: a PNG needs Pillow (pip install 'ctxagent[plot]'); an .svg needs nothing.", err=True)
            return 2
        echo(f"picture written to {args.plot}", err=True)
    if args.out:
        payload: Any = report.result_json(replay, read, where, money, why)
        write_atomically(Path(args.out), json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        echo(f"results written to {args.out}", err=True)
    return 0


def add_parser(subparsers: Any) -> None:
    p = add_command(subparsers, "replay", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("path", nargs="?", metavar="PATH",
                   help="a transcript (.jsonl), a project folder, or a folder of them (default: this repository's "
                        "sessions in ~/.claude/projects/, or $CLAUDE_CONFIG_DIR/projects/)")
    p.add_argument("--all", action="store_true", help="every project in the projects folder, not only this repository's")
    p.add_argument("--since", help="only sessions active since a date (2026-03-01), a date-time, or 7d / 2w ago")
    p.add_argument("--window", dest="replay_window", type=_window,
                   help="the window W to replay at (default: the window the sessions ran with — Claude Code's 200k, "
                        "or the model's window in the registry when a prompt was larger)")
    p.add_argument("--strategy", dest="replay_strategy",
                   help="a comma list: the first is compared with the original run (default ctxagent,grep,last2+names: "
                        "ctxagent, then the bench's two trivial baselines for comparison), or all")
    p.add_argument("--jobs", type=int, help="processes for the replay (default 1; the result is the same)")
    p.add_argument("--out", help="also write every figure as JSON to this file")
    p.add_argument("--plot", help="write the picture to this file (.svg, or .png with the plot extra)")
    p.add_argument("--picture", action=argparse.BooleanOptionalAction, default=None,
                   help="draw the picture in the terminal (default: when stdout is a terminal)")
    p.set_defaults(func=run_replay)
