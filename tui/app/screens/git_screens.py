"""/diff and /commit: this session's changes in a scrollable screen, and a drafted commit message the
user edits and confirms in a box. Nothing is committed unasked (agent/checkpoints/session_changes.py
says how the commit runs: exactly the session's files, `--no-verify`, through gitsafe)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.tui.app.messages import Outcome
from ctxagent.tui.app.safe import plain
from ctxagent.tui.app.screens.modals import EDITOR_CSS, EditorModal
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

if TYPE_CHECKING:
    from ctxagent.agent import SessionChanges
    from ctxagent.tui.app.control import SessionControl

HOOKS_NOTE = ("Runs git commit --no-verify on exactly these files: the repository's commit hooks are programs it "
              "chose and are not run (run them yourself, or amend in a terminal); what you staged besides stays staged.")


def patch_text(patch: str) -> Text:
    """A patch coloured by line kind (the text itself is made safe: plain())."""
    out = Text()
    for line in patch.splitlines():
        style = ("bold" if line.startswith(("diff --git", "+++", "---")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        out.append_text(plain(line + "\n", style))
    return out


def files_text(changes: SessionChanges) -> Text:
    out = Text()
    for f in changes.files:
        counts = " (binary)" if f.added is None else f" +{f.added} -{f.deleted}"
        out.append_text(plain(f"  {f.status} {f.path}{counts}\n"))
    return out


class DiffScreen(Screen[None]):
    """The session's changes since its first checkpoint: the files, then the patch (Esc or q: back)."""

    DEFAULT_CSS = "DiffScreen #diff-head { padding: 0 1; } DiffScreen #diff-body { padding: 0 1; }"
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, changes: SessionChanges) -> None:
        super().__init__()
        self.changes = changes

    def compose(self) -> ComposeResult:
        c = self.changes
        head = Text("This session's changes — since the agent's first change (edits made outside the agent "
                    "since then included)\n", style="bold")
        head.append_text(plain(c.summary() + "\n"))
        head.append_text(files_text(c))
        with VerticalScroll(id="diff-scroll"):
            yield Static(head, id="diff-head")
            body = patch_text(c.patch)
            if c.cut:
                body.append(f"\n⟨… {c.cut:,} more characters of the patch not shown …⟩\n", style="dim")
            yield Static(body, id="diff-body")
        yield Footer()


class CommitModal(EditorModal):
    """The drafted message in an editor: Ctrl+S commits (dismisses with the text), Esc cancels (None)."""

    DEFAULT_CSS = EDITOR_CSS.format(name="CommitModal")
    EMPTY = "The commit message is empty."
    CONFIRM = "Commit"

    def __init__(self, changes: SessionChanges, draft: str, how: str) -> None:
        super().__init__()
        self.changes, self.text, self.how = changes, draft, how

    def compose(self) -> ComposeResult:
        source = "drafted by the model" if self.how == "model" else f"a {self.how}"
        with Vertical():
            yield Static(Text("■ Commit this session's changes", style="bold"))
            yield Static(files_text(self.changes))
            yield Static(plain(f"The message ({source}): edit it, then commit. {HOOKS_NOTE}"))
            yield TextArea(self.text, id="commit-text", soft_wrap=True)
            yield from self.answer_widgets()


def show_diff(control: SessionControl) -> None:
    """/diff: read the checkpoints on a worker, then open the screen (or say there is nothing)."""
    from ctxagent.agent import session_changes

    agent = control.agent
    assert agent is not None

    def work() -> Outcome:
        changes = session_changes(agent.checkpoints, control.session.log)
        if not changes.files:
            return Outcome(True, f"/diff: {changes.note}")

        def show() -> None:
            control.app.push_screen(DiffScreen(changes))

        return Outcome(True, then=show)

    control.start_action("diff", work, activity="reading checkpoints")


def start_commit(control: SessionControl) -> None:
    """/commit: the changes and a drafted message on a worker (the model may be asked), then the box."""
    from ctxagent.agent import draft_message, session_changes

    agent = control.agent
    assert agent is not None

    def work() -> Outcome:
        changes = session_changes(agent.checkpoints, control.session.log)
        if not changes.files:
            return Outcome(True, f"/commit: nothing to commit — {changes.note}")
        text, how = draft_message(changes, agent.parts.summarize)

        def ask() -> None:
            control.app.push_screen(CommitModal(changes, text, how), lambda msg: _confirmed(control, changes, msg))

        return Outcome(True, then=ask)

    control.start_action("commit", work, activity="drafting the commit message")


def _confirmed(control: SessionControl, changes: SessionChanges, message: str | None) -> None:
    from ctxagent.agent import commit_changes

    if message is None:
        control.notice("/commit cancelled: nothing committed")
        return

    def work() -> Outcome:
        done = commit_changes(control.session.root, changes.paths, message)
        return Outcome(done.ok, f"committed {done.detail}" if done.ok else f"/commit: {done.detail}")

    control.start_action("commit", work, activity="committing")
