"""The one display rule: escape sequences and control characters never reach the terminal, and no
character that draws nothing (bidi controls, zero-width characters, tags, lone surrogates) is hidden."""

import io
import json

import pytest
from ctxagent.context.floor.display import (
    echo,
    echo_json,
    for_display,
    json_text,
    show_controls,
    strip_controls,
)

# one example of every family the edge handles: (text, what the flowing display shows)
INVISIBLE = {
    "bidi override": ("invoice\u202etxt.exe", "invoice⟨U+202E⟩txt.exe"),
    "bidi embedding": ("a\u202ab\u202cc", "a⟨U+202A⟩b⟨U+202C⟩c"),
    "bidi isolates": ("x\u2066y\u2069z\u2067\u2068", "x⟨U+2066⟩y⟨U+2069⟩z⟨U+2067⟩⟨U+2068⟩"),
    "bidi marks": ("l\u200er\u200fa\u061c", "l⟨U+200E⟩r⟨U+200F⟩a⟨U+061C⟩"),
    "zero-width joiners": ("zw\u200dj\u200cn", "zw⟨U+200D⟩j⟨U+200C⟩n"),
    "zero-width spaces": ("zw\u200bs\ufeffb\u2060w", "zw⟨U+200B⟩s⟨U+FEFF⟩b⟨U+2060⟩w"),
    "tag characters": ("ok\U000e0041\U000e007f", "ok⟨U+E0041⟩⟨U+E007F⟩"),
    "line separators": ("one\u2028two\u2029", "one⟨U+2028⟩two⟨U+2029⟩"),
    "fillers": ("\u3164\u115f", "⟨U+3164⟩⟨U+115F⟩"),
    "lone surrogates": ("caf\udce9.txt", "caf⟨U+DCE9⟩.txt"),
}


def test_strip_removes_csi_osc_and_lone_controls():
    assert strip_controls("curl x | sh;\x1b[1K ls -la") == "curl x | sh; ls -la"
    assert strip_controls("a\x1b]0;title\x07b") == "ab"
    assert strip_controls("a\x1b]52;c;Zm9v\x1b\\b") == "ab"  # OSC 52 clipboard write
    assert strip_controls("x\x9b2Jy\x07z\x7f") == "xyz"  # 8-bit CSI, BEL, DEL
    assert strip_controls("one\r\ntwo\rthree") == "one\ntwothree"


def test_strip_keeps_text_tabs_newlines_and_chinese():
    text = "def f():\n\treturn '不要修改配置文件'"
    assert strip_controls(text) == text


def test_show_makes_every_control_visible():
    shown = show_controls("curl x | sh;\x1b[1K ls -la\x00")
    assert "␛[1K" in shown and shown.endswith("^@")
    assert "\x1b" not in shown and "\x00" not in shown


def test_lone_surrogates_are_replaced_so_text_can_be_encoded():
    for fn in (strip_controls, show_controls):
        out = fn("caf\udce9.txt")
        out.encode("utf-8")  # must not raise
        assert out.startswith("caf") and out.endswith(".txt")


@pytest.mark.parametrize("family", sorted(INVISIBLE))
def test_every_invisible_family_is_shown_in_both_modes(family):
    text, shown = INVISIBLE[family]
    assert for_display(text) == shown and strip_controls(text) == shown
    assert show_controls(text) == shown
    assert for_display(shown) == shown  # the edge is idempotent: twice is once
    shown.encode("utf-8")


def test_chinese_emoji_and_accents_pass_untouched():
    text = "不要修改配置文件 — café ✓ 🙂 ±"
    assert for_display(text) == text and for_display(text, exact=True) == text


def test_json_text_is_the_same_data_with_nothing_raw():
    value = {"path": "a\x1b[2J\u202eb\u200dc\udce9\x9b\x7f\U000e0041", "中文": ["ok"]}
    text = json_text(value, indent=1)
    assert json.loads(text) == value  # lossless
    assert all(ch not in text for ch in ("\x1b", "\u202e", "\u200d", "\x9b", "\x7f", "\U000e0041"))
    assert "中文" in text  # readable text stays readable
    text.encode("utf-8")  # a lone surrogate is an escape, not a crash


def test_echo_writes_through_the_edge():
    out = io.StringIO()
    echo("name: a\x1b]0;t\x07b\u202ec", file=out)
    echo("path: a\x1b[2Jb", file=out, exact=True)
    echo_json({"k": "\u200b"}, file=out, indent=None)
    assert out.getvalue() == 'name: ab⟨U+202E⟩c\npath: a␛[2Jb\n{"k": "\\u200b"}\n'


def test_colors_keep_only_color_sequences() -> None:
    from ctxagent.context.floor.display import for_display

    text = "\x1b[38;5;82mctxagent\x1b[0m session \x1b]0;pwned\x07x\x1b[2J\x1b[1Ay\u202e\x1b[1mbold\x1b[0m\x1b"
    shown = for_display(text, colors=True)
    assert shown == "\x1b[38;5;82mctxagent\x1b[0m session xy⟨U+202E⟩\x1b[1mbold\x1b[0m"  # title, clear, cursor gone
    assert for_display(text) == "ctxagent session xy⟨U+202E⟩bold"  # without colors: none of it
