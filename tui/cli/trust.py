"""`ctxagent trust [--show] [--revoke] [--list] [--state] [PATH]`: trust a repository's files as they are now.

Trust is keyed on content (agent/trust.py): `ctxagent trust` shows what it trusts — each of the
repository's `.ctxagent/config.toml` and `.mcp.json` that is new to the trust list (all of it, bounded)
or changed since it was trusted (a diff), and each project command (`.ctxagent/commands/`) not yet
confirmed or changed since — then records those bytes. From then on the config's security-relevant keys
apply and the commands run headless, until one of the files changes: then they are ignored (or refused)
again, and shown again. `--show` shows the same and records nothing.

`--state` is the other acceptance: a `.ctxagent/` folder ctxagent did not create is refused
(context/floor/state_paths.py), and this takes it as ctxagent's own.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, plural, show_controls
from ctxagent.tui.cli.commands import add_command


def add_parser(sub: Any) -> None:
    p = add_command(
        sub, "trust",
        description="Trust a repository's .ctxagent/config.toml and .mcp.json as they are now, so that they may "
                    "set security-relevant keys (permission_mode, *base_url, API keys, test_command, hooks, MCP "
                    "servers, a scripted model), and confirm its project commands (.ctxagent/commands/). It shows "
                    "what it trusts first: each file new to the trust list, or a diff of what changed since. A "
                    "later change to any of them is ignored until you trust it again.",
    )
    p.add_argument("path", nargs="?", default=None, help="the repository (default: the current directory's repository)")
    p.add_argument("--show", action="store_true", help="show what trusting would trust, and record nothing")
    p.add_argument("--revoke", action="store_true", help="stop trusting the repository (and its commands)")
    p.add_argument("--list", action="store_true", help="list the trusted repositories")
    p.add_argument("--state", action="store_true",
                   help="accept the repository's existing .ctxagent/ folder as ctxagent's own (one ctxagent did not "
                        "create is refused: it may have come with the repository); its config keys stay untrusted")
    p.set_defaults(func=cmd_trust)


def cmd_trust(args: argparse.Namespace) -> int:
    from ctxagent.agent.session import find_repo_root
    from ctxagent.agent.trust import revoke, trusted_repos
    try:
        if args.list:
            repos = trusted_repos()
            echo("\n".join(show_controls(str(r)) for r in repos) if repos else "no trusted repositories")
            return 0
        given = Path(args.path).expanduser() if args.path else Path.cwd()
        if not given.is_dir():
            echo(f"ctxagent: {show_controls(str(given))} is not a directory", err=True)
            return 2
        root = find_repo_root(given)
        if args.state:
            from ctxagent.context.floor.state_paths import accept_state_dir

            echo(f"accepted as ctxagent's own: {show_controls(str(accept_state_dir(root)))}")
            return 0
        if args.revoke:
            was = revoke(root)
            echo(f"{'no longer trusted' if was else 'was not trusted'}: {show_controls(str(root))}")
            return 0
        return _trust(root, record=not args.show)
    except CtxagentError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2


def _trust(root: Path, record: bool) -> int:
    """Show what is new or changed (the files, the commands), then record it unless only showing."""
    from ctxagent.agent.config import load_config
    from ctxagent.agent.custom_commands import confirm_commands, confirmation, describe_command, load_commands
    from ctxagent.agent.trust import (
        SENSITIVE_KEYS,
        TRUSTED_FILES,
        describe_files,
        is_trusted,
        read_trusted_files,
        trust_repo,
        verdict,
    )

    shown = show_controls(str(root))
    before = [i for i in load_config(root, {}, env={}).ignored_keys if not i.user_only]  # the others never apply
    seen = read_trusted_files(root)  # what is shown is what is recorded
    files_new = [rel for rel in TRUSTED_FILES if verdict(root, rel, seen[rel]) != "trusted"]
    commands = [c for c in load_commands(root).commands if confirmation(root, c) in ("new", "changed")]
    if not files_new and not commands and is_trusted(root):
        echo(f"already trusted: {shown} (nothing changed since)")
        return 0
    text = describe_files(root, seen)
    if text:
        echo(text)
    for command in commands:
        echo(f"\nthe project's command /{show_controls(command.qualified)}:\n{describe_command(root, command)}")
    if not record:
        echo(f"\nnothing recorded (--show); `ctxagent trust` trusts {shown} as shown above")
        return 0
    trust_repo(root, seen)
    if commands:
        confirm_commands(root, commands)
    echo(f"\ntrusted: {shown} (these bytes; a later change is ignored until you trust it again)")
    if before:
        echo("its config now applies: " + ", ".join(sorted({i.key for i in before})))
    else:
        echo("its .ctxagent/config.toml and .mcp.json may now set: " + ", ".join(SENSITIVE_KEYS))
    if commands:
        echo(f"confirmed {plural(len(commands), 'project command')}: "
             + ", ".join(f"/{show_controls(c.qualified)}" for c in commands))
    return 0
