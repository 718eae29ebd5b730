"""Sanitize before persisting: strip base64 data URIs and redact key-like secrets.

`Sanitizer(secrets)` is callable on any JSON-like value (dicts, lists, strings, numbers) and
returns a cleaned copy; it is what `SessionLog(sanitize=...)` runs on every event, and what the
spill store and memory writes should run too. Redaction is by shape (Anthropic, OpenAI, AWS,
GitHub tokens) and by value (the configured API keys), so a key never reaches a log, a session,
memory or a spill file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
IMAGE_STRIPPED = "[image:base64-stripped]"

DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/=_-]{200,}")

_B = r"(?<![A-Za-z0-9_\-])"  # a key starts at a token boundary ("task-…" is not an "sk-" key)
SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(_B + r"sk-ant-[A-Za-z0-9_\-]{16,}"),  # Anthropic (api03, admin01, …)
    re.compile(_B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}"),  # OpenAI project / service keys
    re.compile(_B + r"sk-[A-Za-z0-9]{20,}(?:T3BlbkFJ[A-Za-z0-9]{20,})?"),  # OpenAI classic
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),  # AWS access key id
    re.compile(_B + r"gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens (ghp_, gho_, ghs_, ghu_, ghr_)
    re.compile(_B + r"github_pat_[A-Za-z0-9_]{40,}"),  # GitHub fine-grained PAT
)
# AWS secret keys have no prefix: recognise them by the name they are assigned to.
AWS_SECRET = re.compile(
    r"(?i)(aws_secret_access_key|aws-secret-access-key|secretaccesskey)(\s*[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})"
)

MIN_CONFIGURED_SECRET = 8  # shorter configured values would redact ordinary words

# A lone surrogate cannot be encoded (json, sqlite, a terminal): \udc80-\udcff are bytes that were
# not UTF-8 (os and `surrogateescape` decode file names so), any other one is broken model text.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def escape_surrogates(text: str) -> str:
    """`text` made encodable: an undecodable byte of a file name shows as `\\xNN` (so the name can be
    given back, see tools/text.py), any other lone surrogate becomes U+FFFD."""
    return _SURROGATE.sub(_escape_surrogate, text) if _SURROGATE.search(text) else text


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
        for pattern in SECRET_PATTERNS:
            out = pattern.sub(REDACTED, out)
        if "ecret" in out or "ECRET" in out:
            out = AWS_SECRET.sub(lambda m: m.group(1) + m.group(2) + REDACTED, out)
        return out

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
