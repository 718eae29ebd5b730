"""The README's ACP snippets work as written: Zed's JSON parses and names `ctxagent … acp`, and the
Toad command line's agent command is one ctxagent parses as the acp command."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ctxagent.tui.cli.main import build_parser

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _section() -> str:
    start = README.index("## In an editor: the Agent Client Protocol")
    return README[start:README.index("\n## ", start + 3)]


def test_the_zed_snippet_is_valid_settings_for_ctxagent_acp() -> None:
    block = re.search(r"```json\n(.*?)```", _section(), re.S)
    assert block, "the ACP section shows Zed's settings"
    server = json.loads(block.group(1))["agent_servers"]["ctxagent"]
    assert server["type"] == "custom" and server["command"] == "ctxagent"
    args = build_parser(server["args"]).parse_args(server["args"])
    assert args.command == "acp" and args.model


def test_the_toad_command_line_runs_ctxagent_acp() -> None:
    line = next(line for line in _section().splitlines() if line.startswith("toad acp "))
    toad_args = shlex.split(line)
    assert toad_args[:2] == ["toad", "acp"] and len(toad_args) == 4
    agent = shlex.split(toad_args[2])
    assert agent[0] == "ctxagent"
    assert build_parser(agent[1:]).parse_args(agent[1:]).command == "acp"
