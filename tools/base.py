"""The tool contract: typed arguments validated into clear errors, results that never raise.

A tool is a name, a description, a JSON schema for its arguments, a permission class, and a
`run(args, ctx) -> ToolResult`. `ToolRegistry.run` validates arguments against the schema, turns
unknown tools, bad arguments and any exception into an error result for the model, and never lets
an exception escape into the agent loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ctxagent.context.request import ToolSpec

Permission = Literal["read", "edit", "command"]


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    # Structured facts for the engine and the UI, e.g. {"files": ["a.py"], "diff": "...",
    # "lines": {"a.py": [[3, 7]]}, "tests": {"passed": 3, "failed": 1}, "exit_code": 0}.
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    root: Path  # the repository root; every path is confined to it
    cancel: threading.Event = field(default_factory=threading.Event)
    config: dict[str, Any] = field(default_factory=dict)  # e.g. {"test_command": "...", "shell_timeout": 120}
    state_dir: Path | None = None  # <root>/.ctxagent
    services: dict[str, Any] = field(default_factory=dict)  # "spill": SpillStore, "memory": MemoryStore, "summarize": fn, "session": id, "turn": n


class Tool(Protocol):
    name: str
    description: str
    schema: dict[str, Any]  # JSON schema of the arguments (type: object)
    permission: Permission

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


@dataclass
class FunctionTool:
    """A tool made from a plain function — the usual way to define one."""

    name: str
    description: str
    schema: dict[str, Any]
    permission: Permission
    fn: Callable[[dict[str, Any], ToolContext], ToolResult]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self.fn(args, ctx)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def validate_args(schema: dict[str, Any], args: Any) -> str | None:
    """Check `args` against a flat object schema; return a message for the model, or None if valid."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    props: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    unknown = [k for k in args if k not in props]
    if unknown and not schema.get("additionalProperties", False):
        return f"unknown argument(s): {', '.join(unknown)}; expected: {', '.join(props) or 'none'}"
    for key, value in args.items():
        spec = props.get(key, {})
        want = spec.get("type")
        if want is None or value is None and key not in schema.get("required", []):
            continue
        types = _JSON_TYPES.get(want, (object,))
        ok = isinstance(value, types) and not (want in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return f"argument '{key}' must be {want}, got {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"argument '{key}' must be one of {spec['enum']}"
    return None


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None):
        self._tools: dict[str, Tool] = {}
        for t in tools or []:
            self.add(t)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.schema) for t in self._tools.values()]

    def permission(self, name: str) -> Permission:
        tool = self._tools.get(name)
        return tool.permission if tool else "read"

    def run(self, name: str, args: Any, ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(f"error: unknown tool '{name}'. Available tools: {', '.join(self._tools)}", is_error=True)
        problem = validate_args(tool.schema, args)
        if problem:
            return ToolResult(f"error: invalid arguments for {name}: {problem}", is_error=True)
        try:
            return tool.run(args, ctx)
        except Exception as exc:  # the loop never dies from a tool
            return ToolResult(f"error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)
