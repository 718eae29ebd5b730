"""Token counting: tiktoken from the BPE files bundled in context/data/ (never a download), a
character heuristic as the fallback, and a bounded cache so a step costs O(new content).

`count_message` / `count_request` add the per-message framing overhead that chat formats spend on
roles and separators; the builder measures with exactly these functions, so its invariant
(`count_request(request) <= budget.limit`) is checked with the same ruler it is built with.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ctxagent.context.request import Message, Request, ToolSpec

DATA_DIR = Path(__file__).resolve().parent / "data"

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# The same pattern strings and special tokens as tiktoken_ext.openai_public, copied so that
# constructing an encoding never goes through tiktoken's registry (which would download).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

ENCODINGS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "file": "o200k_base.tiktoken",
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": _O200K_PAT,
        "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    },
    "cl100k_base": {
        "file": "cl100k_base.tiktoken",
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": _CL100K_PAT,
        "special_tokens": {
            ENDOFTEXT: 100257,
            FIM_PREFIX: 100258,
            FIM_MIDDLE: 100259,
            FIM_SUFFIX: 100260,
            ENDOFPROMPT: 100276,
        },
    },
}

# Per-message framing (role markers, separators) as chat formats spend it; a small overestimate
# is the safe side for a budget.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 4
TOOL_SPEC_OVERHEAD = 8
REQUEST_OVERHEAD = 3

# tiktoken's BPE is superlinear on one huge unbroken "word" (minified JSON, base64): count long
# texts in pieces cut at whitespace, so a 1 MB tool output costs linear time.
_CHUNK_CHARS = 4096


@runtime_checkable
class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


def _parse_bpe(data: bytes) -> dict[bytes, int]:
    """`<base64 token> <rank>` per line; binascii directly is ~30 % faster than base64.b64decode."""
    parts = data.split()
    return dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2]), strict=True))


@lru_cache(maxsize=4)
def load_encoding(encoding_name: str) -> Any:
    """Build a `tiktoken.Encoding` from the bundled file after checking its sha256. Never downloads."""
    import tiktoken

    spec = ENCODINGS.get(encoding_name)
    if spec is None:
        raise ValueError(f"unknown encoding {encoding_name!r}; known: {', '.join(ENCODINGS)}")
    path = DATA_DIR / spec["file"]
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec["sha256"]:
        raise ValueError(f"{path} has sha256 {digest}, expected {spec['sha256']}")
    return tiktoken.Encoding(
        name=encoding_name,
        pat_str=spec["pat_str"],
        mergeable_ranks=_parse_bpe(data),
        special_tokens=dict(spec["special_tokens"]),
    )


def _chunks(text: str) -> list[str]:
    if len(text) <= _CHUNK_CHARS:
        return [text]
    out: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(n, start + _CHUNK_CHARS)
        if end < n:
            # prefer a cut right after whitespace in the last quarter of the piece
            cut = max(text.rfind("\n", start + _CHUNK_CHARS * 3 // 4, end), text.rfind(" ", start + _CHUNK_CHARS * 3 // 4, end))
            if cut > start:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out


class TiktokenCounter:
    """Exact counts for OpenAI encodings; a close proxy for other providers (the Calibrator corrects it)."""

    def __init__(self, encoding_name: str = "o200k_base"):
        self.name = encoding_name
        self._enc = load_encoding(encoding_name)

    def count(self, text: str) -> int:
        if not text:
            return 0
        # encode_ordinary: text that looks like a special token is counted as text, never rejected
        return sum(len(self._enc.encode_ordinary(piece)) for piece in _chunks(text))

    def encode(self, text: str) -> list[int]:
        return list(self._enc.encode_ordinary(text))

    def decode(self, tokens: list[int]) -> str:
        return str(self._enc.decode(tokens))


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0x20000 <= o <= 0x2FFFF  # extensions B+
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0x3000 <= o <= 0x303F  # CJK punctuation
        or 0x3040 <= o <= 0x30FF  # hiragana, katakana
        or 0xAC00 <= o <= 0xD7AF  # hangul
        or 0xFF00 <= o <= 0xFFEF  # full-width forms
    )


_JSON_MARKS = re.compile(r'[{}\[\]"]')
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


class HeuristicCounter:
    """An estimate without a tokenizer: CJK chars ÷ 1.5, other chars ÷ 4, +1 per JSON bracket or quote,
    × safety."""

    def __init__(self, safety: float = 1.0):
        if safety <= 0:
            raise ValueError("safety must be > 0")
        self.safety = safety
        self.name = "heuristic" if safety == 1.0 else f"heuristic×{safety:g}"

    def count(self, text: str) -> int:
        if not text:
            return 0
        cjk = 0
        if _NON_ASCII.search(text):
            cjk = sum(1 for ch in text if ord(ch) > 0x2FFF and _is_cjk(ch))
        other = len(text) - cjk
        marks = len(_JSON_MARKS.findall(text))
        return max(1, math.ceil((cjk / 1.5 + other / 4 + marks) * self.safety))


def get_counter(family: str) -> TokenCounter:
    """"o200k_base" | "cl100k_base" | "heuristic"; falls back to the heuristic if an encoding fails to load."""
    if family in ENCODINGS:
        try:
            return TiktokenCounter(family)
        except Exception:  # a damaged bundle or a broken tiktoken install must not stop the agent
            return HeuristicCounter()
    return HeuristicCounter()


class CachedCounter:
    """Counts cached by content hash, bounded (LRU), so re-measuring a history costs O(new content)."""

    def __init__(self, inner: TokenCounter, max_entries: int = 50_000):
        self.inner = inner
        self.name = inner.name
        self.max_entries = max_entries
        self._cache: OrderedDict[bytes | str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(text: str) -> bytes | str:
        if len(text) <= 64:
            return text
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = self._key(text)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return hit
        n = self.inner.count(text)
        with self._lock:
            self.misses += 1
            self._cache[key] = n
            if len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return n


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def count_tool_spec(spec: ToolSpec, counter: TokenCounter) -> int:
    return TOOL_SPEC_OVERHEAD + counter.count(spec.name) + counter.count(spec.description) + counter.count(_dumps(spec.input_schema))


def count_message(msg: Message, counter: TokenCounter) -> int:
    n = MESSAGE_OVERHEAD + counter.count(msg.content)
    for call in msg.tool_calls:
        n += TOOL_CALL_OVERHEAD + counter.count(call.id) + counter.count(call.name) + counter.count(_dumps(call.arguments))
    if msg.role == "tool":
        n += counter.count(msg.tool_call_id or "") + counter.count(msg.name or "")
    # an image costs what its provider's rule says (context/images.py), worked out when it was rendered
    return n + sum(part.tokens for part in msg.images)


def count_system(system: str, counter: TokenCounter) -> int:
    return MESSAGE_OVERHEAD + counter.count(system) if system else 0


def count_request(request: Request, counter: TokenCounter) -> int:
    return (
        REQUEST_OVERHEAD
        + count_system(request.system, counter)
        + sum(count_tool_spec(t, counter) for t in request.tools)
        + sum(count_message(m, counter) for m in request.messages)
    )
