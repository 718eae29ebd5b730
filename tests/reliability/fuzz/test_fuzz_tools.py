"""Fuzzing the tools: any arguments to any built-in tool, through the real registry, come back as a
ToolResult — never an exception — and no path outside the repository is ever accepted."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.confine import resolve_in_repo
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.history_tool import make_read_event_tool
from ctxagent.tools.memory_tools import memory_tools
from ctxagent.tools.spill_tool import make_read_spill_tool
from hypothesis import HealthCheck, given, settings, strategies as st
from strategies import DEPTHS, JSON, TEXT, deep

# every built-in tool, as the factory registers them (the memory, spill and history ones without
# their services here: they must say so, not raise)
REG = make_registry(extra=[make_read_spill_tool(), make_read_event_tool(), *memory_tools()])
TOOLS = sorted(spec.name for spec in REG.specs())
# A command is run for real (in the sandbox, or refused where it cannot run): a few harmless ones,
# so the fuzzing spends its time on the arguments around them, not on what a random command does.
COMMANDS = st.sampled_from(["true", "echo 你好", "exit 3", "printf '\\377\\376'", "", " ", "cat /nonexistent"])
CONFIG = {"shell_timeout": 5, "test_command": "true"}


def _value(prop: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    if name in ("command", "test_command"):
        return st.one_of(COMMANDS, JSON)
    kind = prop.get("type")
    typed = {"string": TEXT, "integer": st.integers(min_value=-(2**40), max_value=2**40), "boolean": st.booleans(),
             "number": st.floats(allow_nan=True), "array": st.lists(TEXT, max_size=5)}.get(str(kind), JSON)
    return st.one_of(typed, typed, JSON)


def arguments(tool: str) -> st.SearchStrategy[Any]:
    schema = next(s.input_schema for s in REG.specs() if s.name == tool)
    props: dict[str, Any] = schema.get("properties") or {}
    shaped = st.fixed_dictionaries({}, optional={k: _value(v, k) for k, v in props.items()})
    extra = st.dictionaries(TEXT, JSON, max_size=2)
    return st.one_of(
        shaped, shaped, shaped,
        st.builds(lambda a, b: {**a, **b}, shaped, extra),  # unknown names too
        JSON,  # not even an object
        st.builds(lambda d: {k: deep(d) for k in props} or {"x": deep(d)}, DEPTHS),  # nested far down
    )


@pytest.fixture(scope="module")
def fuzz_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzz")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text("outside secret\n")
    repo = base / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return '你好'\n")
    (repo / "link_out").symlink_to(base / "outside")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


@pytest.mark.parametrize("tool", TOOLS)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_tool_returns_a_result_for_any_arguments(fuzz_repo: Path, tool: str, data: st.DataObject) -> None:
    args = data.draw(arguments(tool), label="arguments")
    result = REG.run(tool, args, ToolContext(root=fuzz_repo, config=dict(CONFIG)))
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str)
    result.content.encode("utf-8")  # what goes to the model and the log is encodable
    assert (fuzz_repo.parent / "outside" / "secret.txt").read_text() == "outside secret\n"


PATH_PARTS = st.sampled_from(["..", ".", "", "/", "app.py", "link_out", "outside", "secret.txt", "~", "a", "中文",
                              "\udce9", "\x00", "//", "proc", "etc", "passwd", "link_out/..", " ", "\\"])
PATHS = st.one_of(TEXT, st.lists(PATH_PARTS, min_size=1, max_size=8).map("/".join),
                  st.lists(PATH_PARTS, min_size=1, max_size=8).map(lambda p: "/" + "/".join(p)))


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=PATHS, for_write=st.booleans())
def test_no_path_outside_the_root_is_ever_accepted(fuzz_repo: Path, path: str, for_write: bool) -> None:
    root = fuzz_repo.resolve()
    try:
        resolved = resolve_in_repo(fuzz_repo, path, for_write=for_write)
    except Exception as exc:  # noqa: BLE001 - refusing is the other allowed outcome; it must be a clear error
        assert type(exc).__name__.endswith("Error") and str(exc)
        return
    real = Path(os.path.realpath(resolved))
    assert real == root or root in real.parents, f"{path!r} accepted as {real}"
    if for_write:
        assert ".git" not in real.relative_to(root).parts and ".ctxagent" not in real.relative_to(root).parts
