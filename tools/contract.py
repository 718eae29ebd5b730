"""The tool contract: typed arguments validated into clear errors, results that never raise.

A tool is a name, a description, a JSON schema for its arguments, a permission class, and a
`run(args, ctx) -> ToolResult`. A `FunctionTool`'s arguments are a pydantic model (`ToolArgs`):
the model generates the JSON schema sent to the model and validates a call's arguments once, into
the typed object the tool function receives. `ToolRegistry.run` turns unknown tools and any
exception into an error result for the model and never lets an exception escape into the agent loop.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, Generic, Literal, Protocol, TypeVar

from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor import bounded_json
from ctxagent.context.prompt_cache import SHORTEST_TTL_S
from ctxagent.context.request import ToolSpec
from ctxagent.tools.safe_text import clean_args, clean_result
from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from ctxagent.context.history import SessionLog
    from ctxagent.context.images import Image
    from ctxagent.context.memory import MemoryStore
    from ctxagent.context.report import ContextReport
    from ctxagent.context.spill import SpillStore

Permission = Literal["read", "edit", "command"]


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    # Structured facts for the engine and the UI, e.g. {"files": ["a.py"], "diff": "...",
    # "lines": {"a.py": [[3, 7]]}, "tests": {"passed": 3, "failed": 1}, "exit_code": 0}.
    meta: dict[str, Any] = field(default_factory=dict)
    # images the model sees beside the text (read_file of a PNG, an MCP image): checked by context/images.py,
    # stored by the agent in the session's attachment store, never put in `content`
    images: list[Image] = field(default_factory=list)


@dataclass
class ToolServices:
    """What the agent lends its tools for a turn. Each is optional: without it a tool falls back to
    what it can open itself under the repository (the spill store, the project's memory database) or
    says it cannot work (read_event needs the log)."""

    spill: SpillStore | None = None
    log: SessionLog | None = None  # the session's log (read_event)
    memory: MemoryStore | None = None  # the project's memory store
    user_memory: MemoryStore | None = None  # the user's store, shared by every project (scope "user")
    summarize: Callable[[str], str] | None = None  # a one-shot model call (summarize_context)
    session: str = ""  # the session id, stamped on memory records
    turn: int = 0  # the running user turn
    call_id: str = ""  # the id of the call being run (a sub-agent's log names the call that started it)
    # the budget tools (tools/budget_tools.py): the agent's read-only view of its window, and its
    # "compact at the next step, with this focus" (the same path as /compact)
    status: Callable[[], BudgetStatus] | None = None
    request_compaction: Callable[[str | None], None] | None = None
    handoff: Callable[[str | None], str] | None = None  # draft a new session's opening message (shown to the user)
    images: bool = False  # the model takes images (agent/providers/registry.py takes_images): a tool may attach one


@dataclass(frozen=True)
class BudgetStatus:
    """What context_status reads, as the agent knows it after its last build (no rebuild)."""

    report: ContextReport | None  # the last build's report (None before the first step)
    pruned_ids: tuple[int, ...] = ()  # events the last request showed cut (preview or stub)
    spilled_ids: tuple[int, ...] = ()  # tool results it showed as spill previews
    masked: tuple[tuple[int, int], ...] = ()  # event ranges compaction summaries stood in for
    cold: frozenset[int] = frozenset()  # message events that met a cold prompt cache (builder/cache.py ColdTrail)
    cache_ttl_s: float = SHORTEST_TTL_S  # how long the provider's cache keeps an entry (context/prompt_cache.py)
    last_model: str = ""  # the model of the last step
    model: str = ""  # the model of the next step
    compaction_requested: str | None = None  # a pending compact_context: its focus ("" for none)


class FileAccess(Protocol):
    """An editor's buffers over the local disk (tui/acp/: ACP's fs/read_text_file, fs/write_text_file).
    The file tools always confine a path on the local disk first — the walk from the root's descriptor
    (tools/confine.py) that refuses links leaving the root, hard links, FIFOs and devices — and only then,
    where `read_through` / `write_through` say so, read or write the editor's copy of that same file
    instead of the disk. Errors are `ToolError`s or `OSError`s."""

    read_through: bool
    write_through: bool

    def open_read(self, path: Path) -> BinaryIO: ...

    def write(self, path: Path, data: bytes) -> None: ...


class LocalFiles:
    """The local file system alone (the file tools then use their confined walk directly); its methods
    serve callers that hold a path already confined (an ACP client's fallback): the last name is never
    followed as a link."""

    read_through = False
    write_through = False

    def open_read(self, path: Path) -> BinaryIO:
        return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb")

    def write(self, path: Path, data: bytes) -> None:
        from ctxagent.tools.atomic_write import write_atomic

        write_atomic(path, data)


LOCAL_FILES = LocalFiles()


@dataclass
class ToolContext:
    root: Path  # the repository root; every path is confined to it
    cancel: threading.Event = field(default_factory=threading.Event)
    # e.g. {"test_command": "...", "shell_timeout": 120, "sandbox": SandboxPolicy(...), "files": FileAccess};
    # commands run under tools/sandbox/'s default policy (workspace-write, no network) when "sandbox"
    # is absent, and files are the local disk when "files" is
    config: dict[str, Any] = field(default_factory=dict)
    state_dir: Path | None = None  # <root>/.ctxagent
    services: ToolServices = field(default_factory=ToolServices)

    @property
    def files(self) -> FileAccess:
        """How read_file / write_file / edit_file read and write (see FileAccess)."""
        found = self.config.get("files")
        return found if found is not None else LOCAL_FILES


class Tool(Protocol):
    name: str
    description: str
    schema: dict[str, Any]  # JSON schema of the arguments (type: object)
    permission: Permission

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...

    def must_ask(self, args: Any) -> bool:
        """True when this call needs the user's yes whatever the permission mode (e.g. writing
        the user-wide memory): yolo, auto-edit and "allow for this session" do not cover it."""
        ...


# --- arguments ------------------------------------------------------------------------------------


class ToolArgs(BaseModel):
    """Base of every tool's arguments: JSON types taken strictly (no "1" for 1), no unknown names.

    An optional argument is declared `X | None = Field(None, description=...)`; the schema shows
    it as plain X (a model omits what it does not need; an explicit null means the same)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    # Whether the schema says `additionalProperties: false`. Unknown names are refused either way;
    # the memory and spill tools never said it, and their schemas stay byte-identical (the tool
    # list is part of every request's cached prefix).
    schema_closed: ClassVar[bool] = True


