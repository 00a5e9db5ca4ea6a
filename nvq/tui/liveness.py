"""What moves on the screen without an event: a running job's progress line, which the
daemon keeps from the node's samples (not events), read back with the active jobs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nvq.model import Job


def progress_changes(shown: Mapping[int, Job], active: Iterable[Job]) -> list[Job]:
    """The active jobs whose progress line differs from the one the panel holds; jobs
    the panel does not hold are for the event stream to bring."""
    return [j for j in active if j.id in shown and shown[j.id].progress != j.progress]
