"""What anthropic.py and openai.py share about images: reading a part's bytes at body time.

A request's `ImagePart` names a handle in the session's attachment store; the provider's
`attachments` (an `ImageReader`, context/images.py, lent by the agent at each step: agent/step.py)
reads the bytes when the wire body is made. A part whose bytes cannot be read (the store was
cleaned, no reader was lent) goes as a one-line text instead: the request stays valid.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from ctxagent.context.images import image_stub
from ctxagent.context.request import ImagePart

ImageLoad = Callable[[str], "bytes | None"]


def base64_of(part: ImagePart, load: ImageLoad | None) -> str | None:
    """The part's bytes as base64, or None when they cannot be read."""
    data = load(part.handle) if load is not None else None
    return base64.b64encode(data).decode("ascii") if data else None


def unreadable(part: ImagePart) -> str:
    return image_stub(part.handle, part.media_type, part.width, part.height, part.size,
                      why="could not be read from the session's attachment store")
