"""`ctxagent rewind SESSION --to TURN [--code|--conversation|--both]` — /rewind without the TUI.

The same operation as the app's /rewind (the one rewind, agent/checkpoints/rewind.py): code,
conversation, and the memory records of the rewound turns retired (with `--code`, those of their
changes and test results, and the model is told). Headless there is nobody to ask, so files changed
outside the agent since its last turn are skipped (and listed) unless `--force`. `--list` prints the
turns the picker would show. File names are printed as they are, every control and invisible character
in them shown (`context/floor/display.py`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, echo_json, show_controls
from ctxagent.context.history import SessionLog
from ctxagent.tui.cli.commands import add_command

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.rewind import RewindMode
    from ctxagent.agent.checkpoints.turns import TurnInfo
    from ctxagent.context.memory import MemoryStore


def add_parser(sub: Any) -> None:
    p = add_command(
        sub, "rewind",
        description="Restore the code (from the checkpoint taken before the turn) and/or hide the "
        "conversation from that turn on (non-destructive: the log keeps everything).",
    )
    p.add_argument("session", nargs="?", help="session id, id prefix or path to its .jsonl (default: the latest)")
    p.add_argument("--to", type=int, dest="to_turn", metavar="TURN", help="the user turn to go back to (before it)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--both", dest="mode", action="store_const", const="both", help="code and conversation (default)")
    what.add_argument("--code", dest="mode", action="store_const", const="code", help="code only")
    what.add_argument("--conversation", dest="mode", action="store_const", const="conversation", help="conversation only")
    p.add_argument("--force", action="store_true", help="also overwrite files changed outside the agent since its last turn")
    p.add_argument("--list", action="store_true", help="list the turns (files changed, diffstat) and exit")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    # Own dest: a subparser default would clobber the top-level --cwd given before the subcommand.
    p.add_argument("--cwd", dest="rewind_cwd", help="repository whose .ctxagent/sessions holds the session")
    p.set_defaults(func=cmd_rewind, mode=None)


def _root(args: argparse.Namespace) -> Path:
    from ctxagent.agent.session import find_repo_root

    given = getattr(args, "rewind_cwd", None) or getattr(args, "cwd", None)
    return find_repo_root(Path(given).resolve() if given else Path.cwd())


def _turn_json(t: TurnInfo) -> dict[str, Any]:
    return {
        "turn": t.turn, "event_id": t.event_id, "time": t.time, "first_line": t.first_line,
        "checkpoint": t.checkpoint, "files_changed": t.files_changed,
        "diffstat": [{"path": s.path, "status": s.status, "added": s.added, "deleted": s.deleted} for s in t.diffstat],
        "summary": t.diffstat_summary(),
    }


def _print_turns(log: SessionLog, infos: list[TurnInfo]) -> None:
    echo(f"session {log.session_id} — {len(infos)} turns")
    for t in infos:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(t.time)) if t.time else "?"
        echo(f"  turn {t.turn:>3}  {stamp}  {t.first_line[:60]}")
        echo(f"            {t.diffstat_summary()}" + ("" if t.checkpoint else " (no checkpoint: code unchanged since)"))
        for s in t.diffstat:
            counts = "binary" if s.added is None else f"+{s.added} -{s.deleted}"
            echo(f"              {s.status} {show_controls(s.path)}  {counts}")


def _memory_stores(cps_state_dir: Path) -> list[MemoryStore]:
    """The stores the session may have written to — only those that exist (a rewind creates none)."""
    from ctxagent.context.floor.state_paths import user_state_dir
    from ctxagent.context.memory import MemoryStore

    paths = [(cps_state_dir / "memory.db", "project"), (user_state_dir() / "memory.db", "user")]
    return [MemoryStore.open(p, scope=scope) for p, scope in paths if p.is_file()]


def cmd_rewind(args: argparse.Namespace) -> int:
    # Imported here so that building the top-level parser stays cheap.
    from ctxagent.agent.checkpoints.rewind import rewind
    from ctxagent.agent.checkpoints.store import checkpoints_for_log
    from ctxagent.agent.session import resolve_session

    stores: list[MemoryStore] = []
    try:
        root = _root(args)
        log = SessionLog.load(resolve_session(root, args.session))
        cps = checkpoints_for_log(log, default_root=root)
        try:
            if args.list:
                infos = cps.turns(log)
                if args.json:
                    echo_json([_turn_json(t) for t in infos], indent=2)
                else:
                    _print_turns(log, infos)
                return 0
            if args.to_turn is None:
                echo("ctxagent rewind: --to TURN is required (see --list)", err=True)
                return 2
            mode: RewindMode = args.mode or "both"
            confirm = (lambda _paths: True) if args.force else None
            stores = _memory_stores(cps.state_dir)  # a code rewind retires what described the code, too
            result = rewind(log, args.to_turn, mode, checkpoints=cps, memory=stores, confirm_overwrite=confirm)
        finally:
            for store in stores:
                store.close()
            cps.close()
            log.close()
    except CtxagentError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2
    if args.json:
        echo_json({
            "session": log.session_id, "turn": args.to_turn, "mode": mode,
            "files_restored": result.files_restored, "files_deleted": result.files_deleted,
            "skipped": result.skipped, "changed_outside": result.changed_outside,
            "conversation_to_id": result.conversation_to_id, "rewind_event_id": result.rewind_event_id,
            "checkpoint": result.checkpoint,
            "backup_commit": result.backup_commit, "memory_retired": result.memory_retired,
            "warnings": result.warnings,
        }, indent=2)
        return 0
    echo(f"session {log.session_id}: rewound to before turn {args.to_turn} ({mode})")
    if mode in ("both", "code"):
        if result.checkpoint is None:
            echo("code: nothing to restore (the agent changed no file since that turn)")
        else:
            echo(f"code: {len(result.files_restored)} restored, {len(result.files_deleted)} deleted, {len(result.skipped)} skipped")
            for path in result.files_restored:
                echo(f"  restored {show_controls(path)}")
            for path in result.files_deleted:
                echo(f"  deleted  {show_controls(path)}")
            for path in result.skipped:
                why = "changed outside the agent (use --force)" if path in result.changed_outside else "ignored or not writable"
                echo(f"  skipped  {show_controls(path)}: {why}")
            if result.backup_commit:
                echo(f"  the tree before this rewind is kept as shadow commit {result.backup_commit[:12]}")
    n = result.memory_retired
    if result.conversation_to_id is not None:
        echo(f"conversation: turn {args.to_turn} and everything after it are hidden (still in the log)")
        echo(f"memory: {n} record{'s' if n != 1 else ''} written in those turns no longer recalled (kept, retired)")
    elif result.rewind_event_id is not None:
        echo(f"conversation: kept; the model is told the code of turn {args.to_turn} on was undone (event {result.rewind_event_id})")
        echo(f"memory: {n} record{'s' if n != 1 else ''} of those turns' changes and test results no longer recalled")
    for warning in result.warnings:
        echo(f"ctxagent rewind: {warning}", err=True)
    return 0
