"""Which environment variables a config may give a program it starts: never one that runs code the
program's command line does not show.

A config — the user's own or a trusted repository's (`.mcp.json`, `.ctxagent/config.toml`) — names
programs: an MCP server's `command` and `args`, a hook, the test command. What runs is what that
command line says. A variable that makes the dynamic loader, a shell, an interpreter or git run
something else (a library, a start-up file, a module, a program) would turn a harmless-looking
`npx some-server` into code the user never saw, and one that reaches a *launcher* (bwrap, or bash
when the sandbox is off) runs it before and outside any sandbox. Such names are refused from every
place a config hands variables to a program: an MCP server's `env` and `sandbox_env` (which of the
user's own variables pass). Hooks and the test command have no variables of their own: their
command line is all of them. To set one of these on purpose, write it into the command line, where it
is seen: `command = "env"`, `args = ["PYTHONPATH=src", "python", "-m", "server"]`.

The families (`REFUSED`; a name is compared in upper case, so npm's `npm_config_*` is caught):

- the dynamic loader and the C library: every `LD_*` (LD_PRELOAD and LD_AUDIT load a library into
  the program, LD_LIBRARY_PATH chooses where its libraries come from) and `DYLD_*` (macOS), and the
  rest of glibc's own list of variables unsafe for privileged programs (sysdeps/generic/unsecvars.h:
  GCONV_PATH loads iconv modules, GLIBC_TUNABLES, HOSTALIASES, LOCPATH, NLSPATH, MALLOC_TRACE, …;
  TMPDIR, on that list for setuid programs' temp files, runs nothing and is allowed), and OpenSSL's
  OPENSSL_CONF / OPENSSL_ENGINES / OPENSSL_MODULES (a config file that loads engine libraries);
- shells: BASH_ENV and ENV (sourced at start), every `BASH_*` (BASH_FUNC_name%% defines a function
  that replaces a command, `exec` included), SHELLOPTS and BASHOPTS (xtrace plus PS4 runs a command
  substitution), PS0 / PS1 / PS2 / PS4 and PROMPT_COMMAND, ZDOTDIR (the .zshenv every zsh sources);
- interpreters: Python's PYTHONSTARTUP, PYTHONPATH (a `sitecustomize` there runs at every start),
  PYTHONHOME, PYTHONUSERBASE (its .pth files run), PYTHONPLATLIBDIR, PYTHONINSPECT (a prompt that
  reads stdin — an MCP server's — as code), PYTHONBREAKPOINT, PYTHONWARNINGS (older Pythons import a
  category's module), PYTHONPYCACHEPREFIX (bytecode read from there); NODE_OPTIONS (--require,
  --import); every `NPM_CONFIG_*` (script-shell, node-options, userconfig); PERL5OPT, PERL5LIB,
  PERLLIB, PERL5DB; RUBYOPT, RUBYLIB, GEM_HOME, GEM_PATH (RubyGems loads plugins from the gems
  there); JAVA_TOOL_OPTIONS, _JAVA_OPTIONS, JDK_JAVA_OPTIONS (-javaagent); LUA_INIT*; PHPRC and
  PHP_INI_SCAN_DIR (auto_prepend_file); R_PROFILE, R_PROFILE_USER, R_ENVIRON, R_ENVIRON_USER;
  GOFLAGS (-toolexec) and GOENV;
- git: every `GIT_*` but the author's and committer's names, e-mails and dates (GIT_CONFIG_COUNT /
  _KEY_n / _VALUE_n and GIT_CONFIG_PARAMETERS set core.fsmonitor or core.sshCommand, GIT_DIR and
  GIT_WORK_TREE point git at another repository's config, GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF,
  GIT_ASKPASS, GIT_EDITOR, GIT_PAGER and GIT_EXEC_PATH name programs);
- start-up files and programs other programs run: HOME and XDG_CONFIG_HOME (where git, npm, pip and
  Python's user site read their configuration, and those run programs: core.fsmonitor, .pth files),
  EDITOR, VISUAL, PAGER, MANPAGER, LESSOPEN, LESSCLOSE, BROWSER, SSH_ASKPASS, SUDO_ASKPASS, SHELL.

Allowed on purpose: PATH (it says where the command line's own program is found, which is part of
reading that command line; the launcher itself is found with ctxagent's own PATH, never this one),
NODE_PATH and CLASSPATH (searched after the program's own modules; a runtime's built-ins cannot be
replaced there and nothing runs at start), TMPDIR, and package indexes and registries
(PIP_INDEX_URL, UV_INDEX_URL, …: they choose where a named package comes from, not code besides it).

A name must also be a name — letters, digits and `_`, not starting with a digit: `BASH_FUNC_exec%%`
is not one — and neither a name nor a value may hold a NUL byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ctxagent.context.errors import ConfigError

_LOADER = "the dynamic loader or the C library of every program started with it reads it: it can load a library"
_SHELL = "a shell reads it at start and runs what it names"
_PYTHON = "Python runs or imports code from it that the command line does not name"
_INTERPRETER = "an interpreter runs or loads code from it that the command line does not name"
_GIT = "git reads it: it can set any git config, core.fsmonitor included, or name a program git runs"
_DOTFILES = "it chooses the start-up files programs read, and those run programs: git's core.fsmonitor, .pth files"
_PROGRAM = "it names a program other programs run"

# (names, prefixes, why): a name is refused when it is one of `names` or starts with one of `prefixes`.
REFUSED: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (("GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
      "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR", "OPENSSL_CONF", "OPENSSL_ENGINES",
      "OPENSSL_MODULES"), ("LD_", "DYLD_"), _LOADER),
    (("ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "ZDOTDIR"), ("BASH_",), _SHELL),
    (("PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPLATLIBDIR", "PYTHONINSPECT",
      "PYTHONBREAKPOINT", "PYTHONWARNINGS", "PYTHONPYCACHEPREFIX"), (), _PYTHON),
    (("NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH",
      "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PHPRC", "PHP_INI_SCAN_DIR", "R_PROFILE",
      "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "GOFLAGS", "GOENV"), ("NPM_CONFIG_", "LUA_INIT"), _INTERPRETER),
    ((), ("GIT_",), _GIT),
    (("HOME", "XDG_CONFIG_HOME"), (), _DOTFILES),
    (("EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS",
      "SHELL"), (), _PROGRAM),
)
# git's identity: the names a commit is made with run nothing
GIT_IDENTITY = frozenset(f"GIT_{who}_{what}" for who in ("AUTHOR", "COMMITTER") for what in ("NAME", "EMAIL", "DATE"))
VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
WAY_OUT = ('to set it on purpose, write it into the command line, where it is seen: command = "env", '
           'args = ["NAME=value", "the-program", ...]')


def why_refused(name: str) -> str | None:
    """Why no config may give a program the variable `name`; None when it may."""
    if not VALID_NAME.fullmatch(name):
        return "it is not a variable name: letters, digits and _, not starting with a digit"
    upper = name.upper()
    if upper in GIT_IDENTITY:
        return None
    for names, prefixes, why in REFUSED:
        if upper in names or upper.startswith(prefixes):
            return why
    return None


def refusals(names: Iterable[str]) -> list[str]:
    """One line per refused name of `names`: `NAME (why)`."""
    return [f"{name!r} ({why})" for name in names if (why := why_refused(name)) is not None]


def program_env_problem(env: Mapping[str, str]) -> str | None:
    """What is wrong with the variables a config gives a program (None: nothing), in a sentence
    that names the variables and the way to set one on purpose."""
    lines = refusals(env)
    lines += [f"{name!r} (its value holds a NUL byte)" for name, value in env.items()
              if "\x00" in value and why_refused(name) is None]
    if not lines:
        return None
    return (f"refused: {'; '.join(lines)}. A config may not give a program a variable that runs code its "
            f"command line does not show; {WAY_OUT}")


def check_program_env(env: Mapping[str, str], owner: str) -> None:
    """ConfigError naming `owner` (e.g. "mcp_servers.docs.env") when `env` holds a refused variable."""
    problem = program_env_problem(env)
    if problem is not None:
        raise ConfigError(f"{owner}: {problem}")


def passthrough_problem(names: Iterable[str]) -> str | None:
    """What is wrong with a list of the user's variables to pass to commands (`sandbox_env`)."""
    lines = refusals(names)
    if not lines:
        return None
    return (f"refused: {'; '.join(lines)}. No config passes a variable that runs code the command line does "
            f"not show; {WAY_OUT}")
