"""`ctxagent` command line: the TUI by default, `-p` for headless, and subcommands.

Subcommands live in their own modules; each exposes `add_parser(subparsers)` and sets
`func(args) -> int` on its parser. Register a new one in SUBCOMMANDS (tui/cli/commands.py: name, module, one-line help):
`ctxagent --help` lists the commands from that table, and a command's module is imported only when
the command runs — the app's start-up does not pay for the benchmarks, the scripted server or the
model registry's help text.
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
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo
from ctxagent.tui.cli.commands import STANDARD_HELP, SUBCOMMANDS
from ctxagent.tui.lab.scripted import spec as _scripted_spec  # noqa: F401 - registers `scripted:` (tests, the demo)

# agent/config.py SANDBOX_MODES (tools/sandbox/policy.py MODES), written out so that building the
# parser imports neither; tests/agent/test_sandbox_config.py checks the three agree.
SANDBOX_MODES = ("workspace-write", "read-only", "off")
# agent/permissions.py PERMISSION_MODES, written out for the same reason (tests/agent/test_plan_mode.py checks).
PERMISSION_MODES = ("ask", "auto-edit", "plan", "yolo")
# Options naming a directory that must already exist (a typo must not create one).
DIRECTORY_OPTIONS = {"cwd": "--cwd", "rewind_cwd": "--cwd", "project": "--project"}

EPILOG = """headless exit codes (ctxagent -p): 0 done · 1 provider failed · 2 configuration or usage error ·
3 authentication failed · 4 the context cannot fit · 5 step limit reached · 6 an edit or command was
refused (run with --yes) · 7 the reply was cut at the output limit · 130 cancelled.
Run `ctxagent COMMAND --help` for a command's options."""


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: every option of the top level, and the full parser of the command
    `argv` names (the other commands are listed by name and help line only, their modules not
    imported). Without `argv`, the top level alone."""
    from ctxagent.context.strategies import STRATEGIES

    p = argparse.ArgumentParser(prog="ctxagent", description="A coding agent whose context window is engineered, measured and shown.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ctxagent {__version__}")
    p.add_argument("-p", "--prompt", nargs="?", const="", metavar="TASK",
                   help="run one task headless and exit (progress on stderr, the answer on stdout); piped "
                   "input is appended to TASK, or is the task (`git diff | ctxagent -p \"review this\"`)")
    model = p.add_argument("--model")
    p.add_argument("--base-url", help="base URL of the provider (OpenAI-compatible servers: Ollama, vLLM, ...)")
    p.add_argument("--window", type=int, help="override the model's context window (tokens)")
    p.add_argument("--max-steps", type=int, help="steps per user turn (default 50)")
    p.add_argument("--yes", action="store_true", help="allow edits and commands without asking (yolo mode)")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES,
                   help="ask (the default) · auto-edit: edits unasked · plan: read-only tools only, the model "
                   "proposes a plan (headless: printed, nothing changed) · yolo: as --yes")
    p.add_argument("--output", choices=["text", "json", "stream-json"], default="text",
                   help="headless output: text (default), json (one object at the end), stream-json (one JSON "
                   "object per line as the run happens; the README lists the types)")
    p.add_argument("--resume", metavar="ID", nargs="?", const="", help="continue a session (latest if no ID)")
    p.add_argument("--continue", dest="continue_", action="store_true", help="continue the latest session")
    p.add_argument("--strategy", choices=list(STRATEGIES),
                   help="context strategy (default ctxagent; anthropic-clear / anthropic-compact: the Anthropic "
                   "API's own server-side context management)")
    p.add_argument("--sandbox", choices=SANDBOX_MODES,
                   help="how commands run: workspace-write (the default: only the repository writable, no network), "
                   "read-only, or off (unsandboxed)")
    p.add_argument("--sandbox-network", action="store_true", help="let sandboxed commands use the network")
    p.add_argument("--cwd", help="repository to work in (default: current directory)")
    named = _command_in(p, argv or [])
    model.help = _model_help(argv or [] if named is None else [])
    wanted = SUBCOMMANDS[named].module if named else None
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in SUBCOMMANDS.items():
        if command.module != wanted:
            sub.add_parser(name, help=command.help, add_help=False)  # listed only: this argv does not run it
        elif name not in sub.choices:
            importlib.import_module(command.module).add_parser(sub)
    _complete_help(p)
    return p


def _model_help(argv: list[str]) -> str:
    """--model's help names each provider's start model; the provider specs are imported for it only
    when the top-level help is printed (a start of the app need not load them)."""
    if "-h" not in argv and "--help" not in argv:
        return "provider:model (`ctxagent --help` gives examples; `ctxagent models` lists them)"
    from ctxagent.agent import start_examples

    return (f"provider:model, e.g. {start_examples()} "
            "(default: the one your API key's provider starts with; `ctxagent models` lists them)")


def _complete_help(parser: argparse.ArgumentParser, nested: bool = False) -> None:
    """Every subcommand gets a description (its one-line help when it has none), the shared flags
    their standard help, and a value's placeholder is named after its flag (`--cwd CWD`, never the
    internal dest `REWIND_CWD`), so `--help` says something for everything, in the user's words.
    A subcommand's own `--cwd`, when not given, leaves the top-level one alone (`ctxagent --cwd X
    doctor` checks X, not the folder it was started in)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, child in action.choices.items():
                if not child.description and helps.get(name):
                    child.description = str(helps[name])[:1].upper() + str(helps[name])[1:] + "."
                _complete_help(child, nested=True)
        else:
            if nested and action.dest == "cwd":
                action.default = argparse.SUPPRESS
            if not action.help:
                for opt in action.option_strings:
                    if opt in STANDARD_HELP:
                        action.help = STANDARD_HELP[opt]
            longs = [o for o in action.option_strings if o.startswith("--")]
            if longs and action.metavar is None and action.nargs != 0 and action.choices is None:
                action.metavar = longs[0][2:].upper().replace("-", "_")  # the flag's name, not its dest (REWIND_CWD)


def _scan(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str | None, str | None]:
    """Walk the top-level options of `argv` (an option's value is never taken for a command) up to the
    command: (the first option the top level does not know, with a suggestion — argparse itself would
    report its value as an "invalid choice for COMMAND"; the command named, or None)."""
    known = parser._option_string_actions
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":  # what follows is positional: a command, if it names one
            rest = argv[i + 1] if i + 1 < len(argv) else None
            return None, rest if rest in SUBCOMMANDS else None
        if tok in SUBCOMMANDS:
            return None, tok
        if tok.startswith("-") and tok != "-":
            name = tok.split("=", 1)[0]
            if not name.startswith("--") and len(name) > 2 and name[:2] in known:
                i += 1  # "-pTEXT": a short option with its value attached
                continue
            matches = [o for o in known if o == name] or [o for o in known if o.startswith(name) and name.startswith("--")]
            if not matches:
                close = difflib.get_close_matches(name, [o for o in known if o.startswith("--")], n=1)
                return f"unknown option {name}" + (f" (did you mean {close[0]}?)" if close else ""), None
            action = known[matches[0]]
            if "=" not in tok and action.nargs is None and action.option_strings and not isinstance(
                    action, (argparse._StoreTrueAction, argparse._StoreConstAction, argparse._VersionAction, argparse._HelpAction)):
                i += 1  # the option's value, whatever it looks like
            elif action.nargs == "?" and i + 1 < len(argv) and not argv[i + 1].startswith("-") and argv[i + 1] not in SUBCOMMANDS:
                i += 1
        i += 1
    return None, None


def mode_clash(args: argparse.Namespace) -> str | None:
    """Why `--yes` (yolo) and a `--permission-mode` that is not yolo cannot be given together, or None.
    Neither wins silently: `--permission-mode plan --yes` must never run edits and commands unasked (a
    sub-agent's included), nor `--permission-mode ask --yes` skip the questions."""
    mode = getattr(args, "permission_mode", None)
    if not getattr(args, "yes", False) or mode in (None, "yolo"):
        return None
    return (f"--yes allows edits and commands without asking (yolo mode), and --permission-mode {mode} says "
            f"otherwise: give one of them (--permission-mode {mode} alone, or --yes alone)")


def _command_in(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    return _scan(parser, argv)[1]


def _missing_directory(args: argparse.Namespace) -> str | None:
    for dest, flag in DIRECTORY_OPTIONS.items():
        value = getattr(args, dest, None)
        if value and not Path(value).expanduser().is_dir():
            what = "is not a directory" if Path(value).expanduser().exists() else "does not exist"
            return f"{flag} {value}: {what}"
    return None


def main(argv: list[str] | None = None, tui_launcher: Callable[[argparse.Namespace], int] | None = None) -> int:
    """`tui_launcher` opens the app; the console script (tui/entry.py) passes it, keeping imports one-way."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    problem = _scan(parser, argv)[0]
    if problem:
        parser.error(problem)
    args = parser.parse_args(argv)
    clash = mode_clash(args)
    if clash:
        parser.error(clash)
    args.tui_launcher = tui_launcher
    try:
        return _dispatch(args, tui_launcher)
    except CtxagentError as exc:  # e.g. a repository refused before any command could say so (find_repo_root)
        echo(f"ctxagent: {exc}", err=True)
        return 2


def _dispatch(args: argparse.Namespace, tui_launcher: Callable[[argparse.Namespace], int] | None) -> int:
    missing = _missing_directory(args)
    if missing:
        echo(f"ctxagent: {missing}", err=True)
        return 2
    if getattr(args, "func", None) is not None:
        try:
            return int(args.func(args) or 0)
        except BrokenPipeError:  # `ctxagent models | head`: the reader left; not an error worth a traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.prompt is not None:
        from ctxagent.tui.cli.headless import run_headless

        return run_headless(args)
    if tui_launcher is not None:
        return tui_launcher(args)
    from ctxagent.agent import setup_text

    echo(setup_text(), err=False, end="")
    return 2



if __name__ == "__main__":
    sys.exit(main())
