"""The script format shared by the loopback model server and the in-process `scripted:` model.

A script is a JSON list of turns (or `{"turns": [...], "models": [...]}`); request N gets turn N:

    {"text": "...", "tool_calls": [{"name": "...", "arguments": {...}, "id"?: "...", "raw_arguments"?: "..."}],
     "usage": {"input_tokens": n, "output_tokens": n, "cache_read": n, "cache_write": n},
     "stop_reason"?: "end_turn" | "max_tokens" | ...}

Every key is optional. `raw_arguments` sends that exact string as the call's arguments (to script a
model that emits invalid JSON). A turn may instead be a fault, which consumes its slot like any turn:

    {"fault": "429", "retry_after": 0.1}   rate limited, with a retry-after header
    {"fault": "500"}                       internal server error
    {"fault": "529"}                       overloaded_error
    {"fault": "404"}                       the model is not found
    {"fault": "401"}                       bad API key
    {"fault": "context_length"}            400 "prompt is too long"
    {"fault": "reset"}                     the connection closes before the first byte
    {"fault": "cut", "text": "partial"}    some text streams, then the connection drops
    {"fault": "malformed_sse"}             an event whose data is not JSON (after optional "text")
    {"fault": "error_event", "text": "p"}  some text streams, then an `error` event (overloaded) in the 200 stream
    {"fault": "stall", "text": "p", "seconds": 5}   some text, then nothing for 5 s, then the rest of the turn
    {"fault": "pings", "seconds": 5}       only keep-alives for 5 s (Anthropic `ping` events, OpenAI SSE
                                           comments), then the turn
    {"fault": "drip", "seconds": 5}        the first event after the text sent one byte at a time over 5 s
                                           (bytes arrive, no event completes), then the rest

Everything is deterministic: tool call ids come from the request and call numbers, and input tokens
not given by the script are computed from the request body (its JSON length // 4).

"agents" (optional) gives each sub-agent its own turn list, so a parent's `task` calls and the
children's steps stay deterministic even when the children run in parallel:

    {"turns": [...parent...], "agents": {"find the bug": [...turns of that sub-agent...]}}

A request whose system prompt has a line `Sub-agent task: NAME` (the sub-agent's prompt names its
task so: agent/subagents/) gets the next turn of agents[NAME]; every other request the next of "turns".

"models" (optional) is the catalogue served at GET /v1/models (and /v1/models/ID) in the wire
format of the client that asks (Anthropic when the request carries `anthropic-version`):

    {"id": "claude-sonnet-5-5", "display_name"?: "...", "max_input_tokens"?: n, "max_tokens"?: n,
     "lifecycle"?: "active" | "deprecated" | "retired", "retires_at"?: "YYYY-MM-DD",
     "image_input"?: true | false}   (Anthropic's capabilities.image_input.supported)

Anthropic lists active and deprecated models (retired ones when asked for); OpenAI lists the
models that are not retired, a `retires_at` becoming its `shutdown_date`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.agent import SUBAGENT_LINE
from ctxagent.context.errors import ConfigError

FAULTS = ("429", "500", "529", "404", "401", "context_length", "reset", "cut", "malformed_sse", "error_event",
          "stall", "pings", "drip")
SLOW_FAULTS = ("stall", "pings", "drip")  # faults that take `seconds` (default DEFAULT_STALL) and then finish the turn
DEFAULT_STALL = 5.0
LIFECYCLES = ("active", "deprecated", "retired")

# Keys accepted in a turn's "usage", mapped to the neutral names (Anthropic and OpenAI spellings too).
_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "prompt_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "completion_tokens": "output_tokens",
    "cache_read": "cache_read",
    "cache_read_input_tokens": "cache_read",
    "cached_tokens": "cache_read",
    "cache_write": "cache_write",
    "cache_creation_input_tokens": "cache_write",
}

# The line of a sub-agent's system prompt naming its task: the script's "agents" are keyed by NAME.
_SUBAGENT_KEY = re.compile("^" + re.escape(SUBAGENT_LINE) + "(.+)$", re.MULTILINE)

CONTEXT_LENGTH_MESSAGE = "prompt is too long: {tokens} tokens > 200000 maximum"
EXHAUSTED_MESSAGE = "scripted server: the script has {count} turns and this is request {n}; nothing left to answer"


@dataclass(frozen=True)
class ScriptedCall:
    id: str | None  # None: the server or provider derives one deterministically
    name: str
    arguments: dict[str, Any]
    raw: str | None = None  # sent verbatim instead of the JSON of `arguments`

    @property
    def arguments_json(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class Turn:
    text: str = ""
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    usage: dict[str, int] | None = None  # neutral keys; None: computed from the request
    stop_reason: str | None = None
    fault: str | None = None
    retry_after: float | None = None
    seconds: float | None = None  # how long a slow fault (SLOW_FAULTS) holds the stream

    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


def _parse_turn(index: int, raw: Any) -> Turn:
    where = f"script turn {index + 1}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise ConfigError(f"{where}: 'text' must be a string")
    calls: list[ScriptedCall] = []
    for j, c in enumerate(raw.get("tool_calls") or []):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ConfigError(f"{where}: tool_calls[{j}] needs a string 'name'")
        args = c.get("arguments", {})
        if not isinstance(args, dict):
            raise ConfigError(f"{where}: tool_calls[{j}].arguments must be an object")
        raw_args = c.get("raw_arguments")
        if raw_args is not None and not isinstance(raw_args, str):
            raise ConfigError(f"{where}: tool_calls[{j}].raw_arguments must be a string")
        calls.append(ScriptedCall(id=c.get("id"), name=c["name"], arguments=args, raw=raw_args))
    usage = None
    if raw.get("usage") is not None:
        if not isinstance(raw["usage"], dict):
            raise ConfigError(f"{where}: 'usage' must be an object")
        usage = {}
        for key, value in raw["usage"].items():
            if key not in _USAGE_KEYS:
                raise ConfigError(f"{where}: unknown usage key {key!r}")
            usage[_USAGE_KEYS[key]] = int(value)
    fault = raw.get("fault")
    if fault is not None:
        fault = str(fault)
        if fault not in FAULTS:
            raise ConfigError(f"{where}: unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    retry_after = raw.get("retry_after")
    seconds = raw.get("seconds")
    if seconds is not None and (not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0):
        raise ConfigError(f"{where}: 'seconds' must be a number >= 0")
    return Turn(
        text=text,
        tool_calls=calls,
        usage=usage,
        stop_reason=raw.get("stop_reason"),
        fault=fault,
        retry_after=float(retry_after) if retry_after is not None else None,
        seconds=float(seconds) if seconds is not None else None,
    )


@dataclass(frozen=True)
class ScriptedModel:
    """One entry of the served model catalogue (neutral; scripted_wire shapes it per provider)."""

    id: str
    display_name: str = ""
    max_input_tokens: int | None = None
    max_tokens: int | None = None
    lifecycle: str = "active"
    retires_at: str | None = None  # "YYYY-MM-DD"
    image_input: bool | None = None  # Anthropic's capabilities.image_input.supported; None: left out


def _parse_model(index: int, raw: Any) -> ScriptedModel:
    where = f"script models[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        raise ConfigError(f"{where}: needs a string 'id'")
    lifecycle = str(raw.get("lifecycle", "active"))
    if lifecycle not in LIFECYCLES:
        raise ConfigError(f"{where}: lifecycle must be one of {', '.join(LIFECYCLES)}")
    for key in ("max_input_tokens", "max_tokens"):
        if raw.get(key) is not None and not isinstance(raw[key], int):
            raise ConfigError(f"{where}: {key} must be an integer")
    retires = raw.get("retires_at")
    if retires is not None and not isinstance(retires, str):
        raise ConfigError(f"{where}: retires_at must be a date string YYYY-MM-DD")
    image_input = raw.get("image_input")
    if image_input is not None and not isinstance(image_input, bool):
        raise ConfigError(f"{where}: image_input must be true or false")
    return ScriptedModel(id=raw["id"], display_name=str(raw.get("display_name") or ""),
                         max_input_tokens=raw.get("max_input_tokens"), max_tokens=raw.get("max_tokens"),
                         lifecycle=lifecycle, retires_at=retires, image_input=image_input)


def _read(script: str | Path | list[Any] | dict[str, Any]) -> Any:
    if not isinstance(script, (str, Path)):
        return script
    path = Path(script)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(f"script not found: {path}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read script {path}: {e}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(f"script {path} is not valid JSON: {e}") from e


def load_script_and_models(script: str | Path | list[Any] | dict[str, Any]) -> tuple[list[Turn], list[ScriptedModel]]:
    """Turns and the model catalogue of a script (a path to a JSON file, or already-parsed JSON)."""
    data = _read(script)
    models: Any = []
    if isinstance(data, dict) and "turns" in data:
        models = data.get("models") or []
        data = data["turns"]
    if not isinstance(data, list):
        raise ConfigError("a script is a JSON list of turns, or {\"turns\": [...], \"models\": [...]}")
    if not isinstance(models, list):
        raise ConfigError("a script's 'models' is a list of {\"id\": ...} objects")
    return [_parse_turn(i, t) for i, t in enumerate(data)], [_parse_model(i, m) for i, m in enumerate(models)]


def load_agents(script: str | Path | list[Any] | dict[str, Any]) -> dict[str, list[Turn]]:
    """The sub-agents' own turn lists of a script (`"agents"`), by task name; {} when it has none."""
    data = _read(script)
    agents = data.get("agents") if isinstance(data, dict) else None
    if agents is None:
        return {}
    if not isinstance(agents, dict) or not all(isinstance(v, list) for v in agents.values()):
        raise ConfigError("a script's 'agents' maps a sub-agent's task name to its list of turns")
    return {str(name): [_parse_turn(i, t) for i, t in enumerate(turns)] for name, turns in agents.items()}


