"""SIGKILL `ctxagent mcp` in the middle of a stream of writes: the memory DB stays intact and every
write the server acknowledged is there. Speaks raw newline-delimited JSON-RPC over stdio (MCP's
stdio transport) so the kill can land with requests in flight."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from ctxagent.context.memory import MemoryStore

BIN = Path(sys.executable).with_name("ctxagent")


def _send(proc: subprocess.Popen[bytes], msg: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _run_once(project: Path, rng: random.Random, start: int) -> set[int]:
    proc = subprocess.Popen([str(BIN), "mcp", "--project", str(project)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    acked: set[int] = set()
    ready = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == 0:
                ready.set()
            elif isinstance(msg.get("id"), int) and "result" in msg and not msg["result"].get("isError"):
                acked.add(msg["id"])

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "crash-test", "version": "1"}}})
    assert ready.wait(30), "the server never answered initialize"
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(start, start + 400):
        _send(proc, {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "store_memory", "arguments": {"content": f"crash fact {i} about module m{i % 7}", "type": "note"}}})
    time.sleep(rng.uniform(0.05, 0.8))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    t.join(timeout=5)
    return acked


def test_sigkill_mcp_mid_write(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    rng = random.Random(7)
    acked: set[int] = set()
    for k in range(5):
        acked |= _run_once(project, rng, start=1 + k * 1000)
        with sqlite3.connect(project / ".ctxagent" / "memory.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert acked, "no write was acknowledged before the kills; the test proved nothing"
    assert len(acked) < 5 * 400, "every write finished before its kill; the kills landed too late"
    store = MemoryStore.open_project(project)
    contents = {r.content for r in store.list(type="note")}
    missing = [i for i in acked if f"crash fact {i} about module m{i % 7}" not in contents]
    assert missing == []
