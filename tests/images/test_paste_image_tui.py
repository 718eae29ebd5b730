"""A pasted image path in the TUI prompt: a path alone on the input that names an image file of the
repository is sent as its @mention, and the image reaches the model's request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.agent.user_tools import pasted_image
from ctxagent.context.images import anthropic_tokens
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.widgets.chat import ToolPanel, UserMessage
from ctxagent.tui.app.widgets.reply import AssistantMessage
from image_helpers import png

sys.path.insert(0, str(Path(__file__).parent.parent / "tui"))
from tui_helpers import make_session, ready, screen_text, send, wait_until  # noqa: E402  # tests/tui's helpers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_what_counts_as_a_pasted_image_path(tmp_path: Path) -> None:
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.png").write_bytes(png())
    (tmp_path / "shots" / "not-an-image.png").write_text("text that merely ends in .png")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(png())
    root = tmp_path
    assert pasted_image(root, "shots/a.png") == "shots/a.png"
    assert pasted_image(root, f"  {root}/shots/a.png \n") == "shots/a.png"  # absolute, as a terminal drops it
    assert pasted_image(root, f"'{root}/shots/a.png'") == "shots/a.png"
    assert pasted_image(root, f"file://{root}/shots/a.png") == "shots/a.png"
    assert pasted_image(root, "shots/not-an-image.png") is None  # by the bytes, not the name
    assert pasted_image(root, str(outside)) is None  # outside the repository
    assert pasted_image(root, "look at shots/a.png") is None  # not alone on the input
    assert pasted_image(root, "missing.png") is None


async def test_a_pasted_image_path_is_attached(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "I see {images}."}])
    (session.root / "shot.png").write_bytes(png(12, 9))
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 80)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, f"{session.root}/shot.png")  # pasted: a path alone on the input
        assert [m.text for m in screen.query(UserMessage)][-1] == "@shot.png"
        assert [p.tool_name for p in screen.query(ToolPanel)] == ["read_file"]
        (body,) = screen.agent.parts.provider.requests
        (tool,) = [m for m in body["messages"] if m["role"] == "tool"]
        assert tool["images"][0]["media_type"] == "image/png" and tool["images"][0]["width"] == 12
        assert [m.text for m in screen.query(AssistantMessage)][-1] == "I see image/png 12x9 (tool_result)."
        await send(pilot, app, "/context")  # the image is counted in the tools slice, by the provider's rule
        await wait_until(pilot, lambda: "What is in it" in screen_text(app))
        assert f"1 image attached: {anthropic_tokens(12, 9)} tokens (PNG 12×9)" in screen_text(app)
