"""Where the older CPythons a node may have live on this machine (pyenv's)."""

from __future__ import annotations

import os
from pathlib import Path


def old_python(version: tuple[int, int]) -> Path | None:
    """The newest pyenv CPython `version` here (its bin/python3), or None."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(
        root.glob(f"{version[0]}.{version[1]}.*/bin/python3"),
        key=lambda p: [int(x) for x in p.parent.parent.name.split(".") if x.isdigit()],
    )
    return found[-1] if found else None
