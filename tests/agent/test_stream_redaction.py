"""stream-json's text deltas (tui/cli/stream_json.py RedactedStream): a secret split across deltas
is never shown in part, and the deltas add up to the redacted whole."""

from __future__ import annotations

from ctxagent.context.floor.sanitize import Sanitizer
from ctxagent.tui.cli.stream_json import RedactedStream

KEY = "sk-ant-api03-" + "Q" * 40
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"


def _stream(pieces: list[str], secrets: list[str] | None = None) -> list[str]:
    stream = RedactedStream(Sanitizer(secrets).text)
    return [stream.push(p) for p in pieces] + [stream.finish()]


def test_a_key_split_across_deltas_is_redacted_whole() -> None:
    text = f"Your key is {KEY} — 不要提交它. And the configured one: my-own-secret-value-123 ok"
    pieces = [text[i:i + 5] for i in range(0, len(text), 5)]
    shown = _stream(pieces, ["my-own-secret-value-123"])
    whole = "".join(shown)
    assert whole == Sanitizer(["my-own-secret-value-123"]).text(text)
    assert "[redacted]" in whole and "不要提交它" in whole
    for part in shown:  # no delta carries a piece of either secret
        assert "sk-ant" not in part and "QQQQ" not in part and "my-own" not in part
    assert sum(1 for p in shown if p) > 3  # it did stream


def test_an_open_private_key_block_is_held_until_it_ends() -> None:
    text = f"Here it is:\n{PEM}\nthat was it."
    pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
    shown = _stream(pieces)
    assert "MIIEvQ" not in "".join(shown) and "BKcwgg" not in "".join(shown)
    assert "".join(shown) == Sanitizer().text(text)
