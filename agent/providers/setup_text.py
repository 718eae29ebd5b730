"""What to tell a user who has no usable model configured: the runtime's error, and the text the front
ends show (headless prints `setup_text()`; the app's set-up screen takes its lines from `model_examples()`). The providers, their key variables
and start models come from their specs (providers/specs.py)."""

from __future__ import annotations

from ctxagent.agent.providers import specs


def start_examples() -> str:
    """`anthropic:M or openai:M`: what each key alone starts with."""
    return " or ".join(f"{s.name}:{s.start_model}" for s in specs.keyed() if s.start_model)


def model_examples() -> list[str]:
    """The set-up lines: a key alone is enough (the model is optional), or a local server."""
    keyed = [s for s in specs.keyed() if s.start_model]
    local = specs.local_provider()
    lines = [f"export {s.key_env}=...".ljust(31) + f"(starts with {s.name}:{s.start_model})" for s in keyed]
    return lines + [
        f"optional, another model:  export CTXAGENT_MODEL={keyed[0].name}:MODEL   (`ctxagent models` lists them)",
        f"a local {local.title}-compatible server (Ollama, vLLM, llama.cpp, LM Studio):",
        f"    ctxagent --model {local.name}:qwen2.5-coder --base-url http://127.0.0.1:11434",
    ]


def no_model_message() -> str:
    """The one-line error when neither a model nor a key is configured."""
    keys = " or ".join(str(s.key_env) for s in specs.keyed())
    return (f"no model configured: set {keys} (a key alone starts with {start_examples()}), or pass --model; "
            f"for a local {specs.local_provider().title}-compatible server add --base-url http://127.0.0.1:11434")


def setup_text() -> str:
    first = next(s for s in specs.keyed() if s.start_model)
    lines = ["ctxagent needs a model. Set one of:"]
    lines += ["  " + line for line in model_examples()]
    lines += [
        f"If both keys are set, {first.title}'s is used. Or put `model = \"...\"` in .ctxagent/config.toml.",
        "Try it without a key: ctxagent demo",
        "Run one task headless: ctxagent -p \"fix the failing test\" --yes",
    ]
    return "\n".join(lines) + "\n"
