"""The running jobs' progress lines, the one thing the live front ends (the terminal
UI, the web page) read every few seconds: samples keep them in the daemon's memory and
no event carries them. A member of `Request` (requests.py) like the rest."""

from __future__ import annotations

import msgspec


class ProgressLines(msgspec.Struct, tag="progress_lines", frozen=True):
    """The progress line of every running job whose output the asker may read (a few
    bytes a job, where a listing carries each job's whole record)."""


class ProgressLine(msgspec.Struct, kw_only=True):
    """One running job's last progress line (None: none written yet)."""

    id: int
    progress: str | None
