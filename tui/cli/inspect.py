"""`ctxagent report | inspect | compact | config | sessions` — the engine, made visible."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxagent.agent.config import SANDBOX_KEYS, Config, flags_from_args, load_config, origin_of
from ctxagent.agent.session import (
    base_url_change,
    find_repo_root,
    list_sessions,
    open_session,
    resolve_session,
    session_endpoint,
)
from ctxagent.context.errors import CtxagentError
from ctxagent.context.events import CompactionData
from ctxagent.context.floor.display import echo, echo_json, plural
from ctxagent.context.floor.roots import NO_PROJECT_NOTE, root_or_none
from ctxagent.context.history import Event, SessionLog
from ctxagent.context.monitor import format_report_table, usage_text
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request
from ctxagent.tui.cli.commands import add_command


def _root(args: argparse.Namespace) -> Path:
    return find_repo_root(Path(args.cwd).resolve() if getattr(args, "cwd", None) else Path.cwd())


def _load(args: argparse.Namespace, ref: str | None) -> SessionLog:
    return SessionLog.load(resolve_session(_root(args), ref))


def _guard(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(fn(args))
        except CtxagentError as exc:
            echo(f"ctxagent: {exc}", err=True)
            return 2

    return run


def _compaction_text(c: CompactionData) -> str:
    method = f" ({c.method})" if c.method else ""
    return f"compacted events {c.first_id}–{c.last_id}{method}"


def _outside_compactions(log: SessionLog) -> tuple[list[list[str]], list[str]]:
    """Compactions not made by a step's own build (/compact, auto-compact, `ctxagent compact`):
    per report, the ones just before it; and the ones after the last step."""
    per_report: list[list[str]] = []
    pending: list[str] = []
    for e in log.events:
        if e.kind == "compaction":
            pending.append(_compaction_text(e.compaction))
        elif e.kind == "context_report":
            own = e.context_report.report.get("compacted")
            if own:  # the build's own compaction is in the report's actions already
                own_text = f"compacted events {own[0]}–{own[1]}"
                pending = [p for p in pending if not p.startswith(own_text)]
            per_report.append(pending)
            pending = []
    return per_report, pending


@_guard
def cmd_report(args: argparse.Namespace) -> int:
    log = _load(args, None if args.last else args.session)
    reports = [ContextReport.from_dict(e.context_report.report) for e in log.of_kind("context_report")]
    if args.json:
        echo_json([r.to_dict() for r in reports], indent=2)
        return 0
    extra, after = _outside_compactions(log)
    turns = len(log.of_kind("user"))
    echo(f"session {log.session_id} — {plural(len(reports), 'step')} in {plural(turns, 'turn')}")
    echo(format_report_table(reports, extra_actions=extra))
    if after:
        echo(f"after the last step: {', '.join(after)}")
    for c in log.of_kind("compaction"):  # a fallback is never silent, here either
        if c.compaction.note:
            echo(f"note: compaction of events {c.compaction.first_id}–{c.compaction.last_id}: {c.compaction.note}")
    echo(cost_line(log.events))
    from ctxagent.agent.providers.pricing import relief_lines

    reliefs = relief_lines(log.events)
    if reliefs:
        echo("prompt-cache effect of each relief (over the calls it served, before → after the cut):")
        for line in reliefs:
            echo(f"  {line}")
    from ctxagent.agent.subagents.report import subagent_lines

    for line in subagent_lines(log):
        echo(line)
    return 0


def cost_line(events: list[Event]) -> str:
    """What the session's model calls cost, each priced with the model of its step."""
    from ctxagent.agent.providers.pricing import session_cost

    spent = session_cost(events)
    if not spent.calls:
        return "cost: no model calls yet"
    parts = [f"{plural(m.calls, 'call')} with {m.model or 'an unnamed model'} "
             + (f"${m.cost:.4f}" if m.cost is not None else "(no prices)") for m in spent.by_model]
    total = f"${spent.total:.4f}" if spent.total is not None else "unknown (no prices for these models)"
    return f"cost: {total} — {'; '.join(parts)} (each call priced with the model that made it)"


