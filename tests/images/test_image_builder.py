"""Images in the builder and on the wire: counted in the right slice by the provider's rule, sent as
the wire's image blocks, and cleared like tool output (a stub with the handle) once old or cut."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ctxagent.agent.providers.anthropic import wire_messages as anthropic_wire
from ctxagent.agent.providers.openai import wire_messages as openai_wire
from ctxagent.context.builder.dispatch import build
from ctxagent.context.images import anthropic_tokens, openai_tokens
from ctxagent.context.request import ImagePart, Message

sys.path.insert(0, str(Path(__file__).parent.parent / "context"))
from ctx_helpers import Log, inputs  # noqa: E402  # tests/context's helpers

REF = {"handle": "0123456789ab", "sha256": "0123456789ab" + "0" * 52, "media_type": "image/png", "size": 1234,
       "width": 1000, "height": 800, "name": "shot.png"}


def _log(turns_after: int = 0) -> Log:
    log = Log()
    log.user("look at @shot.png")
    log.step("read_file", {"path": "shot.png"}, "[image shot.png: PNG 1000×800, 1,234 bytes — attached below]",
             images=[REF])
    log.assistant("It shows a chart.")
    for i in range(turns_after):
        log.user(f"next {i}")
        log.assistant(f"ok {i}")
    return log


def _tool_msg(result: Any) -> Message:
    return next(m for m in result.request.messages if m.role == "tool")


def test_an_image_is_counted_by_the_providers_rule_in_the_tools_slice() -> None:
    anth = build(inputs(_log(), model="anthropic:claude-sonnet-5-5"))
    oai = build(inputs(_log(), model="openai:gpt-5.4"))
    (part,) = _tool_msg(anth).images
    assert part.tokens == anthropic_tokens(1000, 800) and _tool_msg(oai).images[0].tokens == openai_tokens(1000, 800)
    assert anth.report.used["tools"] - oai.report.used["tools"] == anthropic_tokens(1000, 800) - openai_tokens(1000, 800)
    assert "images" not in str(build(inputs(Log(), model="anthropic:x")).request.to_dict())


def test_a_model_without_images_gets_a_stub() -> None:
    msg = _tool_msg(build(inputs(_log(), images=False)))
    assert msg.images == () and "[image 0123456789ab (PNG 1000×800, 1,234 bytes) not sent: this model takes no images" in msg.content


def test_old_images_become_stubs_with_the_handle() -> None:
    recent = _tool_msg(build(inputs(_log(turns_after=1), protect_turns=2)))
    assert len(recent.images) == 1  # within the last two turns: sent
    old = build(inputs(_log(turns_after=3), protect_turns=2))
    msg = _tool_msg(old)
    assert msg.images == ()
    assert "[image 0123456789ab (PNG 1000×800, 1,234 bytes) cleared from view: older than the recent turns — " \
           "read_file path=shot.png shows it again]" in msg.content
    assert old.report.used["tools"] < build(inputs(_log(turns_after=1))).report.used["tools"]


def test_a_cleared_result_takes_its_image_with_it() -> None:
    from ctxagent.context.builder.render import with_content

    msg = Message(role="tool", content="x", tool_call_id="c1", name="mcp__fx__picture", event_id=7,
                  images=(ImagePart("abcdefabcdef", "image/png", 1, 1, 70, 1, ""),))
    cleared = with_content(msg, "[cleared: old mcp__fx__picture output, 1 line — read_event id=7]")
    assert cleared.images == () and "image abcdefabcdef (PNG 1×1, 70 bytes) cleared from view" in cleared.content
    assert "read_event id=7 shows it again" in cleared.content


PART = ImagePart("abcdefabcdef", "image/png", 2, 2, 3, 1, "a.png")


def _load(handle: str) -> bytes | None:
    return b"PNG" if handle == "abcdefabcdef" else None


def test_anthropic_wire_image_blocks_also_inside_tool_result() -> None:
    msgs = [Message(role="user", content="see", images=(PART,)),
            Message(role="assistant", content="", tool_calls=[]),
            Message(role="assistant", content="reading"),
            Message(role="tool", content="[image]", tool_call_id="t1", name="read_file", images=(PART,))]
    wire = anthropic_wire(msgs, _load)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UE5H"}}
    assert wire[0]["content"] == [image, {"type": "text", "text": "see"}]
    assert wire[2]["content"][0]["content"] == [{"type": "text", "text": "[image]"}, image]
    missing = anthropic_wire([Message(role="user", content="x", images=(ImagePart("ffffffffffff", "image/png", 1, 1, 1),))])
    assert "could not be read from the session's attachment store" in missing[0]["content"][0]["text"]


def test_openai_wire_data_uri_and_tool_images_in_the_user_message_after() -> None:
    msgs = [Message(role="user", content="see", images=(PART,)),
            Message(role="assistant", content="reading", tool_calls=[]),
            Message(role="tool", content="[image]", tool_call_id="t1", name="read_file", images=(PART,)),
            Message(role="user", content="warm block", kind="warm")]
    wire = openai_wire("sys", msgs, _load)
    url = {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}}
    assert wire[1] == {"role": "user", "content": [{"type": "text", "text": "see"}, url]}
    assert wire[3] == {"role": "tool", "tool_call_id": "t1", "content": "[image]"}  # text only, as the SDK types say
    assert wire[4]["content"] == [{"type": "text", "text": "warm block"},
                                  {"type": "text", "text": "[the image returned by tool call t1]"}, url]
    assert openai_wire("", [Message(role="user", content="plain")]) == [{"role": "user", "content": "plain"}]


def test_an_image_ages_into_its_stub_the_same_with_a_warm_cache_as_with_a_cold_one() -> None:
    from ctxagent.context.builder.cache import BuildCache
    from ctxagent.context.builder.dispatch import request_sha256

    cache = BuildCache()
    log = _log()
    stubbed = []
    for i in range(5):  # the image is sent within the last two turns, then stubbed (old-image check: slot_fold.py)
        log.user(f"next {i} 下一步")
        log.step("read_file", {"path": f"shot{i}.png"}, f"[image shot{i}.png]", images=[{**REF, "name": f"shot{i}.png"}])
        log.assistant(f"ok {i}")
        warm = build(inputs(log, protect_turns=2, cache=cache, model="anthropic:claude-sonnet-5-5"))
        cold = build(inputs(log, protect_turns=2, cache=BuildCache(), model="anthropic:claude-sonnet-5-5"))
        assert request_sha256(warm.request.to_dict()) == request_sha256(cold.request.to_dict())
        assert warm.report.to_dict() == cold.report.to_dict()
        stubbed.append(sum(1 for m in warm.request.messages if m.role == "tool" and not m.images))
    assert stubbed[0] < stubbed[-1]  # images did age into stubs along the way
