"""A question the app asks in a box, and the one rule every such box keeps: typing is text.

Every box that asks (permission, plan, trust, /commit, /init, /handoff, the full window, a yes/no
confirmation, the /rewind and /resume pickers) is a `GuardedModal`, and the rule lives here, once:

- A key typed into a text field is the field's: every printable key, digits and CJK included, and every
  key of the same burst after the one that started the field (the focus moves at once, not after them).
- An answer is a deliberate key: the digit on a button (1, 2, 3, as Claude Code uses) pressed while no
  text field has the focus, a chord no text contains (Ctrl+S, Ctrl+T), or Enter on a button reached with
  Tab. Escape, and an Enter with nothing focused or in a one-line field, give the box's safe answer
  (deny, no, keep planning, cancel), with what was typed in the field (the reason for a denial).
- A character typed while the focus is in no field (a letter, a space, what an input method commits)
  starts the field's text. In a box without a field it answers nothing, and words make the box wait for
  a quiet moment again: the digit of "try 2 things" answers nothing either. A digit typed first, outside
  every field, is an answer key; a reason that begins with one is typed after a click or Tab into the field.
- Keys typed ahead, meant for the prompt before the box appeared, answer nothing: until the box has
  been on screen for `ARM_SECONDS` with no key pressed, every key but Escape is dropped, nothing is
  focused, and a click on a button counts for nothing.

The construction holds it: a box declares its answers (`Answer`: value, label, key) and this class
builds their buttons and the key line in the box's border; an answer's key that could be typed text is
refused, and so is a `BINDINGS` entry on such a key, when the class is defined: no subclass can bind a
letter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, TextArea

R = TypeVar("R")
# How long a question must have been on screen, with no key pressed, before a key answers it: keys
# typed for the prompt come faster than this; a person who stops to read the question answers after it.
ARM_SECONDS = 0.5
DIGITS = "123456789"
Variant = Literal["default", "primary", "success", "warning", "error"]
# Keys that are never typed text; with the F-keys and Ctrl/Alt chords, the only keys a box may bind.
_UNTYPED = frozenset({"escape", "enter", "tab", "shift+tab", "up", "down", "left", "right", "pageup", "pagedown",
                      "home", "end", "delete", "backspace", "insert"})
_CHORDS = ("ctrl+", "alt+", "meta+", "super+")


def deliberate(key: str) -> bool:
    """True for a key that cannot be part of typed text (Escape, Enter, Tab, arrows, page keys, F-keys,
    a Ctrl or Alt chord); False for a letter, a digit, a space, punctuation, any character."""
    key = key.strip().lower()
    if key.startswith("shift+"):
        return deliberate(key.removeprefix("shift+"))
    return key in _UNTYPED or key.startswith(_CHORDS) or (key[:1] == "f" and key[1:].isdigit())


def key_label(key: str) -> str:
    """How a key is written on a button: 1, Ctrl+S, Esc."""
    if key == "escape":
        return "Esc"
    return "+".join(part.capitalize() if len(part) > 1 else part.upper() for part in key.split("+"))


@dataclass(frozen=True)
class Answer:
    """One answer a box offers: `value` is what it is answered with (its button's id), `key` a digit —
    pressed while no text field has the focus — or a deliberate key (`deliberate`), "escape" for the
    safe answer's own button."""

    value: str
    label: str
    key: str
    variant: Variant = "default"
    disabled: bool = False

    def __post_init__(self) -> None:
        if not (len(self.key) == 1 and self.key in DIGITS or deliberate(self.key)):
            raise ValueError(f"answer {self.value!r}: {self.key!r} could be typed text; an answer's key is a digit "
                             "or a key no text contains (typing is text: tui/app/screens/question.py)")


class GuardedModal(ModalScreen[R]):
    """A box that asks; see the module's docstring for the rule. A subclass says `answers()` and
    `result(value)`, its safe answer (`SAFE`, said as `SAFE_SAYS`), its text field if it has one
    (`FIELD`, a selector; `FIELD_SAYS`: what the text is), what takes the focus once the box is armed
    (`HOME`: a list, an editor; "" keeps the focus off every field, so a digit answers), and yields
    `answer_widgets()` where its buttons go."""

    DEFAULT_CSS = """
    GuardedModal .question-answers { height: auto; margin-top: 1; }
    GuardedModal .question-answers Button { margin-right: 1; min-width: 10; }
    GuardedModal > * { border-subtitle-color: $text-muted; }
    GuardedModal.-flash > * { border-subtitle-color: $warning; border-subtitle-style: bold; }
    """
    AUTO_FOCUS = ""  # not the app's "*": a focused button would take an Enter typed ahead
    ARM_SECONDS: ClassVar[float] = ARM_SECONDS
    SAFE: ClassVar[str] = "cancel"
    SAFE_SAYS: ClassVar[str] = "cancel"
    FIELD: ClassVar[str] = ""
    FIELD_SAYS: ClassVar[str] = ""
    HOME: ClassVar[str] = ""
    _shown_at: float | None = None
    _answered = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for binding in cls.__dict__.get("BINDINGS", ()):
            keys = binding.key if isinstance(binding, Binding) else binding[0]
            typed = [key for key in keys.split(",") if not deliberate(key)]
            if typed:
                raise TypeError(f"{cls.__name__} binds {typed}: a question box never binds a key that could be typed "
                                "text; declare answers (tui/app/screens/question.py Answer) instead")

    # -- what a box says --------------------------------------------------------------------------------
    def answers(self) -> Sequence[Answer]:
        return ()

    def result(self, value: str) -> R:
        """What the box is dismissed with when answered `value` (an answer's, or `SAFE`)."""
        raise NotImplementedError

    def keys_line(self) -> str:
        """The keys that answer and what typing does, shown in the box's bottom border (it costs no row
        of a small terminal, and it stays the same whatever has the focus: nothing moves under the mouse)."""
        answers = self.answers()
        digits = "/".join(a.key for a in answers if a.key in DIGITS and not a.disabled)
        parts = [f"{digits}: answer"] if digits else []
        parts += [f"{key_label(a.key)}: {a.label[:1].lower()}{a.label[1:]}" for a in answers
                  if a.key not in DIGITS and a.key != "escape"]
        if self.FIELD:
            parts.append(f"type: {self.FIELD_SAYS}")
        return " · ".join([*parts, f"Enter/Esc: {self.SAFE_SAYS}"])

    def answer_widgets(self) -> list[Widget]:
        """The answers' buttons, each with its key on it, for `compose`."""
        buttons = [Button(Text(f"[{key_label(a.key)}] {a.label}"), id=a.value, variant=a.variant, disabled=a.disabled)
                   for a in self.answers()]
        return [Horizontal(*buttons, classes="question-answers")] if buttons else []

    # -- answering ----------------------------------------------------------------------------------------
    @property
    def field(self) -> Input | TextArea | None:
        found = self.query(self.FIELD) if self.FIELD else None
        widget = found.first() if found else None
        return widget if isinstance(widget, (Input, TextArea)) else None

    def typed(self) -> str:
        """What is written in the field ("" without one)."""
        field = self.field
        return field.value.strip() if isinstance(field, Input) else field.text if field is not None else ""

    def answer(self, value: str) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(self.result(value))

    # -- the guard against keys typed ahead ---------------------------------------------------------------
    @property
    def armed(self) -> bool:
        """True once the box has been shown long enough for a key to be an answer to it."""
        return self._shown_at is not None and time.monotonic() - self._shown_at >= self.ARM_SECONDS

    def on_mount(self) -> None:
        box = next((c for c in self.children if not c.has_class("-textual-system")), None)  # not the toasts
        if box is not None:  # the box itself: its bottom border says the keys
            box.border_subtitle = Text(self.keys_line())
        self.call_after_refresh(self._mark_shown)  # from the first frame that shows it, not from the push

    def _mark_shown(self) -> None:
        self._shown_at = time.monotonic()
        self._wait_armed()

    def _wait_armed(self) -> None:
        if not self.armed:
            left = self.ARM_SECONDS - (time.monotonic() - (self._shown_at or 0.0))
            self.set_timer(max(left, 0.02), self._wait_armed)
            return
        if self.HOME and self.focused is None:
            self.query_one(self.HOME).focus()

    # -- keys -----------------------------------------------------------------------------------------------
    def on_key(self, event: events.Key) -> None:
        """Only keys the focused widget left reach here: a field has taken every character typed into it."""
        if event.key == "escape":
            self._take(event)
            self.answer(self.SAFE)
            return
        if not self.armed:
            if self._shown_at is not None:
                self._shown_at = time.monotonic()  # still typing: the quiet moment starts again
            self._take(event)
            return
        in_field = isinstance(self.focused, (Input, TextArea))
        keyed = {a.key: a for a in self.answers()}
        if event.key in keyed and not (in_field and event.is_printable):
            self._take(event)
            self.answer(keyed[event.key].value)
        elif event.key == "enter" and (self.focused is None or isinstance(self.focused, Input)):
            self._take(event)
            self.answer(self.SAFE)
        elif event.is_printable and event.character:
            self._take(event)
            if in_field or self.field is not None and event.character not in DIGITS:
                self._type(event.character)  # in_field: a key queued before the field had the focus is its own
                return
            self._flash()  # an answer key that answers nothing here, or a box with nothing to type into
            if event.character not in DIGITS:
                self._shown_at = time.monotonic()  # words: a digit among them ("try 2 things") is theirs too

    def on_paste(self, event: events.Paste) -> None:
        """A paste outside the field: the field's text, once armed (in the field, the field took it)."""
        event.stop()
        if self.armed and event.text and not isinstance(self.focused, (Input, TextArea)):
            self._type(event.text)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.armed and event.button.id:  # a click in the first moment was meant for what was there before
            self.answer(event.button.id)

    def _type(self, text: str) -> None:
        field = self.field
        if field is None:
            return
        self.set_focus(field)  # now, not after the keys already queued: a digit among them is the field's too
        if isinstance(field, Input):
            field.insert_text_at_cursor(" ".join(text.splitlines()))
        else:
            field.insert(text)

    def _flash(self) -> None:
        """Show the keys that answer (a key that answers nothing was pressed)."""
        self.app.bell()
        self.add_class("-flash")
        self.set_timer(1.5, lambda: self.remove_class("-flash"))

    @staticmethod
    def _take(event: events.Key) -> None:
        event.stop()
        event.prevent_default()
