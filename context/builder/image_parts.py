"""Images in the builder: an event's `ImageRef`s as a message's `ImagePart`s, and the text stub that
stands in for an image the request does not carry.

An image is not sent when the model takes none (`BuildInputs.images` False), when its message is
older than the protected recent turns (`stub_old_images`: the clearing point of images, which cost
~1,600 tokens each), and when a relief tier prunes or clears its message (render.py `with_content`:
the same machinery as tool output). The stub names the handle and how to see the image again.
"""

from __future__ import annotations

import dataclasses

from ctxagent.context.events import ImageRef
from ctxagent.context.images import image_stub, image_tokens
from ctxagent.context.request import ImagePart, Message
from ctxagent.context.tokens import TokenCounter, count_message

NOT_TAKEN = "not sent: this model takes no images"
CUT = "cleared from view with the old output"
OLD = "cleared from view: older than the recent turns"


def parts_of(refs: list[ImageRef] | None, rule: str | None) -> tuple[ImagePart, ...]:
    return tuple(ImagePart(handle=r.handle, media_type=r.media_type, width=r.width, height=r.height, size=r.size,
                           tokens=image_tokens(r.width, r.height, rule), name=r.name) for r in refs or ())


def _again(part: ImagePart, event_id: int | None) -> str:
    if part.name and not part.name.startswith(("mcp:", "prompt")):
        return f"read_file path={part.name}"
    return f"read_event id={event_id}" if event_id is not None else ""


def stubs(parts: tuple[ImagePart, ...], why: str, event_id: int | None) -> str:
    return "\n".join(image_stub(p.handle, p.media_type, p.width, p.height, p.size, why=why, again=_again(p, event_id))
                     for p in parts)


def refs_stub(refs: list[ImageRef] | None, why: str, event_id: int | None) -> str:
    return stubs(parts_of(refs, None), why, event_id)


def without_images(msg: Message, content: str, why: str = CUT) -> Message:
    """`msg` with `content`, its images (if any) replaced by stubs after that text."""
    if not msg.images:
        return dataclasses.replace(msg, content=content)
    text = "\n".join(x for x in (content, stubs(msg.images, why, msg.event_id)) if x)
    return dataclasses.replace(msg, content=text, images=())


def with_image_text(content: str, refs: list[ImageRef] | None, rule: str | None, event_id: int | None) -> str:
    """A message's text when its model takes no images (`rule` None): the stubs follow it."""
    if rule is not None or not refs:
        return content
    return "\n".join(x for x in (content, refs_stub(refs, NOT_TAKEN, event_id)) if x)


def stub_old(msg: Message, counter: TokenCounter) -> tuple[Message, int]:
    stubbed = without_images(msg, msg.content, OLD)
    return stubbed, count_message(stubbed, counter)
