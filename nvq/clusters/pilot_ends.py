"""What is said of a pilot's end (its `pilot_ended` or `pilot_released` event): the
queue gave it back (`released: …`, never a failed start) or Slurm ended it."""

from __future__ import annotations

# Said of a pilot that left squeue or stopped running (scancel, walltime, preemption).
ENDED = "the Slurm allocation ended"
RELEASED = "released: no job needed it"
DRAINED = "released: the cluster is drained"


def released_why(target: int | None) -> str:
    """Why the pilots a decision gives back go: a drain or a person's count, else no
    job needed them (said of pending ones too: jobs may wait, for a drained cluster)."""
    if target == 0:
        return DRAINED
    if target is not None:
        return f"released: the cluster is scaled to {target}"
    return RELEASED
