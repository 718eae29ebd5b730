"""`ctxagent doctor [SESSION]`: the set-up checks (the model and its key, the offline tokenizer, the
memory database, whether commands run sandboxed on this machine: the mode and where it was set,
which bwrap, or why none can run and the setting that turns the sandbox off) and a session's context health: token use against the window, a context report for
every model call (the context was rebuilt before each step), no base64 blobs or huge JSON left in the
visible history, every compaction's originals still in the log, no torn log lines.

Each check returns (status, title, detail): status "ok" or "warn"; a warn says what to do.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

from ctxagent.agent.config import Config, flags_from_args, load_config, origin_of
from ctxagent.agent.providers.pricing import model_calls
from ctxagent.agent.session import find_repo_root, resolve_session
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, echo_json, plural
from ctxagent.context.history import Event, SessionLog, view
from ctxagent.context.monitor import usage_text
from ctxagent.context.report import ContextReport
from ctxagent.tui.cli.commands import add_command

Check = tuple[str, str, str]
_BASE64 = re.compile(r"[A-Za-z0-9+/=]{400,}")


def check_sandbox(cfg: Config | None) -> list[Check]:
    """Whether commands run sandboxed on this machine under `cfg` (tools/sandbox/status.py), and
    where its mode was set. None: the config could not be read (the model check says why), and the
    default policy is checked."""
    from ctxagent.tools.sandbox import DEFAULT_POLICY, SandboxPolicy, sandbox_checks

    if cfg is None:
        return sandbox_checks(DEFAULT_POLICY, origin="the default: the config could not be read")
    where = origin_of(cfg, "sandbox")
    return sandbox_checks(SandboxPolicy.from_config(cfg), origin={"flags": "--sandbox"}.get(where, where))


def model_check(cfg: Config) -> Check:
    """The model `cfg` starts with, its key by the provider's rule (the one the provider factory
    applies: `ProviderSpec.key_problem`), and its lifecycle."""
    from ctxagent.agent.factory import resolve_model
    from ctxagent.agent.providers import specs
    from ctxagent.agent.providers.registry import lifecycle_problem

    try:
        label, info = resolve_model(cfg)  # a key alone picks the default; a retired model is refused
    except CtxagentError as exc:
        return ("warn", "model", f"{exc}")
    provider, model = label.split(":", 1)
    spec = specs.get(provider)
    key_problem = spec.key_problem(model, specs.credentials_for(cfg, spec))  # its key, where the rule sends it
    if key_problem is not None:
        return ("warn", "model", key_problem)
    problem = lifecycle_problem(info, label)
    if problem is not None:
        return ("warn", "model", problem[1])
    return ("ok", "model", label if cfg.model else f"{label} (what your API key starts with; set CTXAGENT_MODEL for another)")


def check_tokenizer() -> Check:
    from ctxagent.context.tokens import TiktokenCounter

    try:
        n = TiktokenCounter("o200k_base").count("offline tokenizer check — 离线分词检查")
    except Exception as exc:  # noqa: BLE001
        return ("warn", "offline tokenizer", f"o200k_base failed to load ({exc}); counts fall back to the heuristic")
    return ("ok", "offline tokenizer", f"o200k_base loaded from package data ({n} tokens in the probe)")


def check_memory_db(root: Path) -> Check:
    db = root / ".ctxagent" / "memory.db"
    if not db.exists():
        return ("ok", "memory database", "none yet (created on first use)")
    try:
        with sqlite3.connect(db) as conn:
            res = conn.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.Error as exc:
        return ("warn", "memory database", f"cannot open {db}: {exc}")
    return ("ok" if res == "ok" else "warn", "memory database", f"integrity_check: {res}")


def check_session(log: SessionLog) -> list[Check]:
    events = log.events
    reports = [ContextReport.from_dict(e.context_report.report) for e in events if e.kind == "context_report"]
    assistants = model_calls(events)  # the user's own @file / !command calls call no model (AssistantData.direct)
    out: list[Check] = []
    if reports:
        last = reports[-1]
        status = "ok" if last.usage_pct < 75 else "warn"
        advice = "" if status == "ok" else " — run /compact (or `ctxagent compact`) or start a new session"
        out.append((status, "token use", f"{usage_text(last.usage_pct, 1)} of {last.window} at step {last.step}{advice}"))
    else:
        out.append(("warn", "token use", "no context report in this session yet"))
    missing = len(assistants) - len(reports)
    out.append(
        ("ok", "per-step trimming", f"a context report for each of {plural(len(reports), 'step')}" if len(reports) != 1
         else "a context report for the one step")
        if missing <= 0
        else ("warn", "per-step trimming", f"{plural(missing, 'model call')} without a context report — the context was not rebuilt before every step")
    )
    big = _large_objects(events)
    out.append(
        ("ok", "large objects in history", "no base64 blobs or JSON over 20k chars in the visible history")
        if not big
        else ("warn", "large objects in history", f"{plural(len(big), 'visible event')} with base64 or huge JSON (ids {big[:10]}); they should have been spilled")
    )
    out.append(_check_compactions(events))
    if log.skipped:
        kept = sum(1 for s in log.skipped if s.placeholder)
        what = [f"line {s.line}: {s.problem}" for s in log.skipped[:MAX_SKIPPED_SHOWN]]
        more = len(log.skipped) - len(what)
        detail = (f"{plural(len(log.skipped), 'log line')} could not be used ({kept} with wrong fields kept as "
                  f"placeholders, {len(log.skipped) - kept} torn or not an event): " + "; ".join(what)
                  + (f"; and {more} more" if more > 0 else ""))
        out.append(("warn", "log integrity", detail))
    else:
        out.append(("ok", "log integrity", f"{plural(len(events), 'event')}, no torn lines"))
    return out


MAX_SKIPPED_SHOWN = 5


def _large_objects(events: list[Event]) -> list[int]:
    ids = []
    for item in view(events):
        if not isinstance(item, Event):
            continue
        text = item.tool_result.content if item.kind == "tool_result" else item.user.text if item.kind == "user" else item.assistant.text
        if _BASE64.search(text) or (len(text) > 20_000 and text.lstrip()[:1] in "{["):
            ids.append(item.id)
    return ids


def _check_compactions(events: list[Event]) -> Check:
    comps = [e for e in events if e.kind == "compaction"]
    if not comps:
        return ("ok", "compactions", "none in this session")
    by_id = {e.id: e for e in events}
    lost = [c.id for c in comps if not all(i in by_id for i in range(c.compaction.first_id, c.compaction.last_id + 1))]
    if lost:
        return ("warn", "compactions", f"compactions {lost} mask events missing from the log: they cannot be rewound")
    return ("ok", "compactions", f"{plural(len(comps), 'compaction')}; every masked original is still in the log and can be rewound")


def cmd_doctor(args: argparse.Namespace) -> int:
    root = find_repo_root(Path(args.cwd).resolve() if args.cwd else Path.cwd())
    cfg: Config | None
    try:  # with the top-level flags: `ctxagent --sandbox off doctor` checks what that run would do
        cfg = load_config(root, flags_from_args(args))
        model = model_check(cfg)
    except CtxagentError as exc:
        cfg, model = None, ("warn", "model", f"{exc}")
    checks = [model, check_tokenizer(), check_memory_db(root), *check_sandbox(cfg)]
    try:
        path = resolve_session(root, args.session)
        log = SessionLog.load(path)
        checks.extend(check_session(log))
    except CtxagentError as exc:
        checks.append(("ok" if not args.session else "warn", "session", str(exc)))
    if args.json:
        echo_json([{"status": s, "check": t, "detail": d} for s, t, d in checks], indent=2)
    else:
        for status, title, detail in checks:
            echo(f"[{status:4}] {title}: {detail}")
    sys.stdout.flush()
    return 0 if all(s == "ok" for s, _, _ in checks) else 1


def add_parser(sub: Any) -> None:
    p = add_command(sub, "doctor", description="Check the model set-up, the offline tokenizer, the memory database, the command "
                       "sandbox (bubblewrap) and a session's context health; exit 1 when any check warns.")
    p.add_argument("session", nargs="?", help="session id (default: the latest)")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--cwd", help="repository to check (default: the current directory)")
    p.set_defaults(func=cmd_doctor)
