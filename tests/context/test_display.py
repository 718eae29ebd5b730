"""The one display rule: escape sequences and control characters never reach the terminal."""

from ctxagent.context.floor.display import show_controls, strip_controls


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
