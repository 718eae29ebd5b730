"""`ctxagent trust [--revoke] [--list] [--state] [PATH]`: let a repository's own config set security-relevant keys.

`--state` is the other acceptance: a `.ctxagent/` folder ctxagent did not create is refused
(context/floor/state_paths.py), and this takes it as ctxagent's own.

See agent/trust.py: until a repository is trusted, the keys of its `.ctxagent/config.toml` that
could raise permissions, run a program or send a key elsewhere are ignored (and reported).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ctxagent.agent.cli.commands import add_command
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, show_controls


def add_parser(sub: Any) -> None:
    p = add_command(
        sub, "trust",
        description="Trust a repository so that its .ctxagent/config.toml may set security-relevant keys "
                    "(permission_mode, *base_url, API keys, test_command, shell_timeout, summary_model, a scripted "
                    "model). Untrusted repositories' values for these keys are ignored and reported.",
    )
    p.add_argument("path", nargs="?", default=None, help="the repository (default: the current directory's repository)")
    p.add_argument("--revoke", action="store_true", help="stop trusting the repository")
    p.add_argument("--list", action="store_true", help="list the trusted repositories")
    p.add_argument("--state", action="store_true",
                   help="accept the repository's existing .ctxagent/ folder as ctxagent's own (one ctxagent did not "
                        "create is refused: it may have come with the repository); its config keys stay untrusted")
    p.set_defaults(func=cmd_trust)


def cmd_trust(args: argparse.Namespace) -> int:
    from ctxagent.agent.config import load_config
    from ctxagent.agent.session import find_repo_root
    from ctxagent.agent.trust import SENSITIVE_KEYS, is_trusted, revoke, trust_repo, trusted_repos
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
        shown = show_controls(str(root))
        if args.state:
            from ctxagent.context.floor.state_paths import accept_state_dir

            echo(f"accepted as ctxagent's own: {show_controls(str(accept_state_dir(root)))}")
            return 0
        if args.revoke:
            was = revoke(root)
            echo(f"{'no longer trusted' if was else 'was not trusted'}: {shown}")
            return 0
        if is_trusted(root):
            echo(f"already trusted: {shown}")
            return 0
        before = [i for i in load_config(root, {}, env={}).ignored_keys if not i.user_only]  # the others never apply
        trust_repo(root)
        echo(f"trusted: {shown}")
        if before:
            echo("its .ctxagent/config.toml now applies: " + ", ".join(sorted({i.key for i in before})))
        else:
            echo("its .ctxagent/config.toml may now set: " + ", ".join(SENSITIVE_KEYS))
        return 0
    except CtxagentError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2
