"""The setup screen shown when no usable model is configured: exactly what to set, plus a quick
loopback probe for a local OpenAI-compatible server (Ollama's default port 11434).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

OLLAMA_HOST = "127.0.0.1"
OLLAMA_PORT = 11434


@dataclass(frozen=True)
class LocalServer:
    base_url: str  # OpenAI-compatible, ending in /v1
    models: list[str]


def probe_local_server(host: str = OLLAMA_HOST, port: int = OLLAMA_PORT, timeout: float = 0.4) -> LocalServer | None:
    """Ask `http://host:port` for its models (OpenAI `/v1/models`, then Ollama `/api/tags`).

    Loopback only, one short try each: the setup screen must never hang on it.
    """
    if not (host.startswith("127.") or host in ("localhost", "::1")):
        raise ValueError("the local-server probe only talks to loopback addresses")
    base = f"http://{host}:{port}"
    for path, pick in (("/v1/models", _openai_models), ("/api/tags", _ollama_models)):
        try:
            with urllib.request.urlopen(base + path, timeout=timeout) as resp:  # noqa: S310 (loopback URL)
                data = json.loads(resp.read().decode("utf-8", "replace") or "{}")
        except (urllib.error.URLError, OSError, ValueError):
            continue
        return LocalServer(base_url=base + "/v1", models=pick(data))
    return None


def _openai_models(data: object) -> list[str]:
    items = data.get("data", []) if isinstance(data, dict) else []
    return [str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id")]


def _ollama_models(data: object) -> list[str]:
    items = data.get("models", []) if isinstance(data, dict) else []
    return [str(m.get("name") or m.get("model")) for m in items if isinstance(m, dict) and (m.get("name") or m.get("model"))]


def setup_instructions(problem: str = "") -> str:
    lines = []
    if problem:
        lines.append(f"Problem: {problem}\n")
    lines += [
        "ctxagent needs a model. Set ONE of these, then run `ctxagent` again:",
        "",
        "  Anthropic:   export ANTHROPIC_API_KEY=sk-ant-…",
        "               (optional) export CTXAGENT_MODEL=anthropic:claude-sonnet-4-5",
        "  OpenAI:      export OPENAI_API_KEY=sk-…",
        "               (optional) export CTXAGENT_MODEL=openai:gpt-5-mini",
        "  Local server (Ollama, vLLM, llama.cpp, LM Studio):",
        "               ctxagent --model openai:MODEL --base-url http://127.0.0.1:11434/v1",
        "",
        "Or put `model = \"…\"` in .ctxagent/config.toml. No key yet? Try `ctxagent demo`.",
    ]
    return "\n".join(lines)


class SetupScreen(Screen[tuple[str, str] | None]):
    """Dismisses with (model, base_url) when the user picks a detected local server, else None."""

    DEFAULT_CSS = """
    SetupScreen { align: center middle; }
    SetupScreen > Vertical { width: 90%; max-width: 100; height: auto; border: thick $accent; padding: 1 2; }
    SetupScreen Horizontal { height: auto; margin-top: 1; }
    SetupScreen Button { margin-right: 1; }
    """
    BINDINGS = [Binding("q,escape", "quit_setup", "Quit"), Binding("u", "use_local", "Use local server")]

    def __init__(self, problem: str = "", local: LocalServer | None = None) -> None:
        super().__init__()
        self.problem = problem
        self.local = local

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Set up a model", style="bold"))
            yield Static(setup_instructions(self.problem), id="setup-text")
            if self.local is not None:
                models = ", ".join(self.local.models[:5]) or "no models pulled yet"
                yield Static(Text(f"\nFound a local OpenAI-compatible server at {self.local.base_url} ({models}).",
                                  style="bold green"), id="setup-local")
            else:
                yield Static(Text(f"\nNo local server answered on {OLLAMA_HOST}:{OLLAMA_PORT}.", style="dim"),
                             id="setup-local")
            with Horizontal():
                if self.local is not None and self.local.models:
                    yield Button(rf"\[U]se {self.local.models[0]}", id="use-local", variant="success")
                yield Button(r"\[Q]uit", id="quit")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "use-local":
            self.action_use_local()
        else:
            self.action_quit_setup()

    def action_use_local(self) -> None:
        if self.local is not None and self.local.models:
            self.dismiss((f"openai:{self.local.models[0]}", self.local.base_url))

    def action_quit_setup(self) -> None:
        self.dismiss(None)
