"""Family: a planted `.ctxagent/` (issue 19: an untracked state folder that came in an archive was
trusted, with its memory constraint and its session logs; MCP read_spill followed a spill link).

ctxagent marks the folders it makes (a random id in `.ctxagent/state-id`, recorded with the
folder's inode in the user's own state folder) and every entry point refuses an unmarked one
that holds anything but a config file, saying how to accept it (`ctxagent trust --state`).
"""

from __future__ import annotations

import os
import shutil
import sys

import anyio
import pytest
from attack_helpers import headless, no_traceback, run_cli
from corpus import SECRET, Victim, plain_repo, planted_spill_link, planted_state
from ctxagent.context.errors import StateDirError
from ctxagent.context.floor.state_paths import (
    STATE_ID_NAME,
    accept_state_dir,
    check_state_dir,
    ensure_state_dir,
    is_marked,
)
from ctxagent.context.spill import SpillStore
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.spill_tool import READ_SPILL
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PLANTED = ("PLANTED-CONSTRAINT", "PLANTED-SESSION", SECRET)
# Every command that reads the state folder: the refusal is the answer, nothing planted is shown.
COMMANDS = [["sessions"], ["report", "--last"], ["inspect", "--step", "1", "20990101-000000-planted"],
            ["memory", "list"], ["memory", "search", "upload"], ["memory", "stats"], ["rewind", "--list"],
            ["config"], ["doctor"]]


def _mcp(project: str, calls: list[tuple[str, dict[str, object]]]) -> list[tuple[bool, str]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "ctxagent.tui.cli", "mcp", "--project", project],
                                   env={**os.environ}, cwd=project)

    async def run() -> list[tuple[bool, str]]:
        out = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, args in calls:
                r = await session.call_tool(name, args)
                out.append((bool(r.is_error), "\n".join(getattr(c, "text", "") for c in r.content)))
        return out
    return anyio.run(run)


def test_an_unmarked_state_folder_is_refused_with_how_to_accept_it(victim: Victim) -> None:
    repo = planted_state(victim)
    for check in (check_state_dir, ensure_state_dir):
        with pytest.raises(StateDirError, match="did not create it") as exc:
            check(repo)
        assert "ctxagent trust --state" in str(exc.value) and "rm -rf" in str(exc.value)
    assert not is_marked(repo / ".ctxagent")
    assert not (repo / ".ctxagent" / STATE_ID_NAME).exists()  # refusing marks nothing


def test_the_agent_refuses_it_before_any_request(victim: Victim, servers) -> None:
    repo = planted_state(victim)
    srv = servers([{"text": "hi"}])
    for extra in ([], ["--continue"]):
        out = headless(repo, srv.base_url, "hello", *extra)
        no_traceback(out)
        assert out.returncode == 2 and "did not create it" in out.stderr, out.stderr
    assert srv.requests == []
    assert victim.escaped() == []


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_every_command_refuses_it(victim: Victim, args: list[str]) -> None:
    repo = planted_state(victim)
    out = run_cli(repo, *args)
    no_traceback(out)
    assert out.returncode != 0 and "did not create it" in out.stdout + out.stderr, (args, out.stdout, out.stderr)
    assert not any(p in out.stdout + out.stderr for p in PLANTED)


def test_mcp_refuses_it_in_every_tool(victim: Victim) -> None:
    repo = planted_state(victim)
    results = _mcp(str(repo), [("read_spill", {"handle": "ab" * 8}), ("search_memory", {"query": "upload ssh"}),
                               ("store_memory", {"content": "a fact", "type": "note"})])
    for is_error, text in results:
        assert is_error and "did not create it" in text, text
        assert not any(p in text for p in PLANTED)


def test_a_spill_link_is_never_followed(victim: Victim) -> None:
    """A folder ctxagent made, whose spill file is a link to the secret (planted later, or tracked)."""
    repo = planted_spill_link(victim)
    handle = "cd" * 8
    store = SpillStore.for_root(repo)
    with pytest.raises(Exception) as exc:
        store.get(handle)
    assert SECRET not in str(exc.value)
    r = READ_SPILL.run({"handle": handle}, ToolContext(root=repo))
    assert r.is_error and SECRET not in r.content
    ((is_error, text),) = _mcp(str(repo), [("read_spill", {"handle": handle})])
    assert is_error and SECRET not in text
    # the store's own write replaces the link, never writes through it
    link = repo / ".ctxagent" / "spill" / ("cd" * 32 + ".txt")
    assert link.is_symlink()
    assert victim.escaped() == []


def test_trust_state_accepts_it_and_then_it_is_used(victim: Victim) -> None:
    repo = planted_state(victim)
    out = run_cli(repo, "trust", "--state")
    assert out.returncode == 0 and "accepted" in out.stdout, out.stderr
    assert is_marked(repo / ".ctxagent")
    assert "PLANTED-CONSTRAINT" in run_cli(repo, "memory", "list").stdout  # the user's choice


def test_a_mark_cannot_be_copied(victim: Victim) -> None:
    """A folder ctxagent made, copied with its state-id into another repository (an archive of it):
    the copy is a new directory, so the record does not match it."""
    repo = plain_repo(victim, "first")
    state = ensure_state_dir(repo)
    (state / "memory.db").write_bytes(b"")
    assert is_marked(state) and check_state_dir(repo) == state
    other = plain_repo(victim, "second")
    shutil.copytree(state, other / ".ctxagent", symlinks=True)
    assert (other / ".ctxagent" / STATE_ID_NAME).read_text() == (state / STATE_ID_NAME).read_text()
    with pytest.raises(StateDirError, match="did not create it"):
        check_state_dir(other)
    # moving the original (same file system) keeps its mark
    moved = victim.home / "work" / "moved"
    os.rename(repo, moved)
    assert check_state_dir(moved) == moved / ".ctxagent"


def test_a_folder_with_only_a_config_is_adopted(victim: Victim) -> None:
    """The user wrote `.ctxagent/config.toml` by hand before the first run: nothing in it steers
    the agent unscreened (agent/trust.py screens the keys), so it is taken and marked."""
    repo = plain_repo(victim)
    (repo / ".ctxagent").mkdir()
    (repo / ".ctxagent" / "config.toml").write_text("max_steps = 7\n")
    assert check_state_dir(repo) == repo / ".ctxagent"
    ensure_state_dir(repo)
    assert is_marked(repo / ".ctxagent")
    (repo / ".ctxagent" / "memory.db").write_bytes(b"")
    assert check_state_dir(repo) == repo / ".ctxagent"


def test_accepting_never_lifts_the_structural_refusals(victim: Victim) -> None:
    repo = plain_repo(victim)
    (repo / ".ctxagent").mkdir()
    (repo / ".ctxagent" / "sessions").symlink_to(victim.home)
    with pytest.raises(StateDirError, match="symbolic link"):
        accept_state_dir(repo)
    assert victim.escaped() == []
