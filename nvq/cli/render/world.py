"""The lines of `job show` about a job's world: where it was submitted from, what it
took with it, its environment (secrets hidden) and what a node left out of it."""

from __future__ import annotations

from nvq.model import Job
from nvq.world.environment import masked

SHORT_ID = 12


def world_lines(job: Job) -> list[str]:
    out: list[str] = []
    if job.cwd is not None:
        if job.in_place:
            how = "in place"
        elif job.manifest_id:
            where = f"work/{job.subdir}" if job.subdir else "work/"
            how = f"snapshot {job.manifest_id[:SHORT_ID]}, runs in $NVQ_JOB_DIR/{where}"
        else:
            how = "no snapshot"
        out.append(f"  directory   {job.cwd} ({how})")
    if job.setup:
        out.append(f"  setup       {job.setup}")
    if job.env_captured is not None:
        out.append(f"  environment {len(job.env_captured)} variables from the submitting shell"
                   + (f", {len(job.env)} from --env" if job.env else ""))
        shown = masked({**job.env_captured, **job.env})
        out.extend(f"    {name}={value}" for name, value in sorted(shown.items()))
    elif job.env:
        out.append("  environment (from --env)")
        out.extend(f"    {name}={value}" for name, value in sorted(masked(job.env).items()))
    for item in job.env_dropped:
        out.append(f"  not carried to {job.node}: {item}")
    return out
