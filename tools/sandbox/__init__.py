"""Commands run in a sandbox: bubblewrap (namespaces, mounts) plus a small seccomp filter, and an
allowlisted environment whatever the mode.

What this follows and where it departs, against the two careful peers:

- Codex's Linux sandbox (codex-rs/linux-sandbox: bwrap.rs, seccomp.rs): the same mount plan
  (`--ro-bind / /`, `--dev /dev`, the writable roots bound back, protected subpaths re-bound
  read-only after them so they win, a missing protected path mounted over so it cannot be
  created), `--new-session`, `--die-with-parent`, `--unshare-pid`, a fresh `/proc`. Like Codex,
  `.git/` stays read-only under workspace-write, so a command can neither plant hooks or config
  nor rewrite history; `git add`/`git commit` inside a sandboxed command fail (the user commits,
  or sets sandbox = "off"). Claude Code keeps `.git` writable except hooks and config; we follow
  the stricter one, and go further (persistence.py): every `.git` below the root, not only the
  root's, what the repositories' git config names (hooks folders, included files, programs in the
  tree), `.mcp.json` and `.ctxagent/` are read-only or cannot be created, and a `.git` a command
  makes in a new folder is moved aside after it. A file a command writes is data until the user
  runs it, so nothing git, ctxagent or a shell prompt would run by itself may be written.
- Departures from Codex: the network is taken away by the network namespace alone
  (`--unshare-all`), not also by refusing socket(AF_INET*)/connect/bind in seccomp: inside the
  namespace those reach only the sandbox's own loopback, so a project's tests that serve on
  127.0.0.1 still run, and the host's loopback ports stay unreachable. The seccomp filter keeps
  what the namespaces leave open (Unix and VM sockets, io_uring, the kernel keyring, other
  syscall ABIs; see seccomp.py). We also unshare the user namespace explicitly and drop all capabilities (so
  running as root gets no capabilities inside), forbid nested user namespaces
  (`--disable-userns`), start bwrap with the allowlisted environment (bwrap's own process is PID 1
  inside and would otherwise show ctxagent's environment in /proc/1/environ), hide /run (docker and
  D-Bus sockets: a unix socket on a read-only mount still connects, and D-Bus's `systemd-run --user`
  is a way out), give a private /tmp, and show credential stores, other agents' transcripts and
  shell histories under $HOME empty.
- Claude Code's sandboxed bash (sandbox-runtime: bubblewrap, writes only in the project and the
  session's temp dir, no network by default): the same boundary; it filters network by domain
  through a proxy, we offer all or nothing (`network`). Like its seccomp filter, ours refuses
  `socket(AF_UNIX)` and allows `socketpair`: a socket file under $HOME (Colima's docker socket)
  connects through a read-only mount, and hiding /run and /tmp does not reach it. The user's own
  `sandbox_unix_sockets = true` lifts that, for every socket at once.
- When bwrap cannot run (no unprivileged user namespaces, an AppArmor restriction, not Linux),
  commands are refused with a message naming the setting (`sandbox = "off"` in the user's own
  config, or `--sandbox off`); they never fall back to running unsandboxed.

The shell tool and run_tests (so `!command` and the configured test command) start commands through
tools/shell.py's runner; a program the user's config names for an event (a hook) goes through
`run_hook` (hooks.py): JSON on stdin, a deadline, the same launch, and it never raises.
"""

from __future__ import annotations

from ctxagent.tools.sandbox.bwrap import Probe, find_bwrap, probe
from ctxagent.tools.sandbox.environment import command_env, secret_shaped
from ctxagent.tools.sandbox.hooks import HookOutcome, run_hook
from ctxagent.tools.sandbox.launch import Launch, prepare_launch
from ctxagent.tools.sandbox.policy import DEFAULT_POLICY, MODES, SandboxPolicy, policy_of
from ctxagent.tools.sandbox.status import SandboxStatus, sandbox_checks, sandbox_status

__all__ = ["DEFAULT_POLICY", "MODES", "HookOutcome", "Launch", "Probe", "SandboxPolicy", "SandboxStatus", "command_env",
           "find_bwrap", "policy_of", "prepare_launch", "probe", "run_hook", "sandbox_checks", "sandbox_status",
           "secret_shaped"]
