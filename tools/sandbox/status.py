"""What doctor says about the sandbox: (status, title, detail) checks, status "ok" or "warn"."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from ctxagent.tools.sandbox.bwrap import Probe, probes, refusal, way_out
from ctxagent.tools.sandbox.environment import command_env, dropped
from ctxagent.tools.sandbox.policy import SandboxPolicy
from ctxagent.tools.sandbox.seccomp import machine

Check = tuple[str, str, str]


@dataclass(frozen=True)
class SandboxStatus:
    policy: SandboxPolicy
    probes: tuple[Probe, ...]  # every bwrap tried, in order
    chosen: Probe | None  # the first that ran its probe
    seccomp_arch: str | None  # None: no filter for this machine

    @property
    def available(self) -> bool:
        return self.chosen is not None


def sandbox_status(policy: SandboxPolicy) -> SandboxStatus:
    tried = tuple(probes(policy)) if sys.platform.startswith("linux") else ()
    chosen = next((p for p in tried if p.ok), None)
    return SandboxStatus(policy, tried, chosen, machine())


def sandbox_checks(policy: SandboxPolicy, environ: Mapping[str, str] | None = None, origin: str = "") -> list[Check]:
    """Doctor's checks: whether commands run sandboxed on this machine (the mode, and `origin`: where
    it was set, e.g. "the default"), the bwrap that runs (its version and probe) or why none can, the
    seccomp filter, and the environment commands get (names only, never values)."""
    environ = os.environ if environ is None else environ
    st = sandbox_status(policy)
    set_by = f" (from {origin})" if origin else ""
    out: list[Check] = []
    if not policy.sandboxed:
        out.append(("warn", "sandbox", f"off{set_by}: commands run without the sandbox, with full access to your files "
                    "and network (the environment is still allowlisted)"))
    else:
        if st.chosen is not None:
            out.append(("ok", "sandbox", f"commands run sandboxed: {policy.describe()}{set_by}"))
        else:
            out.append(("warn", "sandbox", f"commands are refused: {policy.mode}{set_by} needs bubblewrap, which cannot "
                        f"run here (see bubblewrap). {way_out()}"))
        if st.chosen is not None:
            p = st.chosen
            out.append(("ok", "bubblewrap", f"{p.path} (from {p.source}, version {p.version or 'unknown'}): {p.detail}"))
        else:
            out.append(("warn", "bubblewrap", refusal(policy, list(st.probes))))
        if st.seccomp_arch is None:
            out.append(("warn", "seccomp filter", "none for this architecture: VM sockets, io_uring and the kernel "
                        "keyring stay reachable inside the sandbox"))
        else:
            unix = "" if policy.unix_sockets else "AF_UNIX sockets (socketpair stays), "
            out.append(("ok", "seccomp filter", f"{st.seccomp_arch}: {unix}AF_VSOCK sockets, io_uring, the kernel keyring "
                        "and other syscall ABIs are refused"))
    env = command_env(environ, policy.env)
    gone = dropped(environ, policy.env)
    detail = f"{len(env)} variables pass the allowlist, {len(environ) - len(set(env) & set(environ))} stay out"
    if gone:
        detail += f"; dropped as secret-shaped although allowed: {', '.join(gone)}"
    out.append(("ok", "command environment", detail))
    return out
