"""How an array member is named wherever a job is shown: `ARRAY[INDEX]`. A module of
its own so that `job logs` names one without loading the job tables (nvq.cli.render.jobs)
on its fast path."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.model import Job


def member_label(job: Job) -> str | None:
    """`7[3]`: an array member as `ARRAY[INDEX]` (the syntax every id argument takes)."""
    if job.array_id is None or job.array_index is None:
        return None
    return f"{job.array_id}[{job.array_index}]"
