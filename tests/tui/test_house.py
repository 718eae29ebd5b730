"""The app's shape: tui/ reaches agent/ and context/ only through their faces, its modules import each
other one way (no circle, counting lazy and TYPE_CHECKING imports), it has no mixins, and its first
frame loads no more than the prompt needs."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUI = ROOT / "tui"
FACES = {"ctxagent.agent", "ctxagent.context"}


def _tui_modules() -> dict[str, Path]:
    return {"ctxagent.tui." + ".".join(p.relative_to(TUI).with_suffix("").parts): p for p in sorted(TUI.rglob("*.py"))}


def _public(face: str) -> set[str]:
    return set(importlib.import_module(face).__all__)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports, wherever the import statement is (module level, inside a function,
    under `if TYPE_CHECKING:`). `from P import N` also counts as importing `P.N` when N is no public
    name of P: that is how `from ctxagent import agent` or `from ctxagent.agent import loop` reach a
    module (a face's names are its `__all__`; any other name is a submodule)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"  # tui/ spells its imports out
            module = node.module or ""
            found.append((node.lineno, module))
            if module == "ctxagent" or module.startswith("ctxagent.tui"):
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            elif module in FACES:
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names
                          if alias.name not in _public(module)]
    return found


def test_tui_imports_only_the_faces_of_agent_and_context() -> None:
    bad = []
    for path in _tui_modules().values():
        for line, module in _imports(path):
            if module == "ctxagent" or not module.startswith("ctxagent.") or module.startswith("ctxagent.tui"):
                continue
            if module not in FACES:
                bad.append(f"tui/{path.relative_to(TUI)}:{line} imports {module}")
    assert not bad, "tui/ imports only ctxagent.agent and ctxagent.context:\n" + "\n".join(bad)


def test_the_scan_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from ctxagent.agent.loop import Agent
        def later():
            import ctxagent.tools.confine
            from ctxagent import context
            from ctxagent.agent import Agent, step
    """), encoding="utf-8")
    found = {m for _, m in _imports(sample)}
    assert found >= {"ctxagent.agent.loop", "ctxagent.tools.confine", "ctxagent.context", "ctxagent.agent.step"}
    assert "ctxagent.agent.Agent" not in found  # a public name of the face, not a module


def test_tui_modules_import_each_other_without_a_circle() -> None:
    modules = _tui_modules()
    edges = {name: {m for _, m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    done: set[str] = set()

    def walk(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError("import circle: " + " -> ".join([*path[path.index(name):], name]))
        if name in done:
            return
        for nxt in sorted(edges[name]):
            walk(nxt, [*path, name])
        done.add(name)

    for name in sorted(modules):
        walk(name, [])


def test_no_mixin_classes_in_tui() -> None:
    mixins = [f"tui/{path.relative_to(TUI)}:{node.lineno} {node.name}"
              for path in _tui_modules().values()
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ClassDef) and node.name.endswith("Mixin")]
    assert not mixins


# What the first frame must not wait for: the agent (loop, providers, tokenizer, memory, checkpoints,
# tools), the Markdown renderer, and the screens a command opens. They load on the worker that builds
# the agent, or when first used.
NOT_AT_FIRST_FRAME = (
    "anthropic", "openai", "tiktoken", "sqlite3", "regex", "markdown_it",
    "ctxagent.agent.loop", "ctxagent.agent.factory", "ctxagent.agent.providers", "ctxagent.agent.checkpoints",
    "ctxagent.context.builder", "ctxagent.context.memory", "ctxagent.context.tokens", "ctxagent.tools",
    "ctxagent.tui.reply", "ctxagent.tui.slash", "ctxagent.tui.pickers", "ctxagent.tui.context_screen",
    "ctxagent.tui.memory_screen", "ctxagent.tui.rewind_screen", "ctxagent.tui.setup_screen",
)
# The provider specs (names, key variables, key rules) are what the config loader reads; they import no
# SDK and no provider module (tests/test_providers_specs.py).
CHEAP_PROVIDER_PARTS = {"ctxagent.agent.providers", "ctxagent.agent.providers.specs"}
# The app's own modules that the first frame needs (the session screen and its widgets).
TUI_AT_FIRST_FRAME = {
    "ctxagent.tui", "ctxagent.tui.agent_start", "ctxagent.tui.app", "ctxagent.tui.bridge", "ctxagent.tui.chat",
    "ctxagent.tui.chat_log", "ctxagent.tui.commands", "ctxagent.tui.control", "ctxagent.tui.gauge",
    "ctxagent.tui.messages", "ctxagent.tui.modals", "ctxagent.tui.prompt", "ctxagent.tui.safe",
    "ctxagent.tui.session_screen", "ctxagent.tui.status", "ctxagent.tui.transcript",
}

_FIRST_FRAME = """
import json, subprocess, sys
from pathlib import Path
repo = Path(sys.argv[1])
subprocess.run(["git", "init", "-q", str(repo)], check=True)
(repo / "script.json").write_text(json.dumps([{"text": "hello"}]))
from ctxagent.agent import load_config, open_session
from ctxagent.tui.app import CtxApp
from ctxagent.tui.session_screen import SessionScreen
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
    assert "ctxagent.tui.session_screen" in loaded  # it did reach the session screen
    early = sorted(m for m in loaded if m not in CHEAP_PROVIDER_PARTS
                   and any(m == p or m.startswith(p + ".") for p in NOT_AT_FIRST_FRAME))
    assert not early, f"loaded before the first frame: {early}"
    assert {m for m in loaded if m.startswith("ctxagent.tui")} <= TUI_AT_FIRST_FRAME