def wire_body(model: str, request: Request, root: Path | None = None) -> dict[str, Any]:
    """The body `model`'s provider sends for `request`: what a step's sha256 was taken of (its images
    read from the attachment store of `root`, as the step read them)."""
    from ctxagent.agent.providers.registry import make_provider, parse_model_name
    from ctxagent.agent.providers.specs import Credentials

    # never sent: no key, a loopback address nothing answers on (the body is what a custom server gets)
    offline = Credentials(parse_model_name(model)[0], "http://127.0.0.1:9")
    provider = make_provider(model, offline, max_tokens=request.max_tokens)
    if root is not None and hasattr(provider, "attachments"):
        from ctxagent.context.images import ImageReader
        from ctxagent.context.spill import SpillStore

        provider.attachments = ImageReader(SpillStore.for_root(root))
    return provider.body(request)


@_guard
def cmd_inspect(args: argparse.Namespace) -> int:
    from ctxagent.context.builder.rebuild import rebuild_step

    log = _load(args, None if args.last else args.session)
    number = args.step
    if number is None:  # the last step, as `report` numbers them
        reports = log.of_kind("context_report")
        if not reports:
            raise CtxagentError(f"session {log.session_id} has no steps yet: nothing was sent to a model")
        number = int(ContextReport.from_dict(reports[-1].context_report.report).step)
    root = _root(args)
    from ctxagent.agent.providers.registry import label_takes_images

    # the request's own rule for images (a model that takes none was sent stubs): registry.takes_images
    step = rebuild_step(log.events, number, lambda model, request: wire_body(model, request, root),
                        images=label_takes_images)
    if args.json:
        out: dict[str, Any] = {
            "request": step.body,
            "masked": step.masked,
            "pruned": step.result.pruned_ids,
            "spilled": step.result.spilled_ids,
            "report": step.report,
            "verified": step.verified,
        }
        echo_json(out, indent=2)
        return 0 if step.verified else 1
    r = ContextReport.from_dict(step.report)
    # the provider's tokens, like the percentage and the window beside them (and `ctxagent report`)
    echo(f"step {step.step} · turn {r.turn} · {r.calibrated_total:,} tokens · {usage_text(r.usage_pct, 1)} of {r.window:,} "
         f"(tokens as the provider counts them: the local count {r.total:,} × {r.calibration_ratio:.2f})")
    echo(f"request rebuilt from the log: {'identical to what was sent (sha256 match)' if step.verified else 'DIFFERS from what was sent'}")
    echo(f"masked ranges: {step.masked or 'none'}; pruned events: {step.result.pruned_ids or 'none'}; spilled events: {step.result.spilled_ids or 'none'}")
    echo()
    echo_json(step.body, indent=2)
    return 0 if step.verified else 1


