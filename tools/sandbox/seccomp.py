"""The seccomp filter bubblewrap loads before it runs a sandboxed command.

The network namespace (`--unshare-all`) is what takes the network away; this filter only closes
the ways around namespaces that the kernel leaves open:

- `socket`/`socketpair` with AF_VSOCK: VM sockets are not network-namespaced, so inside a VM
  (Firecracker, WSL2, a cloud micro-VM) they reach the host whatever the sandbox's network says;
- `socket` with AF_UNIX: a socket file is reachable through any mount that shows it, read-only or
  not, and the network namespace does not cover the file system. Under $HOME live Colima's,
  Rancher Desktop's and Podman's docker sockets (root on the host) and the 1Password SSH agent.
  `socketpair(AF_UNIX)` stays allowed: it connects a process to its own children and nothing else
  (asyncio, pipes between a test runner and its workers). As Claude Code's sandbox-runtime does;
  `unix_sockets=True` (the user's own `sandbox_unix_sockets = true`) leaves AF_UNIX open: the
  filter cannot see which path a socket would connect to, so it is every visible socket or none;
- `io_uring_setup`/`_enter`/`_register`: io_uring creates sockets and opens files without the
  syscalls a filter sees, and is a large kernel attack surface;
- `keyctl`, `add_key`, `request_key`: the kernel keyring is not namespaced (it can hold Kerberos
  tickets and other credentials); Docker's default profile refuses these too;
- on x86-64, the x32 ABI and 32-bit (`int 0x80`) calls, which would reach the same syscalls
  under other numbers (32-bit binaries therefore do not run in the sandbox).

Each refused call fails with EPERM; everything else is allowed (bwrap sets up its mounts before it
loads the filter, so its own use of sockets is not affected). AF_INET/AF_INET6 sockets are
allowed on purpose: inside the network namespace they reach only the sandbox's own loopback, so a
project's tests that start a server on 127.0.0.1 still work, while the host's loopback ports stay
out of reach. The filter is classic BPF assembled here (no libseccomp), for x86-64 and aarch64;
on other architectures no filter is installed and `filter_bytes()` returns None (doctor says so).
"""

from __future__ import annotations

import platform
import struct

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # args[0]'s low 32 bits (both architectures are little-endian)
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
AF_UNIX = 1
AF_VSOCK = 40
_X32_BIT = 0x40000000

# audit arch, socket, socketpair, and the syscalls refused outright
_TABLES: dict[str, tuple[int, int, int, tuple[int, ...]]] = {
    # io_uring_setup/enter/register 425-427; add_key 248, request_key 249, keyctl 250
    "x86_64": (0xC000003E, 41, 53, (425, 426, 427, 248, 249, 250)),
    # the generic table: io_uring 425-427; add_key 217, request_key 218, keyctl 219
    "aarch64": (0xC00000B7, 198, 199, (425, 426, 427, 217, 218, 219)),
}
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def machine() -> str | None:
    """The architecture name the filter is built for, or None where there is no table."""
    return _MACHINES.get(platform.machine().lower())


def _program(arch: str, unix_sockets: bool = False) -> list[tuple[int, int, int, int]]:
    audit, nr_socket, nr_socketpair, refused = _TABLES[arch]
    # Jumps are relative to the next instruction; the labels (DENY, CHECK_*) are resolved at the end.
    prog: list[tuple[int, int | str, int | str, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "DENY", audit),  # another ABI (i386 on x86-64): refused whole
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch == "x86_64":
        prog.append((_JGE_K, "DENY", 0, _X32_BIT))
    prog += [(_JEQ_K, "DENY", 0, nr) for nr in refused]
    prog += [(_JEQ_K, "CHECK_SOCKET", 0, nr_socket), (_JEQ_K, "CHECK_PAIR", 0, nr_socketpair)]
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    labels = {"CHECK_SOCKET": len(prog)}
    prog += [(_LD_W_ABS, 0, 0, _ARG0_LOW), (_JEQ_K, "DENY", 0, AF_VSOCK)]
    if not unix_sockets:
        prog.append((_JEQ_K, "DENY", 0, AF_UNIX))
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    labels["CHECK_PAIR"] = len(prog)
    prog += [(_LD_W_ABS, 0, 0, _ARG0_LOW), (_JEQ_K, "DENY", 0, AF_VSOCK), (_RET_K, 0, 0, _RET_ALLOW)]
    labels["DENY"] = len(prog)
    prog.append((_RET_K, 0, 0, _RET_EPERM))
    out: list[tuple[int, int, int, int]] = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt_n = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf_n = labels[jf] - i - 1 if isinstance(jf, str) else jf
        out.append((code, jt_n, jf_n, k))
    return out


def filter_bytes(arch: str | None = None, *, unix_sockets: bool = False) -> bytes | None:
    """The filter as the `struct sock_filter` array `bwrap --seccomp FD` reads, or None (no table).
    `unix_sockets`: leave `socket(AF_UNIX, ...)` allowed."""
    arch = arch or machine()
    if arch not in _TABLES:
        return None
    return b"".join(struct.pack("<HBBI", *insn) for insn in _program(arch, unix_sockets))
