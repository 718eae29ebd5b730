"""What one call costs relative to another: per-model input and output prices, and the summary model.

Costs in the replay are in *input-token units of the source's main model* (the model of most of its
calls): a token the main model reads uncached costs 1. A call answered by another model (a Claude
Code session that spends some calls on a Haiku model) is weighted by its input price over the main
model's, and a summarization call adds its output tokens at the summary model's output price. Cache
reads and writes keep their multipliers (cache_cost.py), applied on top of the call's weight.

Prices come from the product's registry (agent/data/models.toml, `model_info`), the summary model
from the product's rule for it (`cheaper_sibling`: the cheaper model of the same family the agent
asks for a summary). Models the registry lacks are priced from `FALLBACK` below (list prices in USD
per million tokens, read off the providers' pages; they are assumptions, marked as such in the JSON),
and a model neither knows is priced as the main model with output at `DEFAULT_OUTPUT_RATIO` × input.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# (input, output) USD per million tokens, and the cheaper sibling a summary would be asked of
FALLBACK: dict[str, tuple[float, float, str]] = {
    "gemini-3-pro": (2.0, 12.0, "gemini-3-flash"),
    "gemini-3-flash": (0.5, 3.0, "gemini-3-flash"),
    "gemini-2.5-pro": (1.25, 10.0, "gemini-2.5-flash"),
    "gemini-2.5-flash": (0.3, 2.5, "gemini-2.5-flash"),
}
DEFAULT_OUTPUT_RATIO = 5.0  # output / input price when nothing is known (Anthropic's and OpenAI's usual ratio)


@dataclass(frozen=True)
class Price:
    model: str
    input: float  # USD per million tokens (0: unknown)
    output: float
    known: str  # "registry" | "assumed" (FALLBACK) | "unknown"


def _provider(model: str) -> str:
    return "anthropic" if model.lower().startswith("claude") else "openai"


@functools.lru_cache(maxsize=256)
def price_of(model: str) -> Price:
    from ctxagent.agent.providers.registry import model_info

    info = model_info(_provider(model), model)
    if info.known and info.prices.input > 0:
        return Price(model, info.prices.input, info.prices.output, "registry")
    base = next((k for k in FALLBACK if model.lower().startswith(k)), None)
    if base is not None:
        inp, out, _ = FALLBACK[base]
        return Price(model, inp, out, "assumed")
    return Price(model, 0.0, 0.0, "unknown")


@functools.lru_cache(maxsize=256)
def summary_model(model: str) -> str:
    """The model the product asks for a summary when the agent runs `model` (its cheaper sibling)."""
    from ctxagent.agent.providers.registry import cheaper_sibling

    sibling = cheaper_sibling(_provider(model), model)
    if sibling != model:
        return sibling
    base = next((k for k in FALLBACK if model.lower().startswith(k)), None)
    return FALLBACK[base][2] if base is not None else model


@dataclass(frozen=True)
class Pricing:
    """Prices relative to the main model's input price."""

    main: str

    def input_weight(self, model: str | None) -> float:
        """A token `model` reads, in main-model input tokens (1.0 for the main model or an unknown one)."""
        if not model or model == self.main:
            return 1.0
        mine, main = price_of(model), price_of(self.main)
        if mine.input <= 0 or main.input <= 0:
            return 1.0
        return mine.input / main.input

    def output_weight(self, model: str | None) -> float:
        """A token `model` writes, in main-model input tokens."""
        model = model or self.main
        mine, main = price_of(model), price_of(self.main)
        if mine.output > 0 and main.input > 0:
            return mine.output / main.input
        return DEFAULT_OUTPUT_RATIO * self.input_weight(model)

    def summarization(self, model: str | None, input_tokens: float, output_tokens: float) -> float:
        """One summarization call for an agent running `model`, asked of the summary model (uncached)."""
        sib = summary_model(model or self.main)
        return input_tokens * self.input_weight(sib) + output_tokens * self.output_weight(sib)

    def describe(self, models: list[str]) -> dict[str, object]:
        seen = sorted({self.main, *models, *(summary_model(m) for m in {self.main, *models})})
        return {"main": self.main, "summary_model": summary_model(self.main),
                "models": {m: {"input": price_of(m).input, "output": price_of(m).output, "prices": price_of(m).known}
                           for m in seen}}
