"""`ctxagent models [--refresh]`: the models ctxagent knows — the registry (agent/data/models.toml)
merged with the providers' own catalogues cached in the user state dir — with window, maximum
output, price and lifecycle. `--refresh` asks each provider that has a key (or a --base-url) now.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from ctxagent.agent.providers import catalogue, specs
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, echo_json
from ctxagent.tui.cli.commands import add_command

LOCAL = "local"  # the section of models served by your own OpenAI-compatible server


def _lifecycle_text(info: Any, today: dt.date) -> str:
    state = info.lifecycle_on(today)
    if state == "active":
        return "active"
    date = f" {info.retires.isoformat()}" if info.retires else ""
    instead = f" → {info.replacement}" if info.replacement else ""
    if state == "retired":
        return f"retired{date}{instead}"
    return f"deprecated, ends{date}{instead}" if date else f"deprecated{instead}"


def _price_text(info: Any) -> str:
    p = info.prices
    return f"${p.input:g} / ${p.output:g}" if p.input or p.output else "—"


def model_rows(config: Any, today: dt.date | None = None) -> list[dict[str, Any]]:
    """One row per model: registry entries and catalogue-only models, with their merged figures."""
    from ctxagent.agent.providers.registry import is_local, load_registry, model_info

    today = today or dt.date.today()
    rows: list[dict[str, Any]] = []
    registry = load_registry()["models"]
    catalogued = catalogue.catalogued()
    listed_by: dict[str, dict[str, Any]] = {
        s.name: catalogue.load(s.name, specs.key_url(s, config)).models for s in catalogued}
    local = specs.local_provider().name
    names: list[tuple[str, str]] = [(str(e.get("provider") or local), n) for n, e in registry.items()]
    for spec in catalogued:
        names += [(spec.name, mid) for mid in listed_by[spec.name] if mid not in registry]
    for provider, name in names:
        info = model_info(provider, name, catalogue=listed_by.get(provider))
        served_locally = is_local(provider, name)
        rows.append({
            "model": f"{provider}:{name}",
            "provider": LOCAL if served_locally else provider,
            "window": info.window,
            "max_output": info.max_output,
            "price_in": info.prices.input,
            "price_out": info.prices.output,
            "lifecycle": info.lifecycle_on(today),
            "retires": info.retires.isoformat() if info.retires else None,
            "replacement": info.replacement or None,
            "source": "both" if name in registry and info.source == "catalogue" else info.source,
            "default": name == specs.get(provider).start_model,
            "_lifecycle_text": _lifecycle_text(info, today),
            "_price_text": "free (local)" if served_locally else _price_text(info),
        })
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    header = ("model", "window", "max out", "$/Mtok in / out", "lifecycle", "source")
    table = [header]
    for r in rows:
        mark = " *" if r["default"] else ""
        table.append((r["model"] + mark, f"{r['window']:,}", f"{r['max_output']:,}", r["_price_text"],
                      r["_lifecycle_text"], r["source"]))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for i, row in enumerate(table):
        cells = [c.rjust(widths[j]) if j in (1, 2) else c.ljust(widths[j]) for j, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_models(args: argparse.Namespace) -> int:
    from ctxagent.agent.config import flags_from_args, load_config
    from ctxagent.context.floor.roots import NO_PROJECT_NOTE, root_or_none

    try:
        root = root_or_none(Path(args.cwd).resolve() if args.cwd else Path.cwd())
        if root is None:  # `ctxagent models` in the home folder: the list, on the user's own settings
            echo(f"ctxagent: {NO_PROJECT_NOTE}", err=True)
        config = load_config(root, flags_from_args(args))
    except CtxagentError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2
    if args.refresh:
        only = args.provider if args.provider in {s.name for s in catalogue.catalogued()} else None
        fetched = catalogue.refresh_catalogues(config, force=True, only=only)  # --provider: that provider's list alone
        if not fetched:
            keys = " or ".join(str(s.key_env) for s in catalogue.catalogued() if s.key_env)
            echo(f"ctxagent: no {keys} (or --base-url): showing the built-in registry only", err=True)
        for provider, cat in fetched.items():
            if cat.error:
                echo(f"ctxagent: could not read {provider}'s model list ({cat.error}); showing the last one kept",
                     err=True)
            else:
                n = len(cat.models)
                echo(f"{provider}: {n} model{'' if n == 1 else 's'} listed by the provider", err=True)
    rows = model_rows(config)
    if not args.all:
        rows = [r for r in rows if r["lifecycle"] != "retired"]
    if args.provider:
        rows = [r for r in rows if r["provider"] == args.provider]
    if args.json:
        echo_json([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], indent=2)
        return 0
    sections = [(s.name, s.title) for s in catalogue.catalogued()] + [(LOCAL, f"local ({specs.local_provider().title}-compatible servers)")]
    out = []
    for key, title in sections:
        part = [r for r in rows if r["provider"] == key]
        if part:
            out.append(f"{title}\n{_table(part)}")
    echo("\n\n".join(out) if out else "no models match")
    echo("\n* the model a key alone starts with (Anthropic's when both keys are set). Prices are USD per "
          "million tokens. source: registry (built in), catalogue (the provider's own list, read with "
          "`ctxagent models --refresh` or at a start when a day old), both." + ("" if args.all else " Retired models are hidden: --all shows them."))
    return 0


def add_parser(sub: Any) -> None:
    p = add_command(sub, "models", description=__doc__)
    p.add_argument("--refresh", action="store_true", help="read each provider's model catalogue now (needs its key)")
    p.add_argument("--all", action="store_true", help="include retired models")
    p.add_argument("--provider", choices=[*(s.name for s in catalogue.catalogued()), LOCAL], help="only this provider's models")
    p.add_argument("--base-url", help="read the catalogue of this server (an OpenAI-compatible one, or a proxy): "
                   "the URL of the provider your --model (or config's model) names, else of OpenAI-compatible servers")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--cwd", help="repository whose configuration to use (default: the current directory)")
    p.set_defaults(func=cmd_models)