def system_text(body: Any) -> str:
    """The system prompt of a request body: Anthropic's `system` (text or blocks), OpenAI's system or
    developer messages, or the neutral request's `system`."""
    if not isinstance(body, dict):
        return ""
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    texts = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            content = m.get("content")
            texts.append(content if isinstance(content, str) else
                         "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict)))
    return "\n".join(texts)


def subagent_key(body: Any) -> str | None:
    """The task name a sub-agent's request carries in its system prompt (SUBAGENT_LINE), or None."""
    found = _SUBAGENT_KEY.search(system_text(body))
    return found.group(1).strip() if found else None


def load_script(script: str | Path | list[Any] | dict[str, Any]) -> list[Turn]:
    """Parse a script given as a path to a JSON file, or as already-parsed JSON."""
    return load_script_and_models(script)[0]


def estimate_input_tokens(body: Any) -> int:
    """Deterministic stand-in for the provider's prompt count: compact JSON length // 4, an image
    counted by its provider's rule instead of its base64 (scripted/images.py)."""
    from ctxagent.tui.lab.scripted.images import without_image_data

    body, image_tokens = without_image_data(body)
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return max(1, len(text) // 4) + image_tokens


def turn_usage(turn: Turn, body: Any) -> dict[str, int]:
    """Neutral usage for a turn: the script's numbers, the rest computed deterministically."""
    given = dict(turn.usage or {})
    out_chars = len(turn.text) + sum(len(c.name) + len(c.arguments_json) for c in turn.tool_calls)
    return {
        "input_tokens": given.get("input_tokens", estimate_input_tokens(body)),
        "output_tokens": given.get("output_tokens", max(1, math.ceil(out_chars / 4))),
        "cache_read": given.get("cache_read", 0),
        "cache_write": given.get("cache_write", 0),
    }


def chunk_text(text: str, size: int = 12) -> Iterator[str]:
    """Split text into stream deltas (by characters, so CJK text splits cleanly)."""
    for i in range(0, len(text), size):
        yield text[i : i + size]


def call_id(prefix: str, request_number: int, call_index: int) -> str:
    return f"{prefix}_{request_number:04d}_{call_index}"
