"""`ctxagent` command line: the TUI by default, `-p` for headless, and subcommands.

Subcommands live in their own modules; each exposes `add_parser(subparsers)` and sets
`func(args) -> int` on its parser. Register a new one by adding its module to SUBCOMMAND_MODULES.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ctxagent.agent import __version__

SUBCOMMAND_MODULES: list[str] = [
    "ctxagent.agent.cli_server",
    "ctxagent.agent.cli_context",
    "ctxagent.agent.doctor",
    "ctxagent.agent.cli_rewind",
    "ctxagent.agent.cli_memory",
    "ctxagent.agent.cli_mcp",
    "ctxagent.agent.cli_bench",
    "ctxagent.agent.cli_demo",
    "ctxagent.agent.cli_models",
    "ctxagent.agent.cli_trust",
]

# Flags many subcommands share: their help is written once, here, for any parser that left it out.
STANDARD_HELP = {
    "--json": "print JSON instead of text",
    "--cwd": "repository to work in (default: the current directory)",
}

# Options naming a directory that must already exist (a typo must not create one).
DIRECTORY_OPTIONS = {"cwd": "--cwd", "rewind_cwd": "--cwd", "project": "--project"}

EPILOG = """headless exit codes (ctxagent -p): 0 done · 1 provider failed · 2 configuration or usage error ·
3 authentication failed · 4 the context cannot fit · 5 step limit reached · 6 an edit or command was
refused (run with --yes) · 7 the reply was cut at the output limit · 130 cancelled.
Run `ctxagent COMMAND --help` for a command's options."""


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 step", "2 steps": every count in CLI output goes through this."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def build_parser() -> argparse.ArgumentParser:
    from ctxagent.agent.config import STRATEGIES
    from ctxagent.agent.providers.registry import start_model

    p = argparse.ArgumentParser(prog="ctxagent", description="A coding agent whose context window is engineered, measured and shown.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ctxagent {__version__}")
    p.add_argument("-p", "--prompt", help="run one task headless and exit (progress on stderr, the answer on stdout)")
    p.add_argument("--model", help=f"provider:model, e.g. anthropic:{start_model('anthropic')} or openai:{start_model('openai')} "
                   "(default: the one your API key's provider starts with; `ctxagent models` lists them)")
    p.add_argument("--base-url", help="base URL of the provider (OpenAI-compatible servers: Ollama, vLLM, ...)")
    p.add_argument("--window", type=int, help="override the model's context window (tokens)")
    p.add_argument("--max-steps", type=int, help="steps per user turn (default 50)")
    p.add_argument("--yes", action="store_true", help="allow edits and commands without asking (yolo mode)")
    p.add_argument("--output", choices=["text", "json"], default="text", help="headless output format (default text)")
    p.add_argument("--resume", metavar="ID", nargs="?", const="", help="continue a session (latest if no ID)")
    p.add_argument("--continue", dest="continue_", action="store_true", help="continue the latest session")
    p.add_argument("--strategy", choices=list(STRATEGIES),
                   help="context strategy (default ctxagent; anthropic-clear / anthropic-compact: the Anthropic "
                   "API's own server-side context management)")
    p.add_argument("--cwd", help="repository to work in (default: current directory)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for mod in SUBCOMMAND_MODULES:
        importlib.import_module(mod).add_parser(sub)
    _complete_help(p)
    return p


def _complete_help(parser: argparse.ArgumentParser) -> None:
    """Every subcommand gets a description (its one-line help when it has none) and the shared
    flags their standard help, so `--help` says something for everything."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, child in action.choices.items():
                if not child.description and helps.get(name):
                    child.description = str(helps[name])[:1].upper() + str(helps[name])[1:] + "."
                _complete_help(child)
        elif not action.help:
            for opt in action.option_strings:
                if opt in STANDARD_HELP:
                    action.help = STANDARD_HELP[opt]


def _unknown_flag(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The first option before the subcommand that the top-level parser does not know, with a
    suggestion. argparse itself would report its value as an "invalid choice for COMMAND"."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    known = parser._option_string_actions
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--" or tok in subparsers.choices:
            return None
        if tok.startswith("-") and tok != "-":
            name = tok.split("=", 1)[0]
            if not name.startswith("--") and len(name) > 2 and name[:2] in known:
                i += 1  # "-pTEXT": a short option with its value attached
                continue
            matches = [o for o in known if o == name] or [o for o in known if o.startswith(name) and name.startswith("--")]
            if not matches:
                close = difflib.get_close_matches(name, [o for o in known if o.startswith("--")], n=1)
                return f"unknown option {name}" + (f" (did you mean {close[0]}?)" if close else "")
            action = known[matches[0]]
            if "=" not in tok and action.nargs is None and action.option_strings and not isinstance(
                    action, (argparse._StoreTrueAction, argparse._StoreConstAction, argparse._VersionAction, argparse._HelpAction)):
                i += 1  # the option's value, whatever it looks like
            elif action.nargs == "?" and i + 1 < len(argv) and not argv[i + 1].startswith("-") and argv[i + 1] not in subparsers.choices:
                i += 1
        i += 1
    return None


def _missing_directory(args: argparse.Namespace) -> str | None:
    for dest, flag in DIRECTORY_OPTIONS.items():
        value = getattr(args, dest, None)
        if value and not Path(value).expanduser().is_dir():
            what = "is not a directory" if Path(value).expanduser().exists() else "does not exist"
            return f"{flag} {value}: {what}"
    return None


def main(argv: list[str] | None = None, tui_launcher: Callable[[argparse.Namespace], int] | None = None) -> int:
    """`tui_launcher` opens the app; the console script (tui/entry.py) passes it, keeping imports one-way."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = _unknown_flag(parser, argv)
    if problem:
        parser.error(problem)
    args = parser.parse_args(argv)
    args.tui_launcher = tui_launcher
    missing = _missing_directory(args)
    if missing:
        sys.stderr.write(f"ctxagent: {missing}\n")
        return 2
    if getattr(args, "func", None) is not None:
        try:
            return int(args.func(args) or 0)
        except BrokenPipeError:  # `ctxagent models | head`: the reader left; not an error worth a traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.prompt is not None:
        from ctxagent.agent.headless import run_headless

        return run_headless(args)
    if tui_launcher is not None:
        return tui_launcher(args)
    from ctxagent.agent.setup_help import print_setup_help

    return print_setup_help()


if __name__ == "__main__":
    sys.exit(main())
