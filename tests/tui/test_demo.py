"""`ctxagent demo`: the throwaway repo, the shipped script, the real Anthropic SDK against the loopback
scripted server, and the app — spill, permission prompts and the 75 % breakpoint all show up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.agent.config import load_config
from ctxagent.agent.factory import calibration_path, create_agent
from ctxagent.agent.session import open_session
from ctxagent.context import usage_text
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.modals import PermissionModal
from ctxagent.tui.app.widgets.chat import ToolPanel
from ctxagent.tui.app.widgets.reply import AssistantMessage
from ctxagent.tui.lab.scripted.demo import (
    DEMO_LABEL,
    DEMO_MODEL,
    DEMO_PROMPT,
    OWNER_FILE,
    create_demo_repo,
    demo_script,
    prepare_demo,
)
from tui_helpers import answer, ready, screen_text, wait_until

pytestmark = pytest.mark.anyio


def test_demo_repo_is_a_clean_git_repo_with_a_failing_test(tmp_path: Path) -> None:
    repo = create_demo_repo(tmp_path)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True)
    assert status.stdout == ""  # .ctxagent/ ignores itself
    assert "return a - b" in (repo / "calc.py").read_text()
    assert len((repo / "logs" / "server.log").read_text().splitlines()) > 2000
    failing = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=repo, capture_output=True, text=True)
    assert failing.returncode != 0
    names = [c["name"] for t in demo_script() for c in t.get("tool_calls", [])]
    assert names[:4] == ["read_file", "run_tests", "edit_file", "run_tests"] and "grep" in names


def test_demo_is_a_registered_subcommand() -> None:
    out = subprocess.run([str(Path(sys.executable).with_name("ctxagent")), "demo", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "scripted" in out.stdout


async def test_demo_session_end_to_end(tmp_path: Path) -> None:
    demo = prepare_demo(tmp_path)
    try:
        session = open_session(demo.repo, load_config(demo.repo, demo.flags))
        app = CtxApp(session, create_agent, label=DEMO_LABEL, initial_input=DEMO_PROMPT)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await ready(pilot, app)
            assert screen.input.value == DEMO_PROMPT
            assert DEMO_LABEL in screen_text(app)
            await pilot.press("enter")
            while screen.busy or isinstance(app.screen, PermissionModal):
                await wait_until(pilot, lambda: not screen.busy or isinstance(app.screen, PermissionModal), timeout=30)
                if isinstance(app.screen, PermissionModal):
                    await answer(pilot, "2")  # allow for the session: this edit, this test command
                    await pilot.pause()
            await pilot.pause()
            panels = {p.tool_name: p for p in screen.query(ToolPanel)}
            assert set(panels) >= {"read_file", "run_tests", "edit_file", "grep"}
            assert any(p.meta.get("spill") for p in screen.query(ToolPanel))  # the big log was spilled
            assert "return a + b" in (demo.repo / "calc.py").read_text()
            assert "## Done" not in screen_text(app) and "Done" in screen.query(AssistantMessage).last().text
            assert screen.gauge.report is not None and screen.gauge.report.usage_pct >= 75
            assert screen.bar.shown  # the breakpoint prompt appeared
            assert screen.gauge.level == screen.level == "compress"  # the bar and the gauge say the same
            # ... and the same figure: the bar shows the last step's usage, not the one where it first crossed
            assert f"Context {usage_text(screen.gauge.report.usage_pct)} full" in screen_text(app)
        session.log.close()
        assert calibration_path(DEMO_MODEL).is_file()  # what the run learnt of the scripted model's counts …
    finally:
        demo.stop()
    assert not calibration_path(DEMO_MODEL).exists()  # … goes with the demo


def test_the_demo_removes_its_repository_and_trust_entry_when_it_stops(tmp_path: Path) -> None:
    """`ctxagent demo` leaves nothing behind: not the throwaway repository, not its trust entry, not the
    record of its state folder (--keep keeps them, for a look afterwards)."""
    from ctxagent.agent.trust import is_trusted, trusted_repos
    from ctxagent.context.floor.state_paths import registry_dir

    records = set(registry_dir().glob("*.json")) if registry_dir().is_dir() else set()
    demo = prepare_demo(tmp_path)
    base = demo.repo.parent
    assert demo.repo.is_dir() and is_trusted(demo.repo) and set(registry_dir().glob("*.json")) - records
    demo.stop()
    assert not base.exists() and not is_trusted(demo.repo) and demo.repo not in trusted_repos()
    assert set(registry_dir().glob("*.json")) == records
    assert tmp_path.is_dir()  # only what the demo made: never the folder it was given
    kept = prepare_demo(tmp_path, keep=True)
    kept.stop()
    assert kept.repo.is_dir() and is_trusted(kept.repo)


def test_a_demo_removes_what_killed_demos_left_and_nothing_else(tmp_path: Path) -> None:
    """Each demo folder names its owner's pid; a demo starts by removing the folders whose owner is gone
    (a killed demo cannot clean up), with their trust entries. A live owner's folder, a kept one and one
    without an owner stay."""
    from ctxagent.agent.trust import is_trusted
    from ctxagent.tui.lab.scripted.demo import remove_stale_demos

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead_pid = int(gone.stdout)  # a real process that has ended
    stale = create_demo_repo(tmp_path)
    (stale.parent / OWNER_FILE).write_text(f"{dead_pid}\n", encoding="ascii")
    live = create_demo_repo(tmp_path)  # owned by this process, which runs
    unowned = create_demo_repo(tmp_path)
    (unowned.parent / OWNER_FILE).unlink()  # an older ctxagent's
    assert is_trusted(stale)
    demo = prepare_demo(tmp_path)
    try:
        assert not stale.parent.exists() and not is_trusted(stale)
        assert live.is_dir() and unowned.is_dir() and demo.repo.is_dir()
        assert int((demo.repo.parent / OWNER_FILE).read_text(encoding="ascii")) == os.getpid()
    finally:
        demo.stop()
    kept = prepare_demo(tmp_path, keep=True)
    kept.stop()  # the user's folder now: it names no owner, so no later demo takes it for stale
    assert not (kept.repo.parent / OWNER_FILE).exists()
    assert remove_stale_demos(tmp_path) == [] and kept.repo.is_dir() and live.is_dir() and unowned.is_dir()
