"""nvq's Agent Skill: the Markdown file shipped beside this module, and where
`nvq skill install` puts it.

Agent Skills-compatible tools look for `<skills dir>/<name>/SKILL.md`: Claude Code in
`~/.claude/skills` (or a project's `.claude/skills`), Codex in `~/.codex/skills`."""

from __future__ import annotations

import os
from pathlib import Path

NAME = "nvq"
SOURCE = Path(__file__).with_name("SKILL.md")
DEFAULT_DIR = "~/.claude/skills"
OTHER_DIRS = {
    "Claude Code (this project only)": ".claude/skills",
    "Codex": "~/.codex/skills",
}


def text() -> str:
    return SOURCE.read_text(encoding="utf-8")


def target(skills_dir: str | None) -> Path:
    """Where the skill goes: `<skills dir>/nvq/SKILL.md`."""
    base = Path(skills_dir or DEFAULT_DIR).expanduser()
    return base.absolute() / NAME / "SKILL.md"


def install(skills_dir: str | None) -> tuple[Path, bool]:
    """Write the skill; (its path, whether the file changed). The file is the
    user's own (0600): nvq writes nothing readable by others unless told to."""
    path = target(skills_dir)
    body = text()
    try:
        unchanged = path.read_text(encoding="utf-8") == body
    except OSError:
        unchanged = False
    if not unchanged:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, path)
    return path, not unchanged
