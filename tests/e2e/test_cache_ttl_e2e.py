"""The prompt cache's TTL option goes on the wire (issue 22): `cache_ttl = "1h"` puts `"ttl": "1h"` on every
Anthropic cache breakpoint, the default sends none, and the session's cost prices its writes at 2 ×."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.providers.pricing import session_cost
from ctxagent.context.history import SessionLog

MODEL = "anthropic:claude-sonnet-5-5"


def _user_config(text: str) -> None:
    home = Path(os.environ["CTXAGENT_HOME"]) / "config"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def _markers(body: Any) -> list[dict[str, Any]]:
    """Every cache_control in a request body."""
    found: list[dict[str, Any]] = []
    if isinstance(body, dict):
        if isinstance(body.get("cache_control"), dict):
            found.append(body["cache_control"])
        for v in body.values():
            found += _markers(v)
    elif isinstance(body, list):
        for v in body:
            found += _markers(v)
    return found


SCRIPT = [
    {"text": "Looking.", "tool_calls": [{"name": "list_files", "arguments": {}}],
     "usage": {"input_tokens": 10, "output_tokens": 5, "cache_write": 4000}},
    {"text": "Two files.", "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read": 4000, "cache_write": 100}},
]


@pytest.mark.parametrize("ttl", ["1h", "5m", None])
def test_the_wire_carries_the_configured_ttl(repo: Path, scripted_server, ctxagent_run, read_session, ttl) -> None:  # noqa: ANN001
    if ttl is not None:
        _user_config(f'cache_ttl = "{ttl}"\n')
    srv = scripted_server(SCRIPT)
    out = ctxagent_run(repo, "-p", "what files are here?", "--model", MODEL, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    reqs = srv.requests()
    assert len(reqs) == 2
    for req in reqs:
        marks = _markers(req["body"])
        assert len(marks) >= 2  # the stable prefix and the history's end
        if ttl == "1h":
            assert all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks), marks
        else:
            assert all(m == {"type": "ephemeral"} for m in marks), marks  # Anthropic's default: no ttl sent
    session = json.loads(out.stdout)["session"]
    reports = [e for e in read_session(repo, session) if e["kind"] == "context_report"]
    assert {r["data"]["build"]["cache_ttl"] for r in reports} == {ttl or "5m"}


def test_one_hour_writes_are_priced_twice_the_input(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    costs = {}
    for ttl in ("5m", "1h"):
        _user_config(f'cache_ttl = "{ttl}"\n')
        srv = scripted_server(SCRIPT)
        out = ctxagent_run(repo, "-p", "what files are here?", "--model", MODEL, "--base-url", srv.url, "--output", "json")
        assert out.returncode == 0, out.stderr
        log = SessionLog.load(repo / ".ctxagent" / "sessions" / f"{json.loads(out.stdout)['session']}.jsonl")
        costs[ttl] = session_cost(log.events).total
        report = ctxagent_run(repo, "report", json.loads(out.stdout)["session"])
        assert report.returncode == 0, report.stderr
        assert f"${costs[ttl]:.4f}" in report.stdout
    # sonnet 5.5: cache writes $2.5 per million with the 5-minute TTL (1.25 × its $2 input), $4 with the 1-hour one
    assert costs["1h"] - costs["5m"] == pytest.approx(4100 * (4.0 - 2.5) / 1e6, rel=0.01)
