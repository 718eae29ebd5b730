"""The assistant's reply in the chat: Markdown, streamed as it arrives.

Its own module because Textual's Markdown widget (markdown-it, pygments) is the heaviest import of
the chat: the app imports it after the first frame (the agent's build warms it), not at start-up.
"""

from __future__ import annotations

from ctxagent.context import strip_controls
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream


class AssistantMessage(Markdown):
    """Assistant text; `write()` streams deltas through a MarkdownStream, `finish()` flushes it."""

    DEFAULT_CSS = """
    AssistantMessage { margin: 1 0 0 0; padding: 0 1; background: $surface; }
    """

    def __init__(self, text: str = "") -> None:
        text = strip_controls(text)
        super().__init__(text)
        self.text = text
        self._stream: MarkdownStream | None = None

    async def write(self, delta: str) -> None:
        delta = strip_controls(delta)  # a sequence split across deltas loses its ESC: harmless text remains
        self.text += delta
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(delta)

    async def finish(self, final_text: str | None = None) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        final_text = strip_controls(final_text) if final_text is not None else None
        if final_text is not None and final_text != self.text:
            self.text = final_text
            await self.update(final_text)
