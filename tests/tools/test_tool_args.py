"""Tool arguments as pydantic models: the schema the model sees, and one validation with clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from ctxagent.context.memory.record import LAYERS, TYPES
from ctxagent.tools import make_registry
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.memory_tools import Layer, RecordType, memory_tools
from ctxagent.tools.spill_tool import READ_SPILL
from pydantic import model_validator

BEFORE = json.loads((Path(__file__).parent / "data" / "tool_schemas_before_pydantic.json").read_text())
REG = make_registry([*memory_tools(), READ_SPILL])


def test_generated_schemas_equal_the_hand_written_ones() -> None:
    """Byte for byte the JSON of the dicts they replaced (the tool list is part of every request's
    cached prefix), with the same permissions — but store_memory's, which is now asked for."""
    specs = {s.name: s for s in REG.specs()}
    assert set(specs) == set(BEFORE)
    expected = json.loads(json.dumps(BEFORE))
    for name in ("search_memory", "store_memory"):  # one change since: `turn` records joined the record types
        expected[name]["schema"]["properties"]["type"]["enum"].append("turn")
    for name, old in expected.items():
        assert specs[name].description == old["description"], name
        assert json.dumps(specs[name].input_schema, ensure_ascii=False) == json.dumps(old["schema"], ensure_ascii=False), name
        assert REG.permission(name) == (old["permission"] if name != "store_memory" else "edit"), name


def test_unknown_names_are_refused_whatever_the_schema_says(tmp_path: Path) -> None:
    r = REG.run("search_memory", {"query": "x", "verbose": True}, ToolContext(root=tmp_path))
    assert r.is_error and "unknown argument(s): verbose" in r.content


def test_schema_literals_agree_with_the_record_module() -> None:
    assert get_args(RecordType) == TYPES and get_args(Layer) == LAYERS


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("read_file", {"path": 42}, "argument 'path' must be string, got int"),
    ("read_file", {"path": "a", "start_line": True}, "argument 'start_line' must be integer, got bool"),
    ("read_file", {"path": "a", "end_line": 2.0}, "argument 'end_line' must be integer, got float"),
    ("read_file", {"path": None}, "argument 'path' must be string, got NoneType"),
    ("read_file", {}, "missing required argument(s): path"),
    ("edit_file", {"path": "a"}, "missing required argument(s): old_text, new_text"),
    ("read_file", {"path": "a", "lines": "1-3"}, "unknown argument(s): lines; expected: path, start_line, end_line"),
    ("git_status", {"verbose": True}, "unknown argument(s): verbose; expected: none"),
    ("shell", {"command": "true", "timeout": "10"}, "argument 'timeout' must be number, got str"),
    ("shell", {"command": "true", "timeout": False}, "argument 'timeout' must be number, got bool"),
    ("store_memory", {"content": "x", "type": "opinion"},
     "argument 'type' must be one of ['decision', 'constraint', 'change', 'todo', 'note', 'summary', 'spill', 'turn']"),
    ("store_memory", {"content": "x", "type": "note", "tags": ["a", 3]}, "argument 'tags[1]' must be string, got int"),
    ("store_memory", {"content": "x", "type": "note", "tags": "a,b"}, "argument 'tags' must be array, got str"),
    ("grep", ["x"], "arguments must be a JSON object, got list"),
    ("grep", {"_raw": "{not json"}, "the arguments were not a valid JSON object: '{not json'"),
])
def test_bad_arguments_get_one_short_message(tmp_path: Path, tool: str, args: Any, message: str) -> None:
    r = REG.run(tool, args, ToolContext(root=tmp_path))
    assert r.is_error
    assert r.content.startswith(f"error: invalid arguments for {tool}: {message}"), r.content
    assert len(r.content) < 300


def test_null_means_not_given_and_numbers_take_ints(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    r = REG.run("read_file", {"path": "a.txt", "start_line": None, "end_line": None}, ToolContext(root=tmp_path))
    assert not r.is_error and "two" in r.content
    r = REG.run("shell", {"command": "echo ok", "timeout": 5}, ToolContext(root=tmp_path))
    assert not r.is_error and "ok" in r.content


def test_arguments_are_validated_once_into_the_typed_object(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class CountedArgs(ToolArgs):
        name: str
        times: int | None = None

        @model_validator(mode="before")
        @classmethod
        def count(cls, data: Any) -> Any:
            seen.append(dict(data))
            return data

    def greet(args: CountedArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(("hi " + args.name + " ") * (args.times or 1))

    reg = make_registry([FunctionTool("greet", "say hi", CountedArgs, "read", greet)])
    r = reg.run("greet", {"name": "李", "times": 2}, ToolContext(root=tmp_path))
    assert r.content == "hi 李 hi 李 " and len(seen) == 1