@_guard
def cmd_compact(args: argparse.Namespace) -> int:
    """Summarize the session's older turns now. Compaction needs no main model, only a summarizer: the
    summary model (`summary_model`, else the session model's cheaper sibling) — or none, and then the
    extractive summary: `summary_model = "none"` asks for no key and imports no provider SDK. Every
    fallback is said, on stderr and in the compaction record's note. The summary model is the
    session's model, at the base URL the config (or `--base-url`) names: the log never chooses where a
    key goes (it lives in the repository). `--base-url` is the session's own provider's URL: a summary
    model on another provider goes to that provider's URL (providers/specs.py key_url). When the log
    recorded another base URL, the conversation would go to a provider the session did not use, so the
    summary is the extractive one (said) unless the user names the URL with `--base-url`; `--model`
    names the summary model."""
    from ctxagent.agent.parts import Journal
    from ctxagent.agent.providers.registry import provider_named
    from ctxagent.agent.updates import Notice
    from ctxagent.context.compact import compact_now

    root = _root(args)
    path = resolve_session(root, args.session)
    config = load_config(root, {})
    log = SessionLog.load(path)
    endpoint = session_endpoint(log)
    if args.base_url:  # the user's own choice, typed on the command line: the session's provider's URL
        config.base_url = args.base_url
        config.base_url_provider = provider_named(endpoint.label if endpoint is not None else config.model)
    if endpoint is not None:
        config.model = endpoint.label  # the model only: never the log's base URL
        if endpoint.base_url is None:
            echo("ctxagent: this session's log does not record its base URL (an older ctxagent): the "
                 "configured one is used", err=True)
    change = base_url_change(log, config)
    if change is not None and not args.base_url:
        echo(f"ctxagent: {change}; the summary is the extractive one — pass --base-url to choose where "
             "a model summary goes", err=True)
        config.summary_model = "none"
    elif args.model:
        config.summary_model = args.model
    summarize, fallback = _summarizer(config)
    session = open_session(root, config, str(path))
    notices: list[str] = []
    memory = _memory_store(root, config, notices)
    journal = Journal(session.log, memory, lambda ev: notices.append(ev.message) if isinstance(ev, Notice) else None)
    try:
        record = compact_now(session.log.events, summarize=summarize, focus=args.focus, keep_turns=1)
        if record is not None:
            if fallback:
                record = record.model_copy(update={"note": f"{fallback}{'; ' + record.note if record.note else ''}"})
            journal.record(record)
            session.log.sync()
    finally:
        session.log.close()
        if memory is not None:
            memory.close()
    if record is None:
        echo("nothing to compact")
        return 0
    focus = f", focus {record.focus!r}" if record.focus else ""
    echo(f"compacted events {record.first_id}–{record.last_id} ({record.method} summary{focus}); originals kept in the log")
    for text in [*([record.note] if record.note else []), *notices]:
        echo(f"ctxagent: note: {text}", err=True)
    return 0


def _summarizer(config: Any) -> tuple[Callable[[str], str] | None, str | None]:
    """(the summary model call or None, why there is none when one was wanted)."""
    if config.summary_model == "none":
        return None, None  # the user's choice: no model, no key, no SDK
    from ctxagent.agent.factory import resolve_model, summarizer_for

    try:
        label, _ = resolve_model(config)
    except CtxagentError as exc:
        return None, f"no summary model ({exc}) — the extractive summary was used"
    summarize = summarizer_for(config, label)
    if summarize is None:
        return None, (f"no summary model for {label} (set summary_model, and its provider's key) — "
                      "the extractive summary was used")
    return summarize, None


def _memory_store(root: Path, config: Any, notices: list[str]) -> Any:
    """The project's memory store, so the summary's records are ingested as a turn's would be; None
    with memory off, or (said) when it cannot be opened."""
    if not config.memory:
        return None
    from ctxagent.context.memory import MemoryStore

    try:
        return MemoryStore.open_project(root, synonyms=config.synonyms, degrade_after_turns=config.degrade_after_turns)
    except CtxagentError as exc:
        notices.append(f"memory not updated: {exc}")
        return None


@_guard
def cmd_config(args: argparse.Namespace) -> int:
    """The effective config as JSON on stdout, with the top-level flags given (`ctxagent --sandbox
    off config`): `origins` says which layer set each key, `effective_sandbox` how commands run and
    where each sandbox key came from, `ignored_keys` the repository's keys not applied; what was
    ignored and how to allow it, in words, on stderr. With no model set, `model` is the one a key
    alone starts with (agent/factory.py `default_model`), and `origins.model` says which key implies it."""
    from ctxagent.agent.trust import describe_ignored

    root = root_or_none(Path(args.cwd).resolve() if getattr(args, "cwd", None) else Path.cwd())
    if root is None:
        echo(f"ctxagent: {NO_PROJECT_NOTE}", err=True)
    cfg = load_config(root, flags_from_args(args))
    shown = {**cfg.redacted(), "effective_sandbox": effective_sandbox(cfg)}
    implied = implied_model(cfg)
    if implied is not None:
        shown["model"], why = implied
        shown["origins"] = {**shown.get("origins", {}), "model": why}
    echo_json(shown, indent=2)
    if cfg.ignored_keys:
        echo(f"ctxagent: {describe_ignored(cfg.ignored_keys)}", err=True)
    return 0


