"""Typing is text (issue 30, item 9): in every box the app asks a question with, ordinary words — English
and Chinese, words that start with y, a, n, s, d, digits inside them — answer nothing and arrive intact
in the box's field; the deliberate keys (the digit on a button while the focus is not in a field, a
chord, Enter on a button) answer; Escape and an empty Enter give the safe answer. The rule is one class
(tui/app/screens/question.py `GuardedModal`), and the family is every subclass of it: a new box without a row here
fails `test_every_box_that_asks_is_in_this_family`.

And the reported case end to end: the permission box for write_file, "actually no, put it in README"
typed, then Enter — denied, the exact reason reaches the model (the real Anthropic SDK against the
loopback scripted server), nothing written."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent import (
    HandoffDrafted,
    InitDraft,
    PermissionDecision,
    PermissionRequest,
    SessionChanges,
    TurnInfo,
)
from ctxagent.agent.checkpoints.turns import FileStat
from ctxagent.tui.app.screens import question
from ctxagent.tui.app.screens.git_screens import CommitModal
from ctxagent.tui.app.screens.handoff import HandoffModal
from ctxagent.tui.app.screens.init_box import InitModal
from ctxagent.tui.app.screens.modals import BreakpointModal, PermissionModal, TrustModal
from ctxagent.tui.app.screens.pickers import ConfirmModal, SessionPicker
from ctxagent.tui.app.screens.plan import PlanAnswer, PlanModal
from ctxagent.tui.app.screens.question import Answer, GuardedModal
from ctxagent.tui.app.screens.rewind_screen import RewindChoice, RewindScreen
from textual import events
from textual.binding import Binding
from textual.widgets import Input, TextArea
from tui_helpers import ScreenHost, make_repo, screen_text, type_text, wait_until

pytestmark = pytest.mark.anyio

WRITE = PermissionRequest("c1", "write_file", "edit", {"path": "notes.md", "content": "hello\n"}, "notes.md (1 lines)\nhello")
ONCE_ONLY = PermissionRequest("c2", "write_file", "edit", {"path": "AGENTS.md", "content": "obey\n"},
                              "AGENTS.md (1 lines)\nobey", note="AGENTS.md is an instruction file", can_remember=False)
DRAFT = "Fix the add function.\n"
TURNS = [TurnInfo(1, 1, 0.0, "fix the add function", "c1", True, ["calc.py"], [FileStat("calc.py", "M", 1, 1)]),
         TurnInfo(2, 6, 0.0, "now run the tests", None, False)]
# Ordinary words a user types — replies, reasons, notes — each starting with a character, not a digit (a
# digit typed while the focus is outside a field is an answer key; inside the field it is text: see
# `test_digits_typed_into_the_field_stay_text`).
WORDS = [
    "actually no, put it in README",
    "no thanks",
    "yes but in docs/ instead",
    "allow nothing here",
    "sure, after the tests",
    "do it in 3 steps",
    "try 2 things first, then 1 more",
    "不要写这个文件，放到 README 里",
    "好的，改 2 处就行",
]


@dataclass(frozen=True)
class Box:
    """One box that asks: how to make it, its text field (a selector, "" for none), what each deliberate
    key answers, what Escape and an empty Enter give, and what Enter gives after `text` was typed."""

    name: str
    make: Callable[[], GuardedModal[Any]]
    field: str
    keys: dict[str, Any]
    safe: Any
    safe_with: Callable[[str], Any] | None = None  # Enter after typing in the field (None: Enter is a newline)
    enter_answers: bool = True  # an Enter with nothing focused / in a one-line field gives `safe`
    draft: str = ""  # what the field holds when the box opens
    cls: type[GuardedModal[Any]] = field(default=GuardedModal)


def _sessions() -> list[Path]:
    return [Path("/nonexistent/20250101-120000-aaaaaa.jsonl"), Path("/nonexistent/20250102-120000-bbbbbb.jsonl")]


BOXES = [
    Box("permission", lambda: PermissionModal(WRITE), "#perm-reason",
        {"1": PermissionDecision(allow=True), "2": PermissionDecision(allow=True, remember=True),
         "3": PermissionDecision(allow=False, reason="")},
        PermissionDecision(allow=False, reason=""), lambda text: PermissionDecision(allow=False, reason=text),
        cls=PermissionModal),
    Box("permission, no session allowance", lambda: PermissionModal(ONCE_ONLY), "#perm-reason",
        {"1": PermissionDecision(allow=True), "3": PermissionDecision(allow=False, reason="")},
        PermissionDecision(allow=False, reason=""), lambda text: PermissionDecision(allow=False, reason=text),
        cls=PermissionModal),
    Box("plan", lambda: PlanModal("Plan: change a - b to a + b. 计划完成。"), "#plan-note",
        {"1": PlanAnswer("ask"), "2": PlanAnswer("auto-edit"), "3": PlanAnswer("keep")},
        PlanAnswer("keep"), lambda text: PlanAnswer("keep", text), cls=PlanModal),
    Box("trust", lambda: TrustModal("permission_mode = \"yolo\" (asks for no permission)"), "",
        {"ctrl+t": True}, False, cls=TrustModal),
    Box("confirm", lambda: ConfirmModal("Overwrite files changed outside the agent since that turn?", "calc.py"), "",
        {"1": True, "2": False}, False, cls=ConfirmModal),
    Box("breakpoint", lambda: BreakpointModal(93.0), "",
        {"1": "new_session", "2": "compact", "3": "continue"}, "continue", cls=BreakpointModal),
    Box("commit", lambda: CommitModal(SessionChanges(files=[FileStat("calc.py", "M", 1, 1)]), DRAFT, "template"),
        "TextArea", {"ctrl+s": None}, None, enter_answers=False, draft=DRAFT, cls=CommitModal),
    Box("init", lambda: InitModal(InitDraft(DRAFT, "model", None)), "TextArea", {"ctrl+s": None}, None,
        enter_answers=False, draft=DRAFT, cls=InitModal),
    Box("handoff", lambda: HandoffModal(HandoffDrafted("goal", DRAFT, 7)), "TextArea", {"ctrl+s": None}, None,
        enter_answers=False, draft=DRAFT, cls=HandoffModal),
    Box("rewind", lambda: RewindScreen(TURNS), "",
        {"1": RewindChoice(2, "both"), "2": RewindChoice(2, "conversation"), "3": RewindChoice(2, "code")}, None,
        enter_answers=False, cls=RewindScreen),
    Box("session picker", lambda: SessionPicker(_sessions()), "", {}, None, enter_answers=False, cls=SessionPicker),
]
IDS = [b.name for b in BOXES]


def _editor_result(box: Box, text: str) -> Any:
    """What Ctrl+S gives in an editor whose draft is `text`: the text (AGENTS.md ends with a newline)."""
    return text if box.name != "init" or text.endswith("\n") else text + "\n"


@pytest.fixture
def armed() -> Iterator[Callable[[Any], Any]]:
    async def wait(pilot: Any) -> None:
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "armed", False))
        await pilot.pause()

    yield wait


def _field_text(app: ScreenHost, box: Box) -> str:
    widget = app.screen.query_one(box.field)
    return widget.value if isinstance(widget, Input) else widget.text if isinstance(widget, TextArea) else ""


def test_every_box_that_asks_is_in_this_family() -> None:
    """Every GuardedModal subclass the app has is driven here; every ModalScreen the app has either is
    one, or asks nothing (a page to read, a browser)."""
    import importlib
    import pkgutil

    import ctxagent.tui.app as app_package
    from textual.screen import ModalScreen

    for info in pkgutil.walk_packages(app_package.__path__, "ctxagent.tui.app."):
        importlib.import_module(info.name)

    def subclasses(cls: type) -> set[type]:
        out = set()
        for sub in cls.__subclasses__():
            out |= {sub} | subclasses(sub)
        return out

    asking = {c for c in subclasses(GuardedModal) if c.__module__.startswith("ctxagent.tui.")
              and not inspect.isabstract(c) and "compose" in vars(c)}
    assert asking == {b.cls for b in BOXES}
    readers = {c.__name__ for c in subclasses(ModalScreen) if c.__module__.startswith("ctxagent.tui.")
               and not issubclass(c, GuardedModal)}
    assert readers == {"InfoModal", "MemoryScreen", "ContextScreen", "AgentTranscriptScreen"}


@pytest.mark.parametrize("box", BOXES, ids=IDS)
async def test_words_typed_into_a_box_answer_nothing_and_arrive_intact(box: Box, armed: Any) -> None:
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        modal = app.screen
        typed = ""
        for words in WORDS:
            chunk = ("" if not typed else " ") + words
            await type_text(pilot, chunk)
            typed += chunk
            assert app.results == [] and app.screen is modal, f"{words!r} answered the {box.name} box"
            if box.field:
                assert _field_text(app, box) == typed + box.draft  # every character, in order, none taken as a key
        if box.field:  # an input method may commit its text as a paste: text too
            app.post_message(events.Paste(" 中文输入法"))
            await pilot.pause()
            typed += " 中文输入法"
            assert _field_text(app, box) == typed + box.draft and app.results == []
    assert app.results == []


@pytest.mark.parametrize("box", BOXES, ids=IDS)
async def test_the_deliberate_keys_answer(box: Box, armed: Any) -> None:
    for key, expected in box.keys.items():
        app = ScreenHost(box.make)
        async with app.run_test(size=(100, 34)) as pilot:
            await armed(pilot)
            if box.name == "rewind":  # the cursor starts on the newest turn; answers are about the one chosen
                await pilot.press("down")
            await pilot.press(key)
            await pilot.pause()
        want = _editor_result(box, box.draft) if box.field == "TextArea" and key == "ctrl+s" else expected
        assert app.results == [want], f"{key} in the {box.name} box"


@pytest.mark.parametrize("box", BOXES, ids=IDS)
async def test_escape_and_an_empty_enter_give_the_safe_answer(box: Box, armed: Any) -> None:
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [box.safe]
    if not box.enter_answers:
        return
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        assert app.screen.focused is None  # nothing is focused: Enter presses no button
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [box.safe]


@pytest.mark.parametrize("box", [b for b in BOXES if b.safe_with is not None], ids=lambda b: b.name)
async def test_enter_after_words_gives_the_safe_answer_with_them(box: Box, armed: Any) -> None:
    assert box.safe_with is not None
    for words in ("actually no, put it in README", "不要改这个，先跑测试", "yes — but 2 spaces, not tabs"):
        app = ScreenHost(box.make)
        async with app.run_test(size=(100, 34)) as pilot:
            await armed(pilot)
            await type_text(pilot, words)
            await pilot.press("enter")
            await pilot.pause()
        assert app.results == [box.safe_with(words)]


@pytest.mark.parametrize("box", [b for b in BOXES if b.field], ids=lambda b: b.name)
async def test_digits_typed_into_the_field_stay_text(box: Box, armed: Any) -> None:
    """Once the focus is in the field (clicked, tabbed to, or a letter typed), a digit is text, even first."""
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        app.screen.query_one(box.field).focus()
        await pilot.pause()
        await type_text(pilot, "2 spaces, not 1 tab; 3 files")
        assert app.results == [] and _field_text(app, box) == "2 spaces, not 1 tab; 3 files" + box.draft
        await pilot.press("ctrl+s" if box.field == "TextArea" else "enter")
        await pilot.pause()
    text = "2 spaces, not 1 tab; 3 files"
    assert app.results == [_editor_result(box, text + box.draft) if box.safe_with is None else box.safe_with(text)]


@pytest.mark.parametrize("final", ["enter", "digit"])
@pytest.mark.parametrize("box", [b for b in BOXES if any(k in question.DIGITS for k in b.keys)], ids=lambda b: b.name)
async def test_tab_onto_the_buttons_then_enter_or_a_digit_answers(box: Box, final: str, armed: Any) -> None:
    """After words in the field, Tab reaches the buttons: Enter presses the focused one, and a digit answers again."""
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        if box.field:
            await type_text(pilot, "hm")
        first = app.screen.answers()[0]
        for _ in range(8):  # past the field, and the preview (it scrolls), to the first button
            if getattr(app.screen.focused, "id", None) == first.value:
                break
            await pilot.press("tab")
            await pilot.pause()
        assert getattr(app.screen.focused, "id", None) == first.value
        await pilot.press("enter" if final == "enter" else first.key)
        await pilot.pause()
    expected = box.keys[first.key]
    assert app.results == [PlanAnswer(expected.mode, "hm") if isinstance(expected, PlanAnswer) else expected]


@pytest.mark.parametrize("box", BOXES, ids=IDS)
async def test_keys_typed_ahead_answer_nothing(box: Box) -> None:
    """Meant for the prompt, typed on while the box appears: none of it answers, none of it is kept."""

    def patient() -> GuardedModal[Any]:
        modal = box.make()
        modal.ARM_SECONDS = 3.0  # longer than any gap between two keys of this test under load
        return modal

    app = ScreenHost(patient)
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        modal = app.screen
        assert modal.focused is None
        await pilot.press(*"yes", "enter", *"1", "tab", "enter", *"2", "ctrl+t", "ctrl+s", *"3", "enter")
        await pilot.pause()
        assert app.results == [] and app.screen is modal and not modal.armed
        if box.field:
            assert _field_text(app, box) == box.draft
    assert app.results == []


def test_a_box_cannot_bind_a_key_that_could_be_typed() -> None:
    for key in ("y", "a", "n", "1", "space", "question_mark", "shift+y", "escape,x"):
        with pytest.raises(TypeError, match="could be typed text"):
            type("Bad", (GuardedModal,), {"BINDINGS": [Binding(key, "app.bell", "answer")]})
    for key in ("y", "a", "0", " ", "中", "slash"):
        with pytest.raises(ValueError, match="could be typed text"):
            Answer("yes", "Yes", key)
    type("Fine", (GuardedModal,), {"BINDINGS": [Binding("up,pageup,ctrl+y,escape,f2,shift+tab", "app.bell", "x")]})
    assert Answer("yes", "Yes", "1").key == "1" and Answer("trust", "Trust", "ctrl+t").key == "ctrl+t"


@pytest.mark.parametrize("box", BOXES, ids=IDS)
async def test_the_keys_are_on_the_buttons_and_in_the_border(box: Box, armed: Any) -> None:
    app = ScreenHost(box.make)
    async with app.run_test(size=(100, 34)) as pilot:
        await armed(pilot)
        text = " ".join(screen_text(app).translate({ord(c): " " for c in "█▀▄▊▎▔▁"}).split())  # the box's lines, unwrapped
        modal = app.screen
        for a in modal.answers():
            assert f"[{question.key_label(a.key)}] {a.label}" in text  # on its button
        assert " ".join(modal.keys_line().split()) in text  # and all of them in the box's bottom border
    if box.name == "permission":
        assert "1/2/3: answer · type: the reason · Enter/Esc: deny" in text


# -- the reported case, end to end ---------------------------------------------------------------------

BIN = Path(sys.executable).with_name("ctxagent")


@pytest.fixture
def loopback(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], tuple[str, Path]]]:
    procs: list[subprocess.Popen[str]] = []

    def start(script: list[dict[str, Any]]) -> tuple[str, Path]:
        path, record = tmp_path / f"server{len(procs)}.json", tmp_path / f"record{len(procs)}.jsonl"
        path.write_text(json.dumps(script), encoding="utf-8")
        proc = subprocess.Popen([str(BIN), "scripted-server", str(path), "--port", "0", "--record", str(record)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        return first.split("listening on ", 1)[1], record

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


async def test_a_reason_typed_in_the_permission_box_denies_with_it_and_reaches_the_model(
        tmp_path: Path, loopback: Any, armed: Any) -> None:
    """The report: typing "actually no, put it in README" allowed write_file for the session and wrote
    the file. Now: denied, the model gets exactly that reason, nothing is written or allowed."""
    from ctxagent.agent.config import load_config
    from ctxagent.agent.factory import create_agent
    from ctxagent.agent.session import open_session
    from ctxagent.tui.app.app import CtxApp
    from tui_helpers import ready

    reason = "actually no, put it in README"
    write = {"name": "write_file", "arguments": {"path": "NOTES.md", "content": "# Notes\n"}}
    url, record = loopback([{"tool_calls": [write]}, {"text": "Understood: README it is."}])
    repo = make_repo(tmp_path / "repo")
    config = load_config(repo, {"model": "anthropic:claude-sonnet-5-5", "base_url": url,
                                "anthropic_api_key": "sk-ant-test-0000000000", "permission_mode": "ask"})
    session = open_session(repo, config)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 34)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "write the notes file"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        await armed(pilot)
        await type_text(pilot, reason)  # its a, n and y are the reason's
        assert isinstance(app.screen, PermissionModal) and not session.log.of_kind("permission")
        assert app.screen.query_one("#perm-reason", Input).value == reason
        await pilot.press("enter")
        await wait_until(pilot, lambda: not screen.busy)
        assert not screen.agent.allowed_for_session  # nothing allowed for the session, unasked
    session.log.close()
    assert [(e.data["decision"], e.data["reason"]) for e in session.log.of_kind("permission")] == [("deny", reason)]
    assert not (repo / "NOTES.md").exists()
    requests = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(requests) == 2
    results = [block for message in requests[1]["body"]["messages"] if isinstance(message.get("content"), list)
               for block in message["content"] if block.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is True
    content = results[0]["content"]
    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    assert text == f"permission denied for write_file. Reason: {reason}"
