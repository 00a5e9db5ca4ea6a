"""What moves on the screen without an event: a running job's progress line, which the
daemon keeps from the node's samples (not events), read with `ProgressLines` (a few
bytes a job: a listing carries each job's whole record)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from nvq.control import ProgressLine
from nvq.model import Job


def progress_changes(shown: Mapping[int, Job], lines: Iterable[ProgressLine]) -> list[Job]:
    """The shown jobs whose progress line moved, as they now read; jobs the panel does
    not hold are for the event stream to bring."""
    return [
        msgspec.structs.replace(shown[line.id], progress=line.progress)
        for line in lines
        if line.id in shown and shown[line.id].progress != line.progress
    ]
