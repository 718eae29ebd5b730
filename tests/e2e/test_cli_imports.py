"""What a command costs before it does anything (issue 24, "speed a user feels"): `--version` and
`--help` import no provider SDK, no pydantic and no textual; the offline commands (`report`,
`inspect`, `sessions`) import no provider SDK, for sessions made through either real SDK.

Each command runs in a fresh interpreter under `python -X importtime`, whose stderr names every
module imported (a count of work, not a timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).with_name("ctxagent")

SDKS = ("anthropic", "openai")


def imported(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the console script with `args` (no API key in the environment): the result, and the
    top-level names of every module it imported."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = subprocess.run([sys.executable, "-X", "importtime", str(BIN), *args], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=120)
    names = set()
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    assert "ctxagent" in names, out.stderr[-2000:]  # the trace was read
    return out, names


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_sdk_no_pydantic_no_textual(repo: Path, flag: str) -> None:
    out, names = imported(repo, flag)
    assert out.returncode == 0
    assert out.stdout.startswith("ctxagent 0.") if flag == "--version" else "--strategy" in out.stdout
    assert not names & {*SDKS, "pydantic", "textual", "tiktoken", "httpx", "httpx2"}, sorted(names)


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"])
def test_offline_commands_import_no_provider_sdk(repo: Path, scripted_server, ctxagent_run, model: str) -> None:
    srv = scripted_server([{"text": "Looking.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
                           {"text": "`add` subtracts."}])
    run = ctxagent_run(repo, "-p", "why does add fail?", "--model", model, "--base-url", srv.url, "--output", "json")
    assert run.returncode == 0, run.stderr
    session = json.loads(run.stdout)["session"]
    for args in (("report", session), ("inspect", session, "--step", "2", "--json"), ("sessions",)):
        out, names = imported(repo, *args)
        assert out.returncode == 0, (args, out.stderr[-2000:])
        assert not names & set(SDKS), (args, sorted(names & set(SDKS)))
        if args[0] == "inspect":  # the wire body is still the provider's own, built without its SDK
            assert json.loads(out.stdout)["request"] == srv.requests()[1]["body"]


@pytest.mark.parametrize(("model", "sdk"), [("anthropic:claude-sonnet-5-5", "anthropic"), ("openai:gpt-5.4-mini", "openai")])
def test_the_agent_is_built_without_its_sdk_and_warm_sdk_imports_it(repo: Path, model: str, sdk: str) -> None:
    """The app builds the agent and imports the SDK on two workers at once (tui/app/agent_start.py): the
    build does not wait for the import, and `warm_sdk` is what does it."""
    code = ("import json, sys\nfrom pathlib import Path\n"
            "from ctxagent.agent import create_agent, load_config, open_session, warm_sdk\n"
            f"session = open_session(Path('.'), load_config(Path('.'), {{'model': {model!r}}}))\n"
            "create_agent(session)\n"
            f"built = {sdk!r} in sys.modules\n"
            "title = warm_sdk(session.config)\n"
            f"print(json.dumps({{'built': built, 'title': title, 'warm': {sdk!r} in sys.modules}}))\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000", "OPENAI_API_KEY": "sk-test-0000000000000000000000"}
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"built": False, "title": "Anthropic" if sdk == "anthropic" else "OpenAI", "warm": True}
