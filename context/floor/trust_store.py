"""The user's trust list on disk: which repositories, and which bytes of their files, the user trusted.

`trusted_repos.json` in the user state dir (`CTXAGENT_HOME` or the platform's), read-modify-written
under a lock, atomically (a temp file renamed over it) and private (0600). Its shape (version 2):

    {"version": 2,
     "trusted":   {"/abs/repo": {"since": "…", "files": {".ctxagent/config.toml": "sha256:…", ".mcp.json": null}}},
     "declined":  {"/abs/repo": {"keys": ["permission_mode"], "files": {…}, "at": "…"}},
     "confirmed": {"/abs/repo": {".ctxagent/commands/review.md": "sha256:…"}}}

Repositories are keyed by their resolved path, files by their path in the repository. `files` maps a
file to the digest of the bytes the user trusted (null: it did not exist then), so trust is keyed on
content: anything that writes the file afterwards — a sandboxed command, a `git pull`, an editor —
makes it untrusted again until the user looks at the change (agent/trust.py). A `trusted` entry with
no `files` was written by an older ctxagent, which keyed trust on the path alone: it trusts no bytes.
`confirmed` holds the project commands the user confirmed (agent/custom_commands.py), the same way.

The bytes behind every digest of `trusted` and `confirmed` are kept in `trusted-content/<hex>` beside
the list (0600 in a 0700 folder), so a later change is shown as a diff of what the user saw; content no
entry names any more is removed at the next write. A missing or damaged list trusts nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.display import show_controls
from ctxagent.context.floor.state_paths import describe_os_error, user_state_dir

try:
    import fcntl
except ImportError:  # not on POSIX: writes are still atomic, only not serialised
    fcntl = None  # type: ignore[assignment]  # the module's name bound to None: callers test `fcntl is not None`

TRUST_FILE = "trusted_repos.json"
CONTENT_DIR = "trusted-content"
VERSION = 2
TABLES = ("trusted", "declined", "confirmed")
MAX_SHOWN_LINES = 80  # of a diff or a whole file shown in a prompt, on stderr or by `ctxagent trust`
MAX_LINE_CHARS = 240  # of one shown line
MAX_DIFF_LINES = 20_000  # two versions longer than this together are shown whole (bounded), not diffed
_DIGEST = "sha256:"


def digest(data: bytes | None) -> str | None:
    """`sha256:<hex>` of the bytes; None for a file that does not exist."""
    return None if data is None else _DIGEST + hashlib.sha256(data).hexdigest()


def repo_key(root: str | os.PathLike[str]) -> str:
    return str(Path(root).resolve())


def list_path() -> Path:
    return user_state_dir() / TRUST_FILE


def read_list() -> dict[str, Any]:
    """The list's data, each table a dict; a missing or damaged file trusts nothing (the safe reading)."""
    try:
        data = json.loads(list_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    return {"version": VERSION, **{t: data[t] if isinstance(data.get(t), dict) else {} for t in TABLES}}


def entry(table: str, root: str | os.PathLike[str]) -> dict[str, Any] | None:
    found = read_list()[table].get(repo_key(root))
    return found if isinstance(found, dict) else None


def update_list(change: Callable[[dict[str, Any]], None], keep: Iterable[bytes] = ()) -> None:
    """Read-modify-write the list under a lock, atomically, private to the user. `keep`: bytes whose
    digests `change` records (stored first, so the list never names content that is not there)."""
    path = list_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a+b") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            for content in keep:
                _put_content(content)
            data = read_list()
            change(data)
            _write_private(path, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8"))
            _drop_unnamed(data)
    except OSError as exc:
        raise ConfigError(f"cannot write the trust list {path}: {describe_os_error(exc)}") from exc


def _write_private(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust-")  # mkstemp makes it 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _content_dir() -> Path:
    return user_state_dir() / CONTENT_DIR


def _content_path(name: str | None) -> Path | None:
    if not isinstance(name, str) or not name.startswith(_DIGEST):
        return None
    hexa = name[len(_DIGEST):]
    return _content_dir() / hexa if len(hexa) == 64 and all(c in "0123456789abcdef" for c in hexa) else None


def _put_content(data: bytes) -> None:
    target = _content_path(digest(data))
    assert target is not None
    if target.exists():
        return
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write_private(target, data)


def stored_content(name: str | None) -> bytes | None:
    """The bytes the user trusted under this digest; None when they are not kept (or do not match it)."""
    path = _content_path(name)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if digest(data) == name else None


def _named(data: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for table in ("trusted", "confirmed"):
        for value in data[table].values():
            files = value.get("files") if table == "trusted" and isinstance(value, dict) else value
            if isinstance(files, dict):
                out |= {d for d in files.values() if isinstance(d, str)}
    return out


def _drop_unnamed(data: Mapping[str, Any]) -> None:
    """Remove the kept content no entry names any more (a revoked repository, a file trusted anew)."""
    folder = _content_dir()
    named = {d[len(_DIGEST):] for d in _named(data)}
    try:
        stale = [p for p in folder.iterdir() if p.name not in named]
    except OSError:
        return
    for p in stale:
        p.unlink(missing_ok=True)


# -- what changed, for a person ----------------------------------------------------------------------

def describe_change(rel: str, before: bytes | None, after: bytes | None, *, known: bool, verb: str = "trusted") -> str:
    """What `rel` holds now against what the user trusted (`verb`: or confirmed), bounded and with every
    control character shown: a unified diff when the trusted bytes are `known`, else the whole file (a
    first look, or an entry from before content was recorded)."""
    shown = show_controls(rel)
    if after is None:
        return f"{shown}: removed" + (f" (it existed when you {verb} it)" if known and before is not None else "")
    new = after.decode("utf-8", errors="replace").splitlines()
    old = before.decode("utf-8", errors="replace").splitlines() if known and before is not None else None
    if old is None or len(old) + len(new) > MAX_DIFF_LINES:
        what = (f"new since you {verb} this repository" if before is None else "changed; too long to compare, "
                "the new version") if known else "all of it"
        head, body = f"{shown} — {what} ({len(new)} line{'s' if len(new) != 1 else ''}):", [f"+ {x}" for x in new]
    else:
        diff = list(difflib.unified_diff(old, new, f"as you {verb} it", "now", n=2, lineterm=""))
        if not diff:
            return f"{shown}: unchanged"
        head, body = f"{shown} — changed since you {verb} it:", diff[2:]
    return "\n".join([head, *_bounded(body, rel)])


def bounded(text: str, rel: str) -> str:
    """`text` for a person to judge: at most MAX_SHOWN_LINES lines of at most MAX_LINE_CHARS, every
    control character shown; what is left out is counted and `rel` named as where to read it."""
    return "\n".join(_bounded(text.splitlines(), rel))


def _bounded(lines: list[str], rel: str) -> list[str]:
    out = [show_controls(_cut(x)) for x in lines[:MAX_SHOWN_LINES]]
    if len(lines) > MAX_SHOWN_LINES:
        out.append(f"… {len(lines) - MAX_SHOWN_LINES} more lines not shown: read {show_controls(rel)} itself")
    return out


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}… ({len(line) - MAX_LINE_CHARS} more characters)"
