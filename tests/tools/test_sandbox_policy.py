"""The sandbox policy as configuration, the environment allowlist and the seccomp program, without
starting a process (the properties themselves are proved from inside the sandbox in test_sandbox.py)."""

from __future__ import annotations

import struct
import sys
from types import SimpleNamespace

import pytest
from ctxagent.context.errors import ConfigError, SandboxUnavailableError
from ctxagent.tools.sandbox import (
    DEFAULT_POLICY,
    SandboxPolicy,
    command_env,
    find_bwrap,
    policy_of,
    secret_shaped,
)
from ctxagent.tools.sandbox.seccomp import filter_bytes


def test_the_default_is_workspace_write_without_network() -> None:
    assert policy_of({}) is DEFAULT_POLICY
    assert DEFAULT_POLICY.mode == "workspace-write" and not DEFAULT_POLICY.network and DEFAULT_POLICY.sandboxed
    assert policy_of({"sandbox": "read-only"}) == SandboxPolicy(mode="read-only")
    with pytest.raises(ConfigError, match="SandboxPolicy"):
        policy_of({"sandbox": 3})


def test_from_config_reads_the_config_keys() -> None:
    cfg = SimpleNamespace(sandbox="off", sandbox_network=True, sandbox_env=["DATABASE_HOST"],
                          sandbox_writable=["~/.cache"], sandbox_hidden=None)
    policy = SandboxPolicy.from_config(cfg)
    assert policy == SandboxPolicy(mode="off", network=True, env=("DATABASE_HOST",), writable=("~/.cache",))
    assert SandboxPolicy.from_config({}) == DEFAULT_POLICY
    assert SandboxPolicy.from_config({"sandbox_hidden": []}).hidden == ()
    with pytest.raises(ConfigError, match="'workspace-write', 'read-only', 'off'"):
        SandboxPolicy.from_config({"sandbox": "none"})
    with pytest.raises(ConfigError, match="sandbox_env must be a list"):
        SandboxPolicy(env="PATH")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        DEFAULT_POLICY.mode = "off"  # type: ignore[misc]  # frozen: a tool cannot loosen it


def test_the_environment_is_an_allowlist() -> None:
    source = {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "zh_CN.UTF-8", "VIRTUAL_ENV": "/v", "TERM": "xterm",
              "BASH_ENV": "/tmp/evil.sh", "LD_PRELOAD": "/tmp/x.so", "GIT_DIR": "/elsewhere", "RANDOM_THING": "1",
              "ANTHROPIC_API_KEY": "sk-ant-api03-aaaaaaaaaaaaaaaaaaaa", "HTTPS_PROXY": "http://user:pw@proxy:3128"}
    env = command_env(source, extra={"COLUMNS": "80"})
    assert env["PATH"] == "/usr/bin" and env["LC_ALL"] == "zh_CN.UTF-8" and env["VIRTUAL_ENV"] == "/v"
    assert env["TERM"] == "dumb" and env["PAGER"] == "cat" and env["COLUMNS"] == "80"
    for name in ("BASH_ENV", "LD_PRELOAD", "GIT_DIR", "RANDOM_THING", "ANTHROPIC_API_KEY", "HTTPS_PROXY"):
        assert name not in env
    assert command_env(source, ["RANDOM_THING", "not a name"])["RANDOM_THING"] == "1"


@pytest.mark.parametrize(("name", "value"), [
    ("X", "glpat-abcdefghijklmnopqrst"), ("X", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k+/="),
    ("X", "Basic dXNlcjpwYXNzd29yZA=="), ("X", "https://abc123@o1.ingest.sentry.io/1"), ("MYSQL_PWD", "x"),
    ("NPM_CONFIG__AUTH", "abc"), ("DEPLOY_TOKEN", "v"), ("X", "sk-ant-api03-abcdefghijklmnopqrstuv"),
    ("GH", "ghp_" + "a1" * 18), ("X", "Bearer abcdefghijklmnopqrstuvwx"),
])
def test_secret_shapes_are_dropped(name: str, value: str) -> None:
    assert secret_shaped(name, value)


@pytest.mark.parametrize(("name", "value"), [
    ("PATH", "/usr/local/basic/bin:/usr/bin"), ("LANG", "zh_CN.UTF-8"), ("GOPROXY", "https://proxy.golang.org,direct"),
    ("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"), ("PYTHONPATH", "/src/项目"),
])
def test_ordinary_values_pass(name: str, value: str) -> None:
    assert not secret_shaped(name, value)


@pytest.mark.parametrize("unix_sockets", [False, True])
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_seccomp_program_is_well_formed(arch: str, unix_sockets: bool) -> None:
    data = filter_bytes(arch, unix_sockets=unix_sockets)
    assert data is not None and len(data) % 8 == 0
    insns = [struct.unpack("<HBBI", data[i:i + 8]) for i in range(0, len(data), 8)]
    assert insns[0] == (0x20, 0, 0, 4)  # it starts by checking the architecture
    assert insns[-1] == (0x06, 0, 0, 0x00050001)  # and ends with the refusal (EPERM) every jump can reach
    for i, (code, jt, jf, _) in enumerate(insns):
        if code in (0x15, 0x35):
            assert i + 1 + max(jt, jf) < len(insns)
    assert filter_bytes("riscv64") is None


def _verdict(insns: list[tuple[int, int, int, int]], data: dict[int, int]) -> str:
    """Run the classic-BPF program on one syscall (offset -> 32-bit word of struct seccomp_data)."""
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = data.get(k, 0)
        elif code in (0x15, 0x35):
            pc += jt if (acc == k if code == 0x15 else acc >= k) else jf
        elif code == 0x06:
            return {0x7FFF0000: "allow", 0x00050001: "EPERM"}[k]
        pc += 1


# (syscall numbers of socket and socketpair, audit arch) per architecture
SOCKET_CALLS = {"x86_64": (41, 53, 0xC000003E), "aarch64": (198, 199, 0xC00000B7)}


@pytest.mark.parametrize("arch", sorted(SOCKET_CALLS))
def test_the_seccomp_program_refuses_unix_sockets_but_not_socketpair(arch: str) -> None:
    nr_socket, nr_pair, audit = SOCKET_CALLS[arch]
    for unix_sockets in (False, True):
        data = filter_bytes(arch, unix_sockets=unix_sockets)
        assert data is not None
        insns = [struct.unpack("<HBBI", data[i:i + 8]) for i in range(0, len(data), 8)]

        def run(nr: int, family: int) -> str:
            return _verdict(insns, {0: nr, 4: audit, 16: family})  # noqa: B023 - used at once
        assert run(nr_socket, 1) == ("allow" if unix_sockets else "EPERM")  # socket(AF_UNIX): only the user's opt-in
        assert run(nr_pair, 1) == "allow"  # socketpair(AF_UNIX): a process and its own children
        assert run(nr_socket, 2) == run(nr_socket, 10) == "allow"  # AF_INET/6: the namespace's own loopback
        assert run(nr_socket, 40) == run(nr_pair, 40) == "EPERM"  # AF_VSOCK
        assert run(0, 0) == "allow"  # read
        assert _verdict(insns, {0: nr_socket, 4: 0x40000003, 16: 2}) == "EPERM"  # another ABI (i386)


def test_off_linux_commands_are_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(SandboxUnavailableError, match="needs Linux") as info:
        find_bwrap(DEFAULT_POLICY)
    assert 'sandbox = "off"' in str(info.value) and "--sandbox off" in str(info.value)
