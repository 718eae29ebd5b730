"""Plan mode's rules (agent/permissions.py, the one place): which calls run unasked in each mode,
plan mode's refusal, the Shift+Tab cycle, the flag and the config key, and that a repository may
set plan mode (it only does less) but never yolo."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from ctxagent.agent.config import Config, flags_from_args, load_config
from ctxagent.agent.permissions import PERMISSION_MODES, next_mode, plan_refusal, runs_unasked
from ctxagent.context.events import PLAN_NOTE, UserData
from ctxagent.tui.cli.main import PERMISSION_MODES as FLAG_MODES, build_parser
from pydantic import ValidationError


def test_the_flag_offers_the_modes_of_the_one_definition() -> None:
    assert FLAG_MODES == PERMISSION_MODES
    assert Config(permission_mode="plan").permission_mode == "plan"
    with pytest.raises(ValidationError):
        Config(permission_mode="bogus")


def test_the_flag_sets_the_mode_and_yes_still_means_yolo() -> None:
    args = build_parser(["--permission-mode", "plan"]).parse_args(["--permission-mode", "plan"])
    assert flags_from_args(args)["permission_mode"] == "plan"
    assert flags_from_args(argparse.Namespace(yes=True, permission_mode="plan"))["permission_mode"] == "yolo"
    assert flags_from_args(argparse.Namespace())["permission_mode"] is None  # not given: the config's


@pytest.mark.parametrize(("mode", "kind", "unasked"), [
    ("ask", "edit", False), ("ask", "command", False), ("auto-edit", "edit", True), ("auto-edit", "command", False),
    ("plan", "edit", False), ("plan", "command", False), ("yolo", "edit", True), ("yolo", "command", True),
])
def test_what_runs_unasked(mode: str, kind: str, unasked: bool) -> None:
    assert runs_unasked(mode, kind) is unasked


def test_plan_mode_refuses_everything_but_reads_and_says_why() -> None:
    assert plan_refusal("plan", "read_file", "read") is None
    assert plan_refusal("ask", "edit_file", "edit") is None
    edit = plan_refusal("plan", "edit_file", "edit")
    command = plan_refusal("plan", "run_tests", "command")
    assert edit is not None and "edit_file would change files" in edit and "final message" in edit
    assert command is not None and "run_tests would run a command" in command


def test_shift_tab_cycles_and_reaches_yolo_only_from_a_yolo_start() -> None:
    seen, mode = [], "ask"
    for _ in range(4):
        mode = next_mode(mode)
        seen.append(mode)
    assert seen == ["auto-edit", "plan", "ask", "auto-edit"]
    assert [next_mode(m, "yolo") for m in ("ask", "auto-edit", "plan", "yolo")] == ["auto-edit", "plan", "yolo", "ask"]


def test_a_repository_may_set_plan_but_not_yolo(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text('permission_mode = "plan"\n')
    assert load_config(tmp_path, env={}).permission_mode == "plan"
    (tmp_path / ".ctxagent" / "config.toml").write_text('permission_mode = "yolo"\n')
    cfg = load_config(tmp_path, env={})
    assert cfg.permission_mode == "ask" and [k.key for k in cfg.ignored_keys] == ["permission_mode"]


def test_the_plan_note_is_sent_with_the_message_and_not_logged_in_its_text() -> None:
    planned = UserData(text="修复登录", turn=1, plan=True)
    assert planned.sent_text == f"修复登录\n\n{PLAN_NOTE}" and planned.to_data()["text"] == "修复登录"
    plain = UserData(text="hi", turn=1)
    assert plain.sent_text == "hi" and "plan" not in plain.to_data()  # logs of other modes do not change


def test_in_plan_mode_the_model_is_refused_and_the_users_own_command_runs(make_agent) -> None:
    """Plan mode holds the model to read-only tools; a `!command` the user typed is theirs: it runs
    unasked (agent/permissions.py must_ask), in the sandbox like every command."""
    from ctxagent.agent.updates import PermissionDecision, PermissionRequest

    asked: list[PermissionRequest] = []

    def approve(req: PermissionRequest) -> PermissionDecision:
        asked.append(req)
        return PermissionDecision(allow=True)

    agent, _, _ = make_agent([{"tool_calls": [{"name": "shell", "arguments": {"command": "touch by_model"}}]},
                              {"text": "Plan: nothing to change."}], approver=approve, mode="plan")
    root = agent.session.root
    done = agent.run_turn("plan it")
    assert done.stop_reason == "end_turn" and not (root / "by_model").exists() and asked == []
    result = agent.session.log.of_kind("tool_result")[-1].tool_result
    assert result.is_error and result.content.startswith("refused: plan mode is on, and shell would run a command")
    agent.run_command("touch by_user")
    assert asked == [] and (root / "by_user").exists()
    assert [u.user.plan for u in agent.session.log.of_kind("user")] == [True, None]  # a !command calls no model


def test_a_mode_changed_during_a_session_is_logged_before_the_step_that_runs_under_it(make_agent) -> None:
    """The mode may change while a turn runs (Shift+Tab from the app's thread); the agent's step logs it
    before its request (`record_mode`), once, so `inspect` and a resume know the mode of each step."""
    from ctxagent.agent.permissions import more_permissive
    from ctxagent.agent.session import session_mode

    agent, _, _ = make_agent([{"text": "one"}, {"text": "two"}, {"text": "three"}], mode="ask")
    log = agent.session.log
    assert session_mode(log) == "ask"  # the start names it: no event needed
    agent.run_turn("first")
    assert [e for e in log.events if e.kind == "permission_mode"] == []
    agent.session.config.permission_mode = "plan"
    agent.run_turn("second")
    agent.run_turn("third")
    modes = [e for e in log.events if e.kind == "permission_mode"]
    assert [e.data["mode"] for e in modes] == ["plan"]
    second_report = [e for e in log.events if e.kind == "context_report"][1]
    assert [e.id for e in log.events if e.kind == "user"][1] < modes[0].id < second_report.id
    assert session_mode(log) == "plan"
    assert [more_permissive(a, b) for a, b in (("auto-edit", "ask"), ("plan", "ask"), ("yolo", "auto-edit"),
                                                ("ask", "ask"), ("bogus", "yolo"))] == [True, False, True, False, True]
