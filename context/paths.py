"""Where user-level state and configuration live.

`CTXAGENT_HOME` relocates everything user-level (tests set it to a temporary directory), so a
test or a sandboxed run never touches the real user's files.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "ctxagent"


def _home() -> Path | None:
    value = os.environ.get("CTXAGENT_HOME", "").strip()
    return Path(value).expanduser() if value else None


def user_state_dir() -> Path:
    """Sessions, calibration and the user-level memory: CTXAGENT_HOME if set, else the platform's state dir."""
    home = _home()
    return home if home is not None else Path(platformdirs.user_state_dir(APP_NAME))


def user_config_dir() -> Path:
    """The user config file's folder: CTXAGENT_HOME/config if set, else the platform's config dir."""
    home = _home()
    return home / "config" if home is not None else Path(platformdirs.user_config_dir(APP_NAME))


def project_state_dir(root: Path) -> Path:
    """The per-repository state folder (<root>/.ctxagent): spill files, memory.db, checkpoints."""
    return Path(root) / ".ctxagent"


def spill_dir(root: Path) -> Path:
    return project_state_dir(root) / "spill"
