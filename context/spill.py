"""Spill: large tool output goes to a content-addressed file; the model sees head + tail + a handle.

No model call and nothing lost: the original stays in `.ctxagent/spill/<sha256>.txt` and the
`read_spill` tool pages or greps it. The agent loop calls `maybe_spill` before it appends the
tool_result event, so the session log holds the preview and `spill` meta {handle, lines, tokens}.

The spill folder is opened without following a link (its last two names, `.ctxagent/spill`, with
`O_NOFOLLOW`), and every file in it through that descriptor, so a planted
`spill/<handle>.txt -> ~/.ssh/id_rsa` (or a linked `spill/`) is refused, never read, and a write
replaces such a link instead of writing through it (`context/floor/beneath.py`).
"""

from __future__ import annotations

import hashlib
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
from ctxagent.context.errors import ContextError, CtxagentError, ToolError
from ctxagent.context.floor.beneath import Beneath, Entry, read_regular, replace_file, scan_dir
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS, BoundedPattern
from ctxagent.context.floor.state_paths import describe_os_error, ensure_parent, spill_dir
from ctxagent.context.tokens import TokenCounter

HANDLE_LEN = 12
MAX_LINE_CHARS = 400  # one minified-JSON line must not defeat a line-based preview
DEFAULT_SPILL_TOKENS = 2000
READ_MAX_CHARS = 4000  # ≈ 1,000 English tokens: a read_spill page stays under the spill threshold


def _fit(lines: list[str], max_chars: int) -> list[str]:
    """As many whole lines as fit in max_chars (at least one, clipped)."""
    out: list[str] = []
    used = 0
    for line in lines:
        if out and used + len(line) + 1 > max_chars:
            break
        if not out and len(line) > max_chars:
            line = line[:max_chars] + " …"
        out.append(line)
        used += len(line) + 1
    return out


def marker(cut_lines: int, cut_tokens: int, handle: str) -> str:
    return f"[… {cut_lines} lines / {cut_tokens} tokens cut — full output: read_spill handle={handle}]"


def _clip_line(line: str, limit: int = MAX_LINE_CHARS, from_end: bool = False) -> str:
    if len(line) <= limit:
        return line
    if from_end:
        return f"[{len(line) - limit} chars+]… " + line[-limit:]
    return line[:limit] + f" …[+{len(line) - limit} chars]"


def page_text(text: str, label: str, again: str, offset: int = 0, limit: int = 200, grep: str | None = None,
              max_chars: int = READ_MAX_CHARS, seconds: float = MATCH_SECONDS) -> str:
    """A page of `text` by lines (`offset` 0-based), or its lines matching `grep` (a regex; an invalid one
    is matched literally), numbered, within `max_chars`, with the call (`again` + offset=…) that reads on.
    The grep gets `seconds` of matching (a catastrophic pattern raises PatternTimeoutError, a ToolError).
    Used by read_spill and read_event, so paging and searching work the same everywhere."""
    lines = text.split("\n")
    total = len(lines)
    offset = max(0, int(offset))
    limit = max(1, min(int(limit), 2000))
    if grep:
        try:
            pattern = BoundedPattern(grep, seconds=seconds)
        except ToolError:  # not a valid (or too large a) regex: the literal text
            pattern = BoundedPattern(regex.escape(grep), seconds=seconds, shown=grep)
        hits = [(n, line) for n, line in enumerate(lines, 1) if pattern.search(line)]
        page = _fit([f"{n}: {_clip_line(line, 2000)}" for n, line in hits[offset : offset + limit]], max_chars)
        head = f"[{label}: {len(hits)} matching lines of {total} for {grep!r}; showing {len(page)} from match {offset}]"
        body = list(page)
        if offset + len(page) < len(hits):
            body.append(f"[… more matches: {again} grep={grep!r} offset={offset + len(page)}]")
        return "\n".join([head, *body])
    body = _fit([f"{n}: {_clip_line(line, 2000)}" for n, line in enumerate(lines[offset : offset + limit], offset + 1)], max_chars)
    end = offset + len(body)
    head = f"[{label}: lines {offset + 1}–{end} of {total}]" if body else f"[{label}: offset {offset} is past the end ({total} lines)]"
    if end < total:
        body.append(f"[… {total - end} more lines: {again} offset={end}]")
    return "\n".join([head, *body])


def _fit_line(line: str, counter: TokenCounter, allowance: int, from_end: bool = False) -> str | None:
    """The line, clipped as needed (halving) so it costs at most `allowance` tokens; None if nothing fits."""
    limit = MAX_LINE_CHARS
    clipped = _clip_line(line, limit, from_end)
    while counter.count(clipped) + 1 > allowance:
        limit //= 2
        if limit < 8:
            return None
        clipped = _clip_line(line, limit, from_end)
    return clipped


def head_tail(
    content: str,
    counter: TokenCounter,
    head_tokens: int,
    tail_tokens: int,
    max_head_lines: int = 40,
    max_tail_lines: int = 20,
) -> tuple[list[str], list[str], int]:
    """Pick head and tail lines within token allowances. Returns (head, tail, number of lines cut)."""
    lines = content.split("\n")
    head: list[str] = []
    used = 0
    i = 0
    while i < len(lines) and len(head) < max_head_lines:
        line = _fit_line(lines[i], counter, head_tokens - used) if not head else _clip_line(lines[i])
        cost = counter.count(line) + 1 if line is not None else head_tokens + 1
        if line is None or used + cost > head_tokens:
            break
        head.append(line)
        used += cost
        i += 1
    # a clipped last head line may show its end in the tail (one giant line: its start and its end)
    clipped_head = bool(head) and head[-1] != lines[i - 1]
    tail: list[str] = []
    used = 0
    j = len(lines) - 1
    while (j >= i or (clipped_head and j == i - 1 and not tail)) and len(tail) < max_tail_lines:
        line = _fit_line(lines[j], counter, tail_tokens - used, from_end=True) if not tail else _clip_line(lines[j], from_end=True)
        cost = counter.count(line) + 1 if line is not None else tail_tokens + 1
        if line is None or used + cost > tail_tokens:
            break
        tail.append(line)
        used += cost
        j -= 1
    tail.reverse()
    cut = max(0, len(lines) - len(head) - len(tail) + (1 if clipped_head and j < i else 0))
    return head, tail, cut


