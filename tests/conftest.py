"""Test-wide guards: no network but loopback, and user-level state in a temporary CTXAGENT_HOME."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host.startswith("127.") or host in ("localhost", "::1", "0:0:0:0:0:0:0:1")
    return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise OSError(f"network blocked in tests: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_loopback(address):
        raise OSError(f"network blocked in tests: {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("ctxhome")
    monkeypatch.setenv("CTXAGENT_HOME", str(home))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "CTXAGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home