def implied_model(cfg: Config) -> tuple[str, str] | None:
    """(the model a start would use, why) when the config names none but a key implies one; else None."""
    if cfg.model:
        return None
    from ctxagent.agent.providers import specs
    from ctxagent.agent.providers.specs import default_model

    model = default_model(cfg)
    if model is None:
        return None
    provider = model.partition(":")[0]
    env = specs.get(provider).key_env
    return model, (f"implied by the {provider} API key{f' ({env})' if env else ''}: its provider's start model "
                   "(set model to choose another)")


def effective_sandbox(cfg: Config) -> dict[str, Any]:
    """The policy commands run under (hidden paths resolved to the default list) and each key's origin."""
    from ctxagent.tools.sandbox import SandboxPolicy

    policy = SandboxPolicy.from_config(cfg)
    return {"mode": policy.mode, "network": policy.network, "env": list(policy.env), "writable": list(policy.writable),
            "hidden": list(policy.hidden), "unix_sockets": policy.unix_sockets, "description": policy.describe(),
            "from": {key: origin_of(cfg, key) for key in SANDBOX_KEYS}}


@_guard
def cmd_sessions(args: argparse.Namespace) -> int:
    root = _root(args)
    paths = list_sessions(root)
    if not paths:
        echo(f"no sessions yet in {root} (start one with `ctxagent` or `ctxagent -p \"...\"`)")
        return 0
    for path in paths:
        log = SessionLog.load(path)
        first = next((e.user.text for e in log.events if e.kind == "user"), "")
        steps = len(log.of_kind("context_report"))
        turns = len(log.of_kind("user"))
        line = str(first).splitlines()[0][:60] if str(first).strip() else ""
        echo(f"{log.session_id}  {plural(turns, 'turn'):>9}  {plural(steps, 'step'):>9}  {line}")
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(sub, "report",
                       description="One row per step (one model request): tokens, usage of the window, whether the "
                       "system prompt stayed in, loss, and what the engine did (spill, prune, compact).")
    p.add_argument("session", nargs="?", help="session id or id prefix (default: the latest)")
    p.add_argument("--last", action="store_true", help="the latest session")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("--cwd", help="repository whose sessions to read (default: the current directory)")
    p.set_defaults(func=cmd_report)

    p = add_command(sub, "inspect",
                       description="Rebuild a step's request from the session log and check it against the sha256 "
                       "of what was sent (exit 1 when it differs).")
    p.add_argument("session", nargs="?", help="session id or id prefix (default: the latest)")
    p.add_argument("--last", action="store_true", help="the latest session")
    p.add_argument("--step", type=int, help="the step number (as in `ctxagent report`; default: the last step)")
    p.add_argument("--json", action="store_true", help="print the request, masks and report as JSON")
    p.add_argument("--cwd", help="repository whose sessions to read (default: the current directory)")
    p.set_defaults(func=cmd_inspect)

    p = add_command(sub, "compact")
    p.add_argument("session", nargs="?", help="session id or id prefix (default: the latest)")
    p.add_argument("--focus", help="what the summary should keep in particular")
    p.add_argument("--model", help="model for the summary (default: the summary model of the session's endpoint)")
    p.add_argument("--base-url", help="where the summary model is called (default: the config's; a session log never chooses)")
    p.add_argument("--cwd", help="repository whose sessions to read (default: the current directory)")
    p.set_defaults(func=cmd_compact)

    p = add_command(sub, "config")
    p.add_argument("--cwd", help="repository whose .ctxagent/config.toml to include (default: the current directory)")
    p.set_defaults(func=cmd_config)

    p = add_command(sub, "sessions")
    p.add_argument("--cwd", help="repository whose sessions to list (default: the current directory)")
    p.set_defaults(func=cmd_sessions)
