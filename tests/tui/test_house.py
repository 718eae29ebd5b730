"""The app's first frame loads no more than the prompt needs.

The rest of the app's shape — tui/ reaches agent/ and context/ only through their faces, no import
circle, no mixins — is checked with the whole tree's in tests/test_layout.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# What the first frame must not wait for: the agent (loop, providers, tokenizer, memory, checkpoints,
# tools), the Markdown renderer, and the screens a command opens. They load on the worker that builds
# the agent, or when first used. (`regex`, ~12 ms, does load: the session log redacts its first line,
# and the secret rules of context/data/secret_rules.toml run under it once a rule's keyword appears.)
NOT_AT_FIRST_FRAME = (
    "anthropic", "openai", "tiktoken", "sqlite3", "markdown_it",
    "ctxagent.agent.loop", "ctxagent.agent.factory", "ctxagent.agent.providers", "ctxagent.agent.checkpoints",
    "ctxagent.context.builder", "ctxagent.context.memory", "ctxagent.context.tokens", "ctxagent.tools",
    "ctxagent.tui.app.widgets.reply", "ctxagent.tui.app.slash", "ctxagent.tui.app.screens.pickers", "ctxagent.tui.app.screens.context_screen",
    "ctxagent.tui.app.screens.memory_screen", "ctxagent.tui.app.screens.rewind_screen", "ctxagent.tui.app.screens.setup_screen",
)
# The provider specs (names, key variables, key rules) are what the config loader reads; they import no
# SDK and no provider module (tests/test_providers_specs.py).
CHEAP_PROVIDER_PARTS = {"ctxagent.agent.providers", "ctxagent.agent.providers.specs"}
# The app's own modules that the first frame needs (the session screen and its widgets).
TUI_AT_FIRST_FRAME = {
    "ctxagent.tui", "ctxagent.tui.app", "ctxagent.tui.app.screens", "ctxagent.tui.app.widgets", "ctxagent.tui.app.agent_start", "ctxagent.tui.app.app", "ctxagent.tui.app.bridge", "ctxagent.tui.app.widgets.chat",
    "ctxagent.tui.app.widgets.chat_log", "ctxagent.tui.app.commands", "ctxagent.tui.app.control", "ctxagent.tui.app.widgets.gauge",
    "ctxagent.tui.app.messages", "ctxagent.tui.app.screens.modals", "ctxagent.tui.app.widgets.prompt", "ctxagent.tui.app.screens.question", "ctxagent.tui.app.safe",
    "ctxagent.tui.app.screens.session_screen", "ctxagent.tui.app.widgets.status", "ctxagent.tui.app.widgets.transcript",
}

_FIRST_FRAME = """
import json, subprocess, sys
from pathlib import Path
repo = Path(sys.argv[1])
subprocess.run(["git", "init", "-q", str(repo)], check=True)
(repo / "script.json").write_text(json.dumps([{"text": "hello"}]))
from ctxagent.agent import load_config, open_session
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.session_screen import SessionScreen
seen = []

class FirstFrame(SessionScreen):
    def on_mount(self):
        seen.append(sorted(sys.modules))  # before the screen's own mount work: what its first frame needed
        super().on_mount()

class App(CtxApp):
    def get_default_screen(self):
        return FirstFrame(self.session, self.make_agent)

def make_agent(session, **kwargs):  # on the worker after the first frame: stop here
    app.call_from_thread(app.exit, 0)
    raise RuntimeError("not needed")

session = open_session(repo, load_config(repo, {"model": "scripted:" + str(repo / "script.json")}))
app = App(session, make_agent, probe=False)
app.run(headless=True)
print(json.dumps(seen[0]))
"""


def test_the_first_frame_loads_only_what_the_prompt_needs(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    env = {**os.environ, "CTXAGENT_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", _FIRST_FRAME, str(tmp_path / "repo")], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "ctxagent.tui.app.screens.session_screen" in loaded  # it did reach the session screen
    early = sorted(m for m in loaded if m not in CHEAP_PROVIDER_PARTS
                   and any(m == p or m.startswith(p + ".") for p in NOT_AT_FIRST_FRAME))
    assert not early, f"loaded before the first frame: {early}"
    assert {m for m in loaded if m.startswith("ctxagent.tui")} <= TUI_AT_FIRST_FRAME
