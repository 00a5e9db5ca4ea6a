"""What the same command reached before, and what a submit makes of it: a warning
when its `--vram` is below that, and the reservation `--vram auto` asks for. Pure.

"The same command": jobs whose command is the one submitted, or for an array (a
command with `{}`), any command the template can expand to. What it reached: the
most GPU memory any measured attempt of its last `RECENT` jobs held on one card (an
older run is forgotten, so a job made smaller is not held to its old size forever).

`--vram auto` reserves that peak × `AUTO_MARGIN`, rounded up to a whole GiB. With no
measured attempt it is refused: there is nothing to size it by."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nvq.domain.gpu_oom import gib

VRAM_AUTO = -1  # JobSpec.vram_mb as a submit sends `--vram auto`; never stored
AUTO_MARGIN = 1.2
RECENT = 20
_GIB = 1024


@dataclass(frozen=True)
class Reached:
    """The highest peak among the command's recent attempts, and where it was seen."""

    peak_mb: int
    job_id: int
    attempt: int

    def where(self) -> str:
        return f"job {self.job_id}, attempt {self.attempt}"


def like_pattern(command: str) -> str | None:
    """An array template's commands as an SQL LIKE pattern (escape `\\`), `{}` matching
    any index; None for a plain command (matched exactly)."""
    if "{}" not in command:
        return None
    escaped = command.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("{}", "%")


def auto_vram(reached: Reached) -> int:
    return math.ceil(reached.peak_mb * AUTO_MARGIN / _GIB) * _GIB


def auto_note(reached: Reached) -> str:
    """`--vram auto: 8 GiB, from the 6.2 GiB this command reached (job 12, attempt 1)`."""
    return (
        f"--vram auto: {gib(auto_vram(reached))}, from the {gib(reached.peak_mb)} this "
        f"command reached ({reached.where()}) × {AUTO_MARGIN:g}"
    )


NO_HISTORY = (
    "--vram auto: no earlier run of this command has a measured GPU memory peak "
    "(`job show ID --json`: peak_vram_mb); give --vram SIZE for its first run"
)


def below_note(vram_mb: int, reached: Reached | None) -> str | None:
    """The warning for a reservation below what the command reached, else None."""
    if reached is None or vram_mb <= 0 or vram_mb >= reached.peak_mb:
        return None
    return (
        f"--vram {gib(vram_mb)} is below the {gib(reached.peak_mb)} this command reached "
        f"before ({reached.where()}); --vram auto would reserve {gib(auto_vram(reached))}"
    )
