"""`ctxagent memory …`: search, list, add, forget and count the project's memory records.

Operates on `<root>/.ctxagent/memory.db` (created on first use), the root of `--project` or the current
folder by the one rule (context/floor/roots.py: never the home folder). `--json` prints
machine-readable records; text output is the same compact line the model sees, with control
characters stripped (a record may hold any text a repository or a model put there).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json
from ctxagent.context.memory.record import LAYERS, TYPES
from ctxagent.tui.cli.commands import add_command


def _say(text: str, file: Any = None) -> None:
    echo(text, file=file)



def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(subparsers, "memory",
                    description="Search and manage the project's memory (.ctxagent/memory.db).")
    p.add_argument("--project", default=None, help="the repository (default: the current directory's)")
    p.add_argument("--user", action="store_true",
                   help="the user-level store (preferences across all projects) instead of the project's")
    sub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    s = sub.add_parser("search", help="full-text search (English, Chinese, identifiers, file names)")
    s.add_argument("query")
    s.add_argument("--layer", choices=LAYERS)
    s.add_argument("--type", choices=TYPES)
    s.add_argument("--file", help="only records about this file")
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--all", dest="include_superseded", action="store_true", help="include superseded records")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_guarded(_search))

    ls = sub.add_parser("list", help="list records (oldest first)")
    ls.add_argument("--type", choices=TYPES)
    ls.add_argument("--layer", choices=LAYERS)
    ls.add_argument("--current", action="store_true", help="hide superseded records")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_guarded(_list))

    a = sub.add_parser("add", help="remember TEXT as a record")
    a.add_argument("text")
    a.add_argument("--type", choices=TYPES, default="note")
    a.add_argument("--layer", choices=LAYERS, default="warm")
    a.add_argument("--tag", action="append", default=[], dest="tags")
    a.add_argument("--file", action="append", default=[], dest="files")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=_guarded(_add))

    f = sub.add_parser("forget", help="delete a record for good")
    f.add_argument("id", type=int)
    f.set_defaults(func=_guarded(_forget))

    st = sub.add_parser("stats", help="counts by type and layer")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_guarded(_stats))
    return p


def _guarded(fn: Any) -> Any:
    """A damaged or unwritable memory.db, or a `.ctxagent/` the repository shipped: a message, exit 2."""
    def run(args: argparse.Namespace) -> int:
        from ctxagent.context.errors import CtxagentError

        try:
            return int(fn(args))
        except CtxagentError as exc:
            echo(f"ctxagent: {exc}", err=True)
            return 2

    return run


def _open(args: argparse.Namespace) -> Any:
    from ctxagent.context.memory import MemoryStore

    if getattr(args, "user", False):
        return MemoryStore.open_user()
    from ctxagent.agent.session import find_repo_root

    return MemoryStore.open_project(find_repo_root(Path(args.project or getattr(args, "cwd", None) or ".")))


def _print_records(records: list[Any], as_json: bool) -> None:
    if as_json:  # JSON escapes control characters itself
        echo_json([r.to_dict() for r in records], indent=1)
        return
    if not records:
        _say("no records")
    for r in records:
        _say(f"{r.id:>5}  {r.layer:<4}  {r.line()}{_state(r)}  [by {r.author.label}{', binding' if r.binding else ''}]")


def _state(r: Any) -> str:
    """Why a record is not current, in words: replaced by a newer one, or taken back by a rewind."""
    from ctxagent.context.memory.record import RETIRED

    if r.superseded_by is not None:
        return f"  (superseded by {r.superseded_by})"
    if r.layer == RETIRED:
        return "  (retired: a rewind took back the turn that wrote it)"
    return ""


def _search(args: argparse.Namespace) -> int:
    with _open(args) as store:
        recs = store.search(args.query, layer=args.layer, type=args.type, file=args.file, limit=args.limit,
                            include_superseded=args.include_superseded)
        _print_records(recs, args.json)
    return 0


def _list(args: argparse.Namespace) -> int:
    with _open(args) as store:
        _print_records(store.list(type=args.type, layer=args.layer, include_superseded=not args.current), args.json)
    return 0


def _add(args: argparse.Namespace) -> int:
    from ctxagent.context.errors import CtxagentError

    with _open(args) as store:
        try:
            rid = store.add(args.text, args.type, layer=args.layer, tags=args.tags, files=args.files, session="cli")
        except CtxagentError as exc:
            _say(f"error: {exc}", sys.stderr)
            return 2
        rec = store.get(rid)
        if args.json:
            echo_json(rec.to_dict(), indent=None)
        else:
            _say(f"{'confirmed' if rec.confirmations > 1 else 'added'} {rid}: {rec.line()}")
    return 0


def _forget(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if not store.forget(args.id):
            echo(f"no record {args.id}", err=True)
            return 1
        echo(f"forgot {args.id}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    with _open(args) as store:
        st = store.stats()
    if args.json:
        echo_json(st, indent=1)
        return 0
    _say(f"{st['path']}: {st['total']} records ({st['superseded']} superseded, {st['retired']} retired by a rewind, "
         f"{st['pinned']} pinned constraints, {st['open_todos']} open todos; the last two count current records only)")
    _say("by type:  " + (", ".join(f"{k} {v}" for k, v in st["by_type"].items()) or "none"))
    _say("by layer: " + (", ".join(f"{k} {v}" for k, v in st["by_layer"].items()) or "none"))
    _say(f"search:   {st['retrieval']}" + (f"; {st['vectors']} records embedded" if st["vectors"] else ""))
    return 0
