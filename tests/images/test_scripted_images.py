"""The loopback model server reads image blocks in both wire formats through the real SDKs: it
checks them as the APIs do (a malformed one is a 400), records them, says them in `{images}`, and
counts them by the provider's image-token rule, not their base64."""

from __future__ import annotations

import base64

import anthropic
import openai
import pytest
from ctxagent.context.images import anthropic_tokens, openai_tokens
from ctxagent.tui.lab.scripted.server import ScriptedServer
from image_helpers import jpeg, png

PNG = base64.b64encode(png(300, 200)).decode()


def test_anthropic_image_blocks_user_and_tool_result() -> None:
    with ScriptedServer([{"text": "saw {images}", "usage": {"output_tokens": 3}}, {"text": "x"}]) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=[
            {"role": "user", "content": [image, {"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [{"type": "text", "text": "[image]"}, image]}]},
        ])
        assert reply.content[0].text == "saw image/png 300x200 (user), image/png 300x200 (tool_result)"
        # two images by Anthropic's rule, plus the text of a body whose base64 is not counted
        assert 2 * anthropic_tokens(300, 200) < reply.usage.input_tokens < 2 * anthropic_tokens(300, 200) + 200
        assert [i["where"] for i in srv.requests[0]["images"]] == ["user", "tool_result"]
        bad = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}}
        with pytest.raises(anthropic.BadRequestError, match="declared image/jpeg is image/png"):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": [bad]}])


def test_openai_image_url_data_uri() -> None:
    with ScriptedServer([{"text": "saw {images}"}, {"text": "x"}, {"text": "y"}]) as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.base_url + "/v1", max_retries=0)
        url = "data:image/jpeg;base64," + base64.b64encode(jpeg(1024, 1024)).decode()
        reply = client.chat.completions.create(model="gpt-5.4", messages=[
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": url}}]},
        ])
        assert reply.choices[0].message.content == "saw image/jpeg 1024x1024 (user)"
        assert openai_tokens(1024, 1024) < reply.usage.prompt_tokens < openai_tokens(1024, 1024) + 100
        with pytest.raises(openai.BadRequestError, match="base64 data URI"):
            client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])
        with pytest.raises(openai.BadRequestError, match="text parts only"):
            client.chat.completions.create(model="m", messages=[
                {"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url", "image_url": {"url": url}}]}])
