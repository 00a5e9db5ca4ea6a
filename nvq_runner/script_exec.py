"""A job's script as the wrapper's bash runs it: `exec CMD` when CMD is one plain
command (what `nvq job submit -- prog args…` sends), so the program replaces that bash
instead of being forked by it.

The fork and the second process's exit sit on the path from one job's exit to the
next one's start. `exec` is added only when it runs exactly what CMD alone would: CMD
is a list of words as `shlex.join` writes them (nothing bash would expand, redirect or
split differently), its first word is not a bash builtin or keyword, not an
assignment, not an exported function, and names a program found now (the PATH the
job gets, or a path from its working directory); a program not found keeps bash's own
"command not found" line. Stdlib only: the runner runs on Python 3.9.

Where the program is a binary or starts with `#!`, the wrapper runs those words itself
(`direct_argv`) and no bash starts at all: `exec` there costs a bash's start-up, on the
same path. A script without `#!` keeps bash, which would run it as a bash script where
the wrapper's sh would run it as an sh one."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Optional

# bash 5's builtins and reserved words: `exec` would run a program of the same name
# (/usr/bin/printf, /usr/bin/test) or fail, where bash runs its own.
BASH_WORDS = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        ". : [ [[ ]] ! { } alias bg bind break builtin caller case cd command compgen complete "
        "compopt continue coproc declare dirs disown do done echo elif else enable esac eval "
        "exec exit export false fc fg fi for function getopts hash help history if in jobs "
        "kill let local logout mapfile popd printf pushd pwd read readarray readonly return "
        "select set shift shopt source suspend test then time times trap true type typeset "
        "ulimit umask unalias unset until wait while"
    ).split()
)


class Who(NamedTuple):
    """The user a job runs as, for the permission checks the kernel will make."""

    uid: int
    gids: frozenset[int]


def exec_form(command: str, env: Mapping[str, str], workdir: Path,
              who: Optional[Who] = None) -> str:
    """`command` (ending in a newline) as the script to write: `exec …` where that is
    the same program run with the same words, else unchanged."""
    text = command.strip()
    if not text or "\n" in text:
        return command
    try:
        words = shlex.split(text)
    except ValueError:
        return command
    if not words or shlex.join(words) != text:
        return command
    first = words[0]
    if first in BASH_WORDS or "=" in first or f"BASH_FUNC_{first}%%" in env:
        return command
    if _found(first, env, workdir, who) is None:
        return command
    return f"exec {text}\n"


def direct_argv(script: str, env: Mapping[str, str], workdir: Path,
                who: Optional[Who] = None) -> list[str] | None:
    """The words of `script` (as `exec_form` wrote it) when the wrapper may run them
    itself: an `exec` of a program the kernel starts on its own (an ELF binary, or a
    file that names its interpreter with `#!`). None: the wrapper runs the script."""
    if not script.startswith("exec "):
        return None
    words = shlex.split(script[len("exec "):])
    program = _found(words[0], env, workdir, who)
    if program is None:
        return None
    try:
        with program.open("rb") as f:
            head = f.read(4)
    except OSError:
        return None
    return words if head == b"\x7fELF" or head.startswith(b"#!") else None


def _found(name: str, env: Mapping[str, str], workdir: Path,
           who: Optional[Who]) -> Path | None:
    """The file bash would run for `name`, when that is certain."""
    if "/" in name:
        path = workdir / name
        return path if _executable(path, who) else None
    for entry in env.get("PATH", os.defpath).split(":"):
        if not entry.startswith("/"):
            return None  # "" or a relative entry: bash looks in the cwd; leave it to bash
        if _executable(Path(entry) / name, who):
            return Path(entry) / name
    return None


def _executable(path: Path, who: Optional[Who]) -> bool:
    if who is None:
        return path.is_file() and os.access(path, os.X_OK)
    try:
        st = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and may_execute(st.st_mode, st.st_uid, st.st_gid, who)


def may_execute(mode: int, owner: int, group: int, who: Who) -> bool:
    """The kernel's rule for a non-root user: the owner's bits, else the group's, else
    everyone's (the first class that matches decides, even when it says no)."""
    if who.uid == 0:
        return bool(mode & 0o111)
    if owner == who.uid:
        return bool(mode & stat.S_IXUSR)
    if group in who.gids:
        return bool(mode & stat.S_IXGRP)
    return bool(mode & stat.S_IXOTH)
