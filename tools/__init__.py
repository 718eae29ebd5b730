"""What the model can call: the coding tools, gathered into a registry.

`default_tools()` returns the nine coding tools (read_file, edit_file, write_file, list_files,
grep, run_tests, shell, git_status, git_diff); memory and spill tools live in their own modules and
are passed in as `extra`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxagent.tools.contract import Tool, ToolRegistry
from ctxagent.tools.files import file_tools
from ctxagent.tools.git_tools import git_tools
from ctxagent.tools.grep import grep_tools
from ctxagent.tools.shell import shell_tools
from ctxagent.tools.tests_runner import run_tests_tools

__all__ = ["default_tools", "make_registry"]


def default_tools(extra: Iterable[Tool] = ()) -> list[Tool]:
    """The coding tools in a stable order (the order is part of the prompt-cache prefix), then `extra`."""
    by_name: dict[str, Tool] = {t.name: t for t in [*file_tools(), *grep_tools(), *run_tests_tools(),
                                                    *shell_tools(), *git_tools()]}
    order = ["read_file", "edit_file", "write_file", "list_files", "grep", "run_tests", "shell", "git_status", "git_diff"]
    return [by_name[n] for n in order] + list(extra)


def make_registry(extra: Iterable[Tool] = ()) -> ToolRegistry:
    return ToolRegistry(default_tools(extra))
