"""Sanitize before persisting: strip base64 data URIs and redact key-like secrets.

`Sanitizer(secrets)` is callable on any JSON-like value (dicts, lists, strings, numbers) and
returns a cleaned copy; it is what `SessionLog(sanitize=...)` runs on every event, and what the
spill store and memory writes should run too. Redaction is by shape (`context/floor/secret_shapes.py`, the
one pattern set: provider keys, private key blocks, URL passwords, secret-named assignments) and by
value (the configured API keys), so a key never reaches a log, a session, memory or a spill file.
`redact_secrets` is the shape-only form, for stores that do not know the configured keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ctxagent.context.floor.secret_shapes import REDACTED, redact_shapes

__all__ = ["IMAGE_STRIPPED", "REDACTED", "Sanitizer", "encodable", "escape_surrogates", "redact_secrets", "sanitize"]

IMAGE_STRIPPED = "[image:base64-stripped]"

DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/=_-]{200,}")

MIN_CONFIGURED_SECRET = 8  # shorter configured values would redact ordinary words

# A lone surrogate cannot be encoded (json, sqlite, a terminal): \udc80-\udcff are bytes that were
# not UTF-8 (os and `surrogateescape` decode file names so), any other one is broken model text.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def escape_surrogates(text: str) -> str:
    """`text` made encodable: an undecodable byte of a file name shows as `\\xNN` (so the name can be
    given back, see tools/safe_text.py), any other lone surrogate becomes U+FFFD."""
    return _SURROGATE.sub(_escape_surrogate, text) if _SURROGATE.search(text) else text


def encodable(value: Any) -> Any:
    """A JSON-like value with every string (keys too) passed through `escape_surrogates`: what the
    session log holds, so no later request, line or screen meets a lone surrogate. A value with
    none is returned as it is (the same object)."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        pairs = [(encodable(k), encodable(v)) for k, v in value.items()]
        if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [encodable(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


class Sanitizer:
    def __init__(self, secrets: Iterable[str] | None = None):
        values = {s.strip() for s in (secrets or []) if isinstance(s, str) and len(s.strip()) >= MIN_CONFIGURED_SECRET}
        # longest first, so a key that contains another is redacted whole
        self.secrets = sorted(values, key=len, reverse=True)

    def text(self, value: str) -> str:
        if not value:
            return value
        out = DATA_URI.sub(IMAGE_STRIPPED, value) if "base64," in value else value
        for secret in self.secrets:
            if secret in out:
                out = out.replace(secret, REDACTED)
        return redact_shapes(out)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {(self.text(k) if isinstance(k, str) else k): self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        return value


def sanitize(value: Any, secrets: Iterable[str] | None = None) -> Any:
    return Sanitizer(secrets)(value)


def redact_secrets(text: str) -> str:
    """`text` with every secret of a known shape redacted (no configured values: see Sanitizer)."""
    return redact_shapes(text) if text else text
