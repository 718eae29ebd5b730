"""What to tell a user who has no usable model configured (headless / no app)."""

from __future__ import annotations

import sys
from typing import TextIO

SETUP_TEXT = """ctxagent needs a model. Set one of:
  export ANTHROPIC_API_KEY=...   and  export CTXAGENT_MODEL=anthropic:claude-sonnet-4-5
  export OPENAI_API_KEY=...      and  export CTXAGENT_MODEL=openai:gpt-5-mini
  a local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio):
      ctxagent --model openai:qwen2.5-coder --base-url http://127.0.0.1:11434
or put `model = "..."` in .ctxagent/config.toml. Try it without a key: ctxagent demo
Run one task headless: ctxagent -p "fix the failing test" --yes
"""


def print_setup_help(out: TextIO = sys.stdout) -> int:
    out.write(SETUP_TEXT)
    return 2
