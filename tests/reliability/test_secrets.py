"""Keys never reach logs, sessions, memory, spill files or user state — scanned byte by byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ctxagent.tui.lab.scripted.server import ScriptedServer

BIN = Path(sys.executable).with_name("ctxagent")
ANTHROPIC_KEY = "sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8cB7aZ6yX5wV4uT3sR2qP1oN0mLkJiHgFeDcBa-AAAAAAAA"
OPENAI_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34Yz56Ab78Cd90Ef12"
OTHER_SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",  # AWS access key id shape
    "ghp_1234567890abcdefghijklmnopqrstuvwxyz12",  # GitHub token shape
    "sk-ant-api03-" + "Q" * 80,  # another Anthropic-shaped key
]
# issue 30's shapes, as they stand in a file (text, what must not be found)
NEW_SHAPES = [
    ("vault login hvs.CAESIJ2bq8XmX0eXxQ9Zr3Kt7Ld1Wq5", "CAESIJ2bq8XmX0eXxQ9Zr3Kt7Ld1Wq5"),
    ("notify https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Xy7Zq3Wv9Tr5Ps1Nm4Lk8Jh2", "Xy7Zq3Wv9Tr5Ps1Nm4Lk8Jh2"),
    ("mysqldump --password s3cretPw9x appdb", "s3cretPw9x"),
    ("ci-bot,AKIA5J3XQW7PLM2RT8ZB,9dQm2Lx7Vb4Nc8Zr1Tw6Yp3Ks5Hf0Jg+Ue2Ai7Ob", "9dQm2Lx7Vb4Nc8Zr1Tw6Yp3Ks5Hf0Jg+Ue2Ai7Ob"),
    ("split sk-ant-api03-Zq9x\u200bY8wV7uT6sR5qP4oN3mL2kJ1iH0gF", "Y8wV7uT6sR5qP4oN3mL2kJ1iH0gF"),
]


def _scan(root: Path, needles: list[str]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [f"{path}: {n[:12]}…" for n in needles if n.encode() in data]
    return hits


def test_no_key_reaches_any_state_file(tmp_path: Path, _isolated_home: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    # a file that echoes the configured keys, plus key-shaped strings, large enough to be spilled
    (repo / "creds.txt").write_text(
        f"anthropic={ANTHROPIC_KEY}\nopenai={OPENAI_KEY}\n" + "\n".join(OTHER_SECRETS) + "\n"
        + "\n".join(text for text, _ in NEW_SHAPES) + "\n" + "filler line\n" * 5000, encoding="utf-8"
    )
    script = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "env | grep -i api_key; cat creds.txt"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "creds.txt", "end_line": 10}}]},
        {"tool_calls": [{"name": "store_memory", "arguments": {"content": f"remember the key {ANTHROPIC_KEY}", "type": "note"}}]},
        {"text": f"Never share {OPENAI_KEY}. We decided to use {OTHER_SECRETS[1]} for CI."},
    ]
    env = {**os.environ, "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    with ScriptedServer(script) as srv:
        url = srv.base_url
        out = subprocess.run(
            [str(BIN), "-p", f"check creds; never print {OPENAI_KEY}", "--model", "anthropic:claude-sonnet-5-5", "--base-url", url, "--yes", "--output", "json"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=120,
        )
    assert out.returncode == 0, out.stderr
    state = repo / ".ctxagent"
    assert (state / "sessions").is_dir() and (state / "memory.db").exists()
    assert list((state / "spill").glob("**/*")), "the big output should have been spilled"
    needles = [ANTHROPIC_KEY, OPENAI_KEY, *OTHER_SECRETS, *(needle for _, needle in NEW_SHAPES)]
    assert _scan(state, needles) == []
    assert _scan(_isolated_home, needles) == []
    assert "[redacted]" in "".join(p.read_text(errors="replace") for p in (state / "sessions").glob("*.jsonl"))
    # and the JSON printed to the user holds no key either
    assert not any(n in out.stdout for n in needles)
