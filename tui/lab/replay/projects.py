"""Where Claude Code keeps a repository's sessions, and which transcripts are there.

Claude Code writes every session to `<config>/projects/<encoded cwd>/<session id>.jsonl`, where
`<config>` is `$CLAUDE_CONFIG_DIR`, else `~/.claude`, and the encoded cwd is the working directory
(NFC-normalized) with every UTF-16 code unit that is not an ASCII letter or digit replaced by `-`,
runs not collapsed (`/home/me/my_app` → `-home-me-my-app`). A name longer than 200 characters is cut
to 200 and given `-` and a base-36 hash of the path; the hash has changed between Claude Code
versions, so a long name is also matched on its 200-character prefix, and the transcripts' own
`cwd` field settles which folder is this repository's.

A session's subagents are `<session id>/subagents/agent-*.jsonl` (older versions: `agent-*.jsonl`
beside the sessions, naming their parent in `sessionId`). `agent-acompact-*` transcripts are not
subagents but a session's own compaction calls: the reader bills them with that compaction.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import StateDirError
from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.roots import repository_above

NAME_CAP = 200  # Claude Code's cap on an encoded project folder name, before the hash suffix
COMPACTION_CALLS = "agent-acompact-"


def config_dir() -> Path:
    """Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def projects_dir() -> Path:
    return config_dir() / "projects"


def _units(text: str) -> list[int]:
    """The UTF-16 code units of `text` (what JavaScript's string functions iterate)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _hash36(text: str) -> str:
    """JavaScript's `(h << 5) - h + charCodeAt(i) | 0` over the path, as `Math.abs(h).toString(36)`."""
    h = 0
    for unit in _units(text):
        h = ((h << 5) - h + unit) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    n, digits = abs(h), "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def encode_cwd(cwd: str | Path) -> str:
    """The folder name Claude Code gives the sessions of `cwd`."""
    text = unicodedata.normalize("NFC", str(cwd))
    name = "".join(chr(u) if u < 128 and chr(u).isalnum() else "-" for u in _units(text))
    if len(name) <= NAME_CAP:
        return name
    return f"{name[:NAME_CAP]}-{_hash36(text)}"


def _recorded_cwd(folder: Path) -> str | None:
    """The `cwd` the first transcript in `folder` records (its first few lines)."""
    for f in sorted(folder.glob("*.jsonl"))[:3]:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for _, line in zip(range(20), fh, strict=False):
                    try:
                        rec = bounded_json.loads(line, bounded_json.LOG_DEPTH)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and isinstance(rec.get("cwd"), str):
                        return str(rec["cwd"])
        except OSError:
            continue
    return None


def project_folder(cwd: Path, root: Path | None = None) -> tuple[Path | None, list[Path]]:
    """The projects folder of `cwd` (else of its repository's root), and every folder looked at."""
    root = root or projects_dir()
    looked: list[Path] = []
    starts = [cwd]
    try:
        top = repository_above(cwd)  # ctxagent's own rule: never the home folder's dotfiles .git
    except StateDirError:  # a repository that moves its work tree: only the folder itself is looked up
        top = None
    if top is not None and top != cwd:
        starts.append(top)
    for start in starts:
        name = encode_cwd(start)
        exact = root / name
        looked.append(exact)
        if exact.is_dir():
            return exact, looked
        if len(name) > NAME_CAP and root.is_dir():
            # another version's hash: the same 200-character prefix, and the transcripts name this cwd
            prefix = name[:NAME_CAP] + "-"
            for cand in sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix)):
                looked.append(cand)
                if _recorded_cwd(cand) in (str(start), None):
                    return cand, looked
    return None, looked


@dataclass(frozen=True)
class SessionFile:
    path: Path
    project: str  # the project folder's name
    session: str  # the session id (a subagent: `agent-…`)
    parent: str | None = None  # a subagent's session

    @property
    def label(self) -> str:
        return self.session if self.parent is None else f"{self.parent[:8]}/{self.session}"


def _parent_of(path: Path) -> str | None:
    """The `sessionId` a top-level subagent transcript names (its first records)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(20), fh, strict=False):
                try:
                    rec = bounded_json.loads(line, bounded_json.LOG_DEPTH)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("sessionId"), str):
                    return str(rec["sessionId"])
    except OSError:
        return None
    return None


def sessions_in(folder: Path) -> list[SessionFile]:
    """A project folder's sessions, each followed by its subagents."""
    project = folder.name
    out: list[SessionFile] = []
    loose: list[SessionFile] = []
    for f in sorted(p for p in folder.glob("*.jsonl") if p.is_file()):
        if f.name.startswith(COMPACTION_CALLS):
            continue
        if f.name.startswith("agent-"):
            loose.append(SessionFile(f, project, f.stem, _parent_of(f) or "?"))
            continue
        out.append(SessionFile(f, project, f.stem))
        subs = folder / f.stem / "subagents"
        if subs.is_dir():
            out += [SessionFile(s, project, s.stem, f.stem) for s in sorted(subs.glob("agent-*.jsonl"))
                    if s.is_file() and not s.name.startswith(COMPACTION_CALLS)]
    for sub in loose:  # after their parent, when it is here
        at = next((i for i, s in enumerate(out) if s.session == sub.parent), None)
        if at is None:
            out.append(sub)
        else:
            while at + 1 < len(out) and out[at + 1].parent == sub.parent:
                at += 1
            out.insert(at + 1, sub)
    return out


def discover(path: Path | None, every: bool, cwd: Path) -> tuple[list[SessionFile], list[Path]]:
    """The transcripts to replay, and where they were looked for.

    `path`: a transcript, a project folder, or a folder of project folders (default: this repository's
    project folder; with `every`, the whole projects folder)."""
    if path is None:
        if every:
            path = projects_dir()
        else:
            found, looked = project_folder(cwd)
            return (sessions_in(found) if found is not None else []), looked
    path = path.expanduser()
    if path.is_file():
        subs = path.parent / path.stem / "subagents"
        files = [SessionFile(path, path.parent.name, path.stem)]
        if subs.is_dir():
            files += [SessionFile(s, path.parent.name, s.stem, path.stem) for s in sorted(subs.glob("agent-*.jsonl"))
                      if s.is_file() and not s.name.startswith(COMPACTION_CALLS)]
        return files, [path]
    if not path.is_dir():
        return [], [path]
    own = sessions_in(path)
    if own and not every:
        return own, [path]
    folders = sorted(p for p in path.iterdir() if p.is_dir() and any(p.glob("*.jsonl")))
    if not folders:
        return own, [path]
    return own + [s for f in folders for s in sessions_in(f)], [path]
