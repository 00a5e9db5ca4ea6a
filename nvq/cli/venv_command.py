"""A command that starts with a path into a virtual environment in the submit
directory (`.venv/bin/python train.py`), made to run that environment by its
absolute path.

The snapshot leaves virtual environments out (a directory holding `pyvenv.cfg`: its
interpreter is a link into this machine's Python, and its packages are built for
it), so that relative path names nothing in the job's working copy and the job
failed with `No such file or directory`, exit 127. Run by its absolute path, the
venv is used where it lies, exactly as an activated one is (`source .venv/bin/
activate`, then `python train.py`): on this machine's node, or any node that sees
the same path."""

from __future__ import annotations

import os
import shlex

from nvq.world.snapshot import VENV_MARKER


def venv_command(command: str, cwd: str) -> str:
    """`command` with its first word absolute when that word is a relative path, from
    `cwd`, through a virtual environment inside `cwd`; else `command` unchanged."""
    stripped = command.lstrip()
    try:
        words = shlex.split(stripped)
    except ValueError:
        return command
    if not words:
        return command
    first = words[0]
    if "/" not in first or first.startswith(("/", "~")) or "=" in first:
        return command
    target = os.path.normpath(os.path.join(cwd, first))  # not resolved: a venv's
    # python is a link out of it, and through the link the venv would be lost
    if not target.startswith(cwd.rstrip("/") + "/") or not _in_a_venv(target, cwd):
        return command
    # the first word as typed, quoted or not, is replaced and the rest kept byte for byte
    for typed in (first, f"'{first}'", f'"{first}"'):
        rest = stripped[len(typed):]
        if stripped.startswith(typed) and (not rest or rest[0].isspace()):
            return shlex.quote(target) + rest
    return command


def _in_a_venv(path: str, top: str) -> bool:
    """Whether a directory between `top` (excluded) and `path` holds `pyvenv.cfg`."""
    parent = os.path.dirname(path)
    top = top.rstrip("/") or "/"
    while parent.startswith(top + "/"):
        if os.path.isfile(os.path.join(parent, VENV_MARKER)):
            return True
        parent = os.path.dirname(parent)
    return False
