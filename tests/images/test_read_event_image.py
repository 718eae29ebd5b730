"""read_event brings a cleared image back: the event's images from the attachment store, attached
again (the stub of a cleared MCP or prompt image names this call)."""

from __future__ import annotations

from pathlib import Path

from ctxagent.context.images import load_image
from ctxagent.tools.history_tool import make_read_event_tool
from image_helpers import png


def test_read_event_attaches_the_events_images_again(make_agent, work_repo: Path) -> None:
    (work_repo / "shot.png").write_bytes(png(7, 5))
    agent, _, provider = make_agent(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "shot.png"}}]},
            {"tool_calls": [{"name": "read_event", "arguments": {"id": 5}}]},
            {"text": "seen {images}"},
        ],
        extra_tools=[make_read_event_tool()],
    )
    done = agent.run_turn("look")
    assert done.stop_reason == "end_turn" and done.text == "seen image/png 7x5 (tool_result), image/png 7x5 (tool_result)"
    first, again = [e.tool_result for e in agent.session.log.events if e.kind == "tool_result"]
    assert first.images and again.images and again.images[0].sha256 == first.images[0].sha256
    assert "1 image(s) of this event attached below" in again.content
    stored = agent.parts.spill.get_blob(again.images[0].handle, ".img")
    assert load_image(stored).width == 7
    (last,) = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool" and "image(s)" in m["content"]]
    assert last["images"][0]["handle"] == first.images[0].handle
