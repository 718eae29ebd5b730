"""The set-up screen shown when no usable model is configured: exactly what to set, a quick
loopback probe for a local OpenAI-compatible server (Ollama's default port 11434), and a button
that runs the scripted demo instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from ctxagent.tui.app.safe import plain
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
    """What to set, said once for the app and the command line (tui/cli/setup_help.py)."""
    from ctxagent.agent import setup_text

    lines = [f"Problem: {problem}", ""] if problem else []
    return "\n".join(lines) + setup_text()


@dataclass(frozen=True)
class SetupChoice:
    """What the set-up screen was left with: "local" (model, base_url of a detected server) or "demo"."""

    kind: str
    model: str = ""
    base_url: str = ""


class SetupScreen(Screen[SetupChoice | None]):
    """Dismisses with a SetupChoice (use the detected local server, or run the demo), or None to quit."""

    DEFAULT_CSS = """
    SetupScreen { align: center middle; }
    SetupScreen > Vertical { width: 90%; max-width: 100; height: auto; border: thick $accent; padding: 1 2; }
    SetupScreen Horizontal { height: auto; margin-top: 1; }
    SetupScreen Button { margin-right: 1; }
    """
    BINDINGS = [
        Binding("u", "use_local", "Use local server"),
        Binding("d", "demo", "Run the demo"),
        Binding("q", "quit_setup", "Quit"),
    ]

    def __init__(self, problem: str = "", local: LocalServer | None = None) -> None:
        super().__init__()
        self.problem = problem
        self.local = local

    @property
    def has_local(self) -> bool:
        return self.local is not None and bool(self.local.models)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Set up a model", style="bold"))
            yield Static(plain(setup_instructions(self.problem)), id="setup-text")
            if self.local is not None:
                models = ", ".join(self.local.models[:5]) or "no models pulled yet"
                yield Static(plain(f"\nFound a local OpenAI-compatible server at {self.local.base_url} ({models}).",
                                   style="bold green"), id="setup-local")
            else:
                yield Static(Text(f"\nNo local server answered on {OLLAMA_HOST}:{OLLAMA_PORT}.", style="dim"),
                             id="setup-local")
            with Horizontal():
                if self.has_local:
                    assert self.local is not None
                    yield Button(Text(f"[U]se {self.local.models[0]}"), id="use-local", variant="success")
                yield Button(Text("[D]emo: try it with a scripted model"), id="demo", variant="primary")
                yield Button(Text("[Q]uit"), id="quit")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "use_local":  # no key for a server that did not answer
            return self.has_local
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        {"use-local": self.action_use_local, "demo": self.action_demo}.get(str(event.button.id), self.action_quit_setup)()

    def action_use_local(self) -> None:
        if self.local is not None and self.local.models:
            self.dismiss(SetupChoice("local", f"openai:{self.local.models[0]}", self.local.base_url))

    def action_demo(self) -> None:
        self.dismiss(SetupChoice("demo"))

    def action_quit_setup(self) -> None:
        self.dismiss(None)
