"""Helpers for attacks through the real CLI (imported by the tests; fixtures are in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).with_name("ctxagent")
MODEL = "openai:gpt-5.4-mini"
OPENAI_KEY = "sk-test-user-key-0000000000000000000000"


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.invalid", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.invalid")
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
            preexec_fn: Callable[[], None] | None = None, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """`ctxagent ARGS` in `cwd` with the user's OpenAI key in the environment (and CTXAGENT_HOME from the test)."""
    full_env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, **(env or {})}
    return subprocess.run([*(prefix or []), str(BIN), *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec_fn)


def headless(cwd: Path, url: str | None, prompt: str = "go", *extra: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """`ctxagent -p PROMPT --model MODEL [--base-url URL] EXTRA…`."""
    args = ["-p", prompt, "--model", MODEL, *(["--base-url", url] if url else []), *extra]
    return run_cli(cwd, *args, **kw)  # type: ignore[arg-type]


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr


def user_config(home: Path, text: str) -> None:
    """The user's own config file (trusted) under the test's CTXAGENT_HOME."""
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text, encoding="utf-8")


def repo_config(repo: Path, text: str) -> Path:
    """A `.ctxagent/config.toml` as a repository (or a tarball) would ship it."""
    state = repo / ".ctxagent"
    state.mkdir(exist_ok=True)
    (state / "config.toml").write_text(text, encoding="utf-8")
    return state / "config.toml"
