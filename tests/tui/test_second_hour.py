"""A newcomer's second hour (issue 24, items 2–6), in the app: a code-only /rewind is told to the model, a
failing test run is marked as one, a resumed session keeps its model, each call keeps its price after /model, and /context's budgets add up
to the window. The real Agent, tools and session log; the in-process scripted model, or the loopback
scripted server with the real SDKs where a priced model is needed."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import flags_from_args, load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.providers.registry import cost_usd, model_info, parse_model_name
from ctxagent.agent.session import open_session
from ctxagent.context.request import Usage
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.context_screen import ContextScreen, slice_rows
from ctxagent.tui.app.screens.pickers import InfoModal
from ctxagent.tui.app.widgets.chat import ToolPanel
from tui_helpers import answer, make_repo, make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio

BIN = Path(sys.executable).with_name("ctxagent")
SONNET, MINI = "anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"


def price(label: str, usage: Usage) -> float:
    """One call's dollars at `label`'s registry prices (the expected value, computed here by hand)."""
    provider, model = parse_model_name(label)
    return float(cost_usd(model_info(provider, model), usage))


async def test_a_code_only_rewind_is_told_to_the_model_in_the_next_request(tmp_path: Path) -> None:
    """/rewind, `o` (code only): the files go back, the conversation stays, and the next request's
    working memory no longer says the undone change holds — it says it was undone."""
    pytest_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    session = make_session(tmp_path, [
        {"text": "Fixing.", "tool_calls": [
            {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}},
            {"name": "run_tests", "arguments": {"command": pytest_cmd}}]},
        {"text": "Fixed; 1 passed."},
        {"text": "Back to the subtraction, then."},
    ])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add and run the tests")
        assert "a + b" in (session.root / "calc.py").read_text()
        await send(pilot, app, "/rewind")
        from ctxagent.tui.app.screens.rewind_screen import RewindScreen

        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        await answer(pilot, "3")  # code only
        await wait_until(pilot, lambda: not screen.busy and not isinstance(app.screen, RewindScreen))
        assert "a - b" in (session.root / "calc.py").read_text()
        assert session.log.events[-1].kind == "code_rewind" and not session.log.of_kind("rewind")
        await send(pilot, app, "what state is calc.py in?")
        body = screen.agent.parts.provider.requests[-1]
        warm = "\n".join(m["content"] for m in body["messages"] if m.get("kind") == "warm")
        assert "the user rewound the code to before turn 1" in warm and "restored: calc.py" in warm
        assert "calc.py (turn 1)" not in warm and "edited calc.py" not in warm and "1 passed" not in warm
        assert "Fixing." in json.dumps(body)  # the conversation itself is kept


async def test_a_failing_test_run_is_marked_failed_with_its_counts(tmp_path: Path) -> None:
    """A run that cannot import its tests exits 2 with two errors: the panel says so (not "✓ ok")."""
    command = f"{sys.executable} -m pytest -p no:cacheprovider tests_broken"
    session = make_session(tmp_path, [
        {"text": "Running the tests.", "tool_calls": [{"name": "run_tests", "arguments": {"command": command}}]},
        {"text": "Two errors."},
    ])
    broken = session.root / "tests_broken"
    broken.mkdir()
    (broken / "test_a.py").write_text("import missing_module_xyz\n", encoding="utf-8")
    (broken / "test_b.py").write_text("def test_b(:\n", encoding="utf-8")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "run the tests")
        (panel,) = [p for p in screen.query(ToolPanel) if p.tool_name == "run_tests"]
        assert panel.status == "tests failed" and panel.has_class("-error")
        text = screen_text(app)
        assert "✗ run_tests" in text and "✗ run_tests · tests failed: 0 passed, 0 failed, 2 errors (exit 2)" in text
        assert "✓ run_tests" not in text
    # the same mark when the session is shown again (a resume rebuilds the chat from the log)
    session.log.close()  # the app has quit: its session is released (a session is locked while open)
    app = CtxApp(open_session(session.root, session.config, session.id), create_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await ready(pilot, app)
        (panel,) = [p for p in screen.query(ToolPanel) if p.tool_name == "run_tests"]
        assert panel.status == "tests failed" and "2 errors (exit 2)" in panel.detail


async def test_a_resumed_session_keeps_the_model_it_was_switched_to(tmp_path: Path) -> None:
    from ctxagent.tui.app.app import config_from_args, open_from_args  # what `ctxagent --resume ID` opens

    session = make_session(tmp_path, [{"text": "from the first model"}])
    first = tmp_path / "script.json"
    second = tmp_path / "second.json"
    second.write_text(json.dumps([{"text": "from the second model"}] * 3), encoding="utf-8")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "hello")
        await send(pilot, app, f"/model scripted:{second}")
        await send(pilot, app, "and you?")
        assert screen.agent.model_label == f"scripted:{second}"
    session.log.close()
    # `ctxagent --resume ID` with no --model: the config names none (no key either)
    args = argparse.Namespace(resume=session.id, cwd=str(session.root))
    assert load_config(session.root, flags_from_args(args)).model is None
    resumed = open_from_args(args)
    # trusting the repository reloads the config: the resumed session stays on its model
    assert config_from_args(args, resumed).model == f"scripted:{second}"
    app = CtxApp(resumed, create_agent, probe=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        assert screen.agent.model_label == f"scripted:{second}"
        await send(pilot, app, "still there?")
        assert screen.agent.session.log.events[-1].data.get("text") == "from the second model"
    resumed.log.close()
    # --model on the command line wins over the session's own
    named = open_from_args(argparse.Namespace(resume=session.id, cwd=str(session.root), model=f"scripted:{first}"))
    assert named.config.model == f"scripted:{first}"
    named.log.close()


async def test_a_resume_says_when_the_log_named_another_base_url(tmp_path: Path) -> None:
    """A base URL planted in the log (the repository's state folder) is not followed: the app says, in
    one line, where the session ran and where it goes now — and the request goes where the config says."""
    from ctxagent.agent.session import session_endpoint
    from ctxagent.context.events import SessionStartData
    from ctxagent.context.history import SessionLog
    from ctxagent.tui.app.app import open_from_args
    from ctxagent.tui.app.widgets.chat import NoticeLine

    session = make_session(tmp_path, [{"text": "answered"}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "hello")
    session.log.close()
    label = session.config.model
    log = SessionLog.open(session.log.path)
    log.append(SessionStartData(session=session.id, model=label, provider="scripted",
                                base_url="https://collector.example/v1"))
    log.sync()
    log.close()
    resumed = open_from_args(argparse.Namespace(resume=session.id, cwd=str(session.root)))
    app = CtxApp(resumed, create_agent, probe=False)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await ready(pilot, app)
        lines = [n.message for n in screen.query(NoticeLine) if "this session ran against" in n.message]
        assert lines == ["this session ran against https://collector.example/v1, now scripted's own URL from "
                         "your config (the session log never chooses where requests go)"]
        assert "collector.example" in screen_text(app)
        await send(pilot, app, "again")
        assert screen.agent.session.log.events[-1].data.get("text") == "answered"  # the script, from its start
    endpoint = session_endpoint(SessionLog.load(session.log.path))
    assert endpoint is not None and endpoint.base_url == ""  # where it went, recorded again
    resumed.log.close()


async def test_the_context_budgets_add_up_to_the_window(tmp_path: Path) -> None:
    """A reserve larger than its fraction (the output limit) is not counted twice: hot gets the rest."""
    session = make_session(tmp_path, [{"text": "Answered."}] * 3, window=16_000, budget_profile="coding",
                           max_output_tokens=2_000)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 60)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "hello")
        await send(pilot, app, "/context")
        assert isinstance(app.screen, ContextScreen)
        budget = screen.agent.parts.budget
        report = screen.agent.last_report
        rows = slice_rows(report, {s: budget.base(s) for s in budget.fractions})
        assert sum(r.share or 0 for r in rows) == 16_000
        assert {r.name: r.share for r in rows}["reserve"] == budget.reserve == 2_000
        assert {r.name: r.share for r in rows}["hot"] == 16_000 - 2_000 - sum(budget.base(s) for s in ("system", "warm", "tools"))
        text = screen_text(app)
        assert "6.8k" in text and "Every number here is in that unit" in text


@pytest.fixture
def loopback() -> Iterator[Any]:
    procs: list[subprocess.Popen[str]] = []

    def start(script: list[dict[str, Any]], folder: Path) -> str:
        path = folder / f"server{len(procs)}.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        proc = subprocess.Popen([str(BIN), "scripted-server", str(path), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        return first.split("listening on ", 1)[1]

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


async def test_cost_after_a_model_switch_prices_each_call_with_its_own_model(tmp_path: Path, loopback: Any) -> None:
    url = loopback([{"text": "answer one " * 40}, {"text": "answer two"}, {"text": "answer three"}], tmp_path)
    repo = make_repo(tmp_path / "repo")
    # --base-url is the session's own provider's (Anthropic's): the OpenAI model /model switches to is sent
    # to the URL the user set for OpenAI (the same loopback server here), never to Anthropic's
    config = load_config(repo, {"model": SONNET, "base_url": url, "openai_base_url": url,
                                "anthropic_api_key": "sk-ant-test-0000000000",
                                "openai_api_key": "sk-test-openai-0000000000", "permission_mode": "yolo"})
    session = open_session(repo, config)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 60)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "hello")
        first = [e for e in session.log.events if e.kind == "assistant"][-1].assistant.usage
        sonnet = price(SONNET, first)
        assert sonnet > 0
        assert screen.status.info.cost == pytest.approx(sonnet)
        await send(pilot, app, f"/model {MINI}")
        assert screen.agent.model_label == MINI
        assert screen.status.info.cost == pytest.approx(sonnet)  # the Sonnet call keeps its Sonnet price
        await send(pilot, app, "and now?")
        second = [e for e in session.log.events if e.kind == "assistant"][-1].assistant.usage
        mini = price(MINI, second)
        assert mini > 0 and screen.status.info.cost == pytest.approx(sonnet + mini)
        await send(pilot, app, "/cost")
        assert isinstance(app.screen, InfoModal)
        text = screen_text(app)
        assert f"${sonnet + mini:.4f}" in text and SONNET in text and MINI in text
    session.log.close()
    # and a resume prices the whole log the same way, whatever model it resumes with
    again = open_session(repo, load_config(repo, {"model": SONNET, "base_url": url, "anthropic_api_key": "sk-ant-test-0000000000"}),
                         session.id)
    app = CtxApp(again, create_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await ready(pilot, app)
        assert screen.status.info.cost == pytest.approx(sonnet + mini)
