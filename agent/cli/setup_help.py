"""What to tell a user who has no usable model configured (headless, no app, and the app's set-up
screen, which takes its example lines from `model_examples()`)."""

from __future__ import annotations

import sys
from typing import TextIO

from ctxagent.agent.providers.registry import start_model


def model_examples() -> list[str]:
    """The set-up lines: a key alone is enough (the model is optional), or a local server."""
    anthropic, openai = start_model("anthropic"), start_model("openai")
    return [
        f"export ANTHROPIC_API_KEY=...   (starts with anthropic:{anthropic})",
        f"export OPENAI_API_KEY=...      (starts with openai:{openai})",
        "optional, another model:  export CTXAGENT_MODEL=anthropic:MODEL   (`ctxagent models` lists them)",
        "a local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio):",
        "    ctxagent --model openai:qwen2.5-coder --base-url http://127.0.0.1:11434",
    ]


def no_model_message() -> str:
    """The one-line error when neither a model nor a key is configured."""
    return (f"no model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (a key alone starts with "
            f"anthropic:{start_model('anthropic')} or openai:{start_model('openai')}), or pass --model; "
            "for a local OpenAI-compatible server add --base-url http://127.0.0.1:11434")


def setup_text() -> str:
    lines = ["ctxagent needs a model. Set one of:"]
    lines += ["  " + line for line in model_examples()]
    lines += [
        "If both keys are set, Anthropic's is used. Or put `model = \"...\"` in .ctxagent/config.toml.",
        "Try it without a key: ctxagent demo",
        "Run one task headless: ctxagent -p \"fix the failing test\" --yes",
    ]
    return "\n".join(lines) + "\n"


def print_setup_help(out: TextIO = sys.stdout) -> int:
    out.write(setup_text())
    return 2
