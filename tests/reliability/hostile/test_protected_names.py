"""Family: git's and ctxagent's own folders, in every spelling a case-insensitive file system takes
for the same name (issue 19: `.GIT/hooks` passed the case-sensitive check).

The one rule (tools/confine.py, `protected_part`) folds case, drops the code points HFS+ ignores,
trailing dots and spaces (Windows), and knows the 8.3 short names; every writer goes through it:
write_file, edit_file and the rewind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import Victim, plain_repo
from ctxagent.agent.checkpoints.shadow_git import CheckpointError
from ctxagent.agent.checkpoints.worktree import write_entry
from ctxagent.tools import make_registry
from ctxagent.tools.confine import protected_part, resolve_in_repo
from ctxagent.tools.contract import ToolContext

REG = make_registry()
SPELLINGS = [".git/hooks/pre-commit", ".GIT/hooks/pre-commit", ".Git/config", ".gIT/info/attributes",
             ".g\u200cit/hooks/post-checkout", ".git./config", ".git /config", "GIT~1/config", "git~1/HEAD",
             ".ctxagent/memory.db", ".CTXAGENT/config.toml", ".CtxAgent/sessions/x.jsonl", "CTXAGE~1/config.toml",
             "sub/.GIT/hooks/pre-commit", "./.GiT/hooks/x", "a/../.GIT/hooks/x"]
ALLOWED = ["git/hooks.txt", ".gitignore", ".github/workflows/ci.yml", ".gitattributes", "ctxagent.md", "x.git/y"]


@pytest.mark.parametrize("path", SPELLINGS)
def test_every_spelling_of_a_protected_folder_is_refused_for_writing(victim: Victim, path: str) -> None:
    repo = plain_repo(victim)
    for name, args in [("write_file", {"path": path, "content": "#!/bin/sh\ntouch PWNED\n"}),
                       ("edit_file", {"path": path, "old_text": "a", "new_text": "b"})]:
        r = REG.run(name, args, ToolContext(root=repo))
        assert r.is_error and "refusing to write into" in r.content, (name, path, r.content)
    with pytest.raises(CheckpointError):
        write_entry(repo, path.removeprefix("./"), "100755", b"#!/bin/sh\n")
    with pytest.raises(Exception, match="refusing to write into"):
        resolve_in_repo(repo, path, for_write=True)
    assert not any(p.name == "PWNED" for p in repo.rglob("*"))


@pytest.mark.parametrize("path", ALLOWED)
def test_names_that_only_look_alike_are_written(victim: Victim, path: str) -> None:
    repo = plain_repo(victim)
    assert protected_part(Path(path).parts) is None
    r = REG.run("write_file", {"path": path, "content": "ok\n"}, ToolContext(root=repo))
    assert not r.is_error, r.content
    assert (repo / path).read_text() == "ok\n"