@dataclass
class SpillStore:
    dir: Path

    def __post_init__(self) -> None:
        self.dir = Path(self.dir)

    @classmethod
    def for_root(cls, root: Path) -> SpillStore:
        return cls(spill_dir(Path(root)))

    def path_for(self, digest: str) -> Path:
        return self.dir / f"{digest}.txt"

    def _walk(self, name: str, *, create: bool = False) -> Entry:
        """`name` in the spill folder, the folder taken from its grandparent without following a link."""
        anchor = self.dir.parent.parent
        base = Beneath(anchor)
        try:
            return base.walk(f"{self.dir.parent.name}/{self.dir.name}/{name}", follow=False, follow_last=False,
                             create_dirs=create, shown=name)
        finally:
            base.close()

    def put(self, content: str) -> str:
        """Store content (idempotent: same content, same file) and return its handle."""
        return self.put_blob(content.encode("utf-8", "surrogatepass"), ".txt")

    def put_blob(self, data: bytes, suffix: str) -> str:
        """Store bytes as `<sha256><suffix>` (an image: `.img`), idempotently; return the handle."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.dir / f"{digest}{suffix}"
        try:
            ensure_parent(path)  # a `.ctxagent/` on the way gets its checks and .gitignore
            with self._walk(path.name, create=True) as entry:
                if entry.st is not None and stat.S_ISREG(entry.st.st_mode) and entry.st.st_nlink == 1:
                    return digest[:HANDLE_LEN]
                replace_file(entry.dir_fd, entry.name, data, 0o600)  # a planted link is replaced, not followed
        except (OSError, ContextError) as exc:
            reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
            raise ContextError(f"cannot write the spill file {path}: {reason}") from exc
        return digest[:HANDLE_LEN]

    def get_blob(self, handle: str, suffix: str) -> bytes:
        """The bytes stored under `handle` with `suffix` (ToolError when there are none)."""
        name = self.resolve(handle, suffix).name
        try:
            with self._walk(name) as entry:
                return read_regular(entry, f"spill {name}")
        except OSError as exc:
            raise ToolError(f"cannot read the stored file {name}: {describe_os_error(exc)}") from exc

    def _names(self) -> list[str]:
        try:
            with self._walk(".") as entry:
                return [e.name for e in scan_dir(entry, str(self.dir))]
        except (OSError, CtxagentError):
            return []

    def resolve(self, handle: str, suffix: str = ".txt") -> Path:
        handle = (handle or "").strip().lower()
        if not re.fullmatch(r"[0-9a-f]{6,64}", handle):
            raise ToolError(f"invalid spill handle {handle!r}: expected the hex handle shown in the output")
        matches = sorted(n for n in self._names() if n.startswith(handle) and n.endswith(suffix))
        if not matches:
            raise ToolError(f"no spilled output with handle {handle!r} in {self.dir}")
        if len(matches) > 1:
            raise ToolError(f"spill handle {handle!r} is ambiguous; give more characters")
        return self.dir / matches[0]

    def get(self, handle: str) -> str:
        name = self.resolve(handle).name
        try:
            with self._walk(name) as entry:
                data = read_regular(entry, f"spill {name}")
        except OSError as exc:
            raise ToolError(f"cannot read the spilled output {name}: {describe_os_error(exc)}") from exc
        return data.decode("utf-8", "surrogatepass")

    def maybe_spill(
        self, content: str, counter: TokenCounter, spill_tokens: int = DEFAULT_SPILL_TOKENS
    ) -> tuple[str, dict[str, Any] | None]:
        """Return (what the model sees, spill meta or None). Content within `spill_tokens` is unchanged."""
        tokens = counter.count(content)
        if tokens <= spill_tokens:
            return content, None
        handle = self.put(content)
        lines = content.count("\n") + 1
        # the preview stays well under the spill threshold: ~30 % head, ~15 % tail
        head, tail, cut = head_tail(content, counter, max(50, spill_tokens * 3 // 10), max(25, spill_tokens * 3 // 20))
        shown_tokens = sum(counter.count(x) + 1 for x in head + tail)
        parts = head + ["", marker(cut, max(0, tokens - shown_tokens), handle), ""] + tail
        shown = "\n".join(parts).rstrip("\n")
        return shown, {"handle": handle, "lines": lines, "tokens": tokens}

    def read(
        self, handle: str, offset: int = 0, limit: int = 200, grep: str | None = None, max_chars: int = READ_MAX_CHARS,
        seconds: float = MATCH_SECONDS,
    ) -> str:
        """Page the spilled text by lines (`offset` 0-based) or grep it (invalid regex → literal match).

        A page stays under `max_chars` so that reading a spill never needs spilling itself. The grep
        gets `seconds` of matching (a catastrophic pattern raises PatternTimeoutError, a ToolError).
        """
        short = handle.strip().lower()[:HANDLE_LEN]
        return page_text(self.get(handle), f"spill {short}", f"read_spill handle={short}", offset, limit, grep,
                         max_chars, seconds)