class NoArgs(ToolArgs):
    """For tools that take no arguments."""


A = TypeVar("A", bound=ToolArgs)


def args_schema(model: type[ToolArgs]) -> dict[str, Any]:
    """The JSON schema the model is shown: pydantic's, without titles, defaults and `null` branches."""
    raw = model.model_json_schema()
    props = {name: _plain(spec) for name, spec in raw.get("properties", {}).items()}
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": list(raw.get("required", []))}
    if model.schema_closed:
        schema["additionalProperties"] = False
    return schema


_KEY_ORDER = ("type", "enum", "items", "minimum", "description")  # as the hand-written schemas had them


def _plain(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("title", "default", "anyOf")}
    branches = [b for b in spec.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:  # `X | None`: the null branch is how "not given" is spelled, not a type to offer
        out = {**_plain(branches[0]), **out}
    if isinstance(out.get("items"), dict):
        out["items"] = _plain(out["items"])
    return dict(sorted(out.items(), key=lambda kv: _KEY_ORDER.index(kv[0]) if kv[0] in _KEY_ORDER else len(_KEY_ORDER)))


def _where(loc: tuple[int | str, ...]) -> str:
    name = str(loc[0]) if loc else "arguments"
    return name + "".join(f"[{part}]" for part in loc[1:])


def _json_type(schema: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    spec: dict[str, Any] = schema.get("properties", {}).get(str(loc[0]), {}) if loc else {}
    for _ in loc[1:]:
        spec = spec.get("items", {})
    return str(spec.get("type", "a valid value"))


def argument_problem(exc: ValidationError, schema: dict[str, Any], args: dict[str, Any]) -> str:
    """One short message for the model, in the words of JSON ("argument 'path' must be string, got int")."""
    errors = exc.errors(include_url=False)
    missing = [_where(e["loc"]) for e in errors if e["type"] == "missing"]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    unknown = [_where(e["loc"]) for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        return f"unknown argument(s): {', '.join(unknown)}; expected: {', '.join(schema['properties']) or 'none'}"
    first = errors[0]
    loc, value = tuple(first["loc"]), first.get("input")
    where = _where(loc)
    if first["type"] == "literal_error":
        spec = schema["properties"].get(str(loc[0]), {})
        return f"argument '{where}' must be one of {spec.get('enum', [])}"
    if first["type"] in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"argument '{where}' {first['msg'].lower().replace('input should be ', 'must be ')}, got {value!r}"
    return f"argument '{where}' must be {_json_type(schema, loc)}, got {type(value).__name__}"


RAW_KEY = "_raw"  # the session log keeps arguments that were not valid JSON as {"_raw": text}


def malformed_json(raw: str) -> str:
    why = bounded_json.problem(raw) or "not a JSON object"
    return f"the arguments were not a valid JSON object: {raw[:500]!r} ({why})"


def parse_args(model: type[A], schema: dict[str, Any], args: Any) -> A | str:
    """The validated arguments, or a message for the model saying what is wrong with them."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    if set(args) == {RAW_KEY} and RAW_KEY not in schema["properties"]:
        return malformed_json(str(args[RAW_KEY]))
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        return argument_problem(exc, schema, args)


# --- tools and the registry -----------------------------------------------------------------------


@dataclass
class FunctionTool(Generic[A]):
    """A tool made from a plain function over its typed arguments — the usual way to define one.

    `run` validates the arguments once (a bad call is an error result naming the argument), calls
    the function, and turns a `CtxagentError` into its message and any other exception into a named
    error: a tool never takes the loop down."""

    name: str
    description: str
    args_model: type[A]
    permission: Permission
    fn: Callable[[A, ToolContext], ToolResult]
    always_ask: Callable[[dict[str, Any]], bool] | None = None  # see Tool.must_ask; gets the raw arguments
    # consecutive calls of a parallel tool in one step run together (tools/call_groups.py): the `task` tool
    parallel: bool = False
    # whether a call may change files although the tool is read-only itself (a sub-agent given edit tools):
    # the turn's checkpoint is taken before it runs; gets the raw arguments and the registry
    changes_files: Callable[[dict[str, Any], ToolRegistry], bool] | None = None
    schema: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.schema = args_schema(self.args_model)

    def parse(self, args: Any) -> A | str:
        return parse_args(self.args_model, self.schema, args)

    def must_ask(self, args: Any) -> bool:
        return self.always_ask is not None and isinstance(args, dict) and self.always_ask(args)

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        parsed = self.parse(args)
        if isinstance(parsed, str):
            return ToolResult(f"error: invalid arguments for {self.name}: {parsed}", is_error=True)
        try:
            return self.fn(parsed, ctx)
        except CtxagentError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        except Exception as exc:  # a tool never takes the loop down
            return ToolResult(f"error: {self.name} failed: {type(exc).__name__}: {exc}", is_error=True)


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None):
        self._tools: dict[str, Tool] = {}
        # tools that arrive later (an MCP server that came up, a tool search that loaded some): each
        # source hands over its new tools, which go after the others, so the list sent so far stays
        # a prefix of the new one (the cached prompt prefix)
        self._sources: list[Callable[[], list[Tool]]] = []
        for t in tools or []:
            self.add(t)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def add_source(self, source: Callable[[], list[Tool]]) -> None:
        self._sources.append(source)

    def refresh(self) -> bool:
        """Take the sources' new tools (the agent does it before each step); True when any came."""
        added = False
        for source in self._sources:
            for tool in source():
                if tool.name not in self._tools:
                    self._tools[tool.name] = tool
                    added = True
        return added

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.schema) for t in self._tools.values()]

    def permission(self, name: str) -> Permission:
        tool = self._tools.get(name)
        return tool.permission if tool else "read"

    def must_ask(self, name: str, args: Any) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.must_ask(args)

    def parallel(self, name: str) -> bool:
        """Whether consecutive calls of `name` in one step may run together (a tool's `parallel`)."""
        return bool(getattr(self._tools.get(name), "parallel", False))

    def may_change_files(self, name: str, args: Any) -> bool:
        """Whether a call may change files: a tool that is not read-only, or a read-only one that says
        this call may (its `changes_files`: a sub-agent given edit tools)."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        if tool.permission != "read":
            return True
        check = getattr(tool, "changes_files", None)
        return bool(check is not None and isinstance(args, dict) and check(args, self))

    def run(self, name: str, args: Any, ctx: ToolContext) -> ToolResult:
        """Run a model's call. Its text is made safe on the way in and out (`tools/safe_text.py`)."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(f"error: unknown tool '{clean_result(name)}'. Available tools: {', '.join(self._tools)}",
                              is_error=True)
        if bounded_json.depth_over(args):  # arguments that did not come through ToolCall.parsed
            return ToolResult(f"error: invalid arguments for {name}: they nest more than {bounded_json.MAX_DEPTH} levels",
                              is_error=True)
        try:
            result = tool.run(clean_args(args), ctx)
        except Exception as exc:  # the loop never dies from a tool
            result = ToolResult(f"error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return ToolResult(clean_result(result.content), result.is_error, clean_result(result.meta), result.images)
