"""A submit whose shell would run the job with nvq's own interpreter.

The job runs with the PATH captured from the submitting shell. When nvq lives in a
virtual environment whose `bin` is on that PATH (`source .venv/bin/activate` in the
nvq checkout, the way `make install` leaves it), `python` in the job is nvq's own
interpreter, without the project's packages: the first real job fails with
`ModuleNotFoundError`. The submit says so once per queue home and interpreter, with
the fix (install nvq as a tool, activate the project's venv)."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

# Words in a command that are never the job's interpreter even when they resolve into
# nvq's bin directory: nvq itself (a job may submit another job).
_NOT_INTERPRETERS = frozenset({"nvq"})


def own_bin() -> Path | None:
    """nvq's own virtual environment's bin directory, or None when nvq runs from a
    system interpreter (whose python is the user's too)."""
    if sys.prefix == sys.base_prefix:
        return None
    return Path(sys.prefix) / "bin"


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def own_interpreter_word(command: str, path: str, bin_dir: Path) -> str | None:
    """The first bare word of `command` that `path` resolves into `bin_dir` (nvq's
    own environment), e.g. `python`; None when the job would run the user's own."""
    try:
        home = bin_dir.resolve()
    except OSError:
        return None
    for word in _words(command):
        if "/" in word or "=" in word or word in _NOT_INTERPRETERS:
            continue
        found = shutil.which(word, path=path)
        if found is None:
            continue
        try:
            if Path(found).parent.resolve() == home:
                return word
        except OSError:
            continue
    return None


def warning_line(word: str, bin_dir: Path) -> str:
    return (
        f"warning: `{word}` on this shell's PATH is nvq's own ({bin_dir}/{word}): the job "
        "would run without your project's packages. Install nvq for good "
        "(`pipx install /path/to/nvq` or `uv tool install /path/to/nvq`, then "
        "`deactivate`) and submit from your project's venv. Said once."
    )


def warn_once(command: str, env: Mapping[str, str], home: Path) -> None:
    """Print the warning to stderr the first time this queue home sees a submit that
    would run nvq's own interpreter (a marker under `home` remembers it)."""
    bin_dir = own_bin()
    if bin_dir is None or not command:
        return
    word = own_interpreter_word(command, env.get("PATH", ""), bin_dir)
    if word is None:
        return
    key = hashlib.sha256(str(bin_dir).encode()).hexdigest()[:16]
    marker = home / "warned" / f"own-python-{key}"
    if marker.exists():
        return
    print(warning_line(word, bin_dir), file=sys.stderr)
    try:
        marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError:
        pass  # a member of a shared queue cannot write the owner's home: said again
