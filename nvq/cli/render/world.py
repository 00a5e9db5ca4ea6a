"""The lines of `job show` about a job's world: where it was submitted from, what it
took with it, its environment (secrets hidden) and what a node left out of it."""

from __future__ import annotations

import time

from nvq.world.secret_names import masked

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.model import Job

SHORT_ID = 12
MAX_WRITTEN = 500  # the runner lists no more (nvq_runner.workfiles.MAX_LISTED)


def world_lines(job: Job, *, env: bool = False) -> list[str]:
    """`env`: list the variables (`job show --env`); otherwise only how many."""
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
    listed = "" if env else f" (`nvq job show {job.id} --env` lists them)"
    if job.env_captured is not None:
        out.append(f"  environment {len(job.env_captured)} variables from the submitting shell"
                   + (f", {len(job.env)} from --env" if job.env else "") + listed)
        if env:
            shown = masked({**job.env_captured, **job.env})
            out.extend(f"    {name}={value}" for name, value in sorted(shown.items()))
    elif job.env:
        out.append(f"  environment {len(job.env)} variables from --env" + listed)
        if env:
            out.extend(f"    {name}={value}" for name, value in sorted(masked(job.env).items()))
    for item in job.env_dropped:
        out.append(f"  not carried to {_last_node(job)}: {item}")
    if job.written:
        from nvq.world.snapshot import format_size  # pathspec: only when needed

        out.append(f"  written     {len(job.written)} file(s) in its working copy"
                   + (" (the first shown)" if len(job.written) >= MAX_WRITTEN else ""))
        width = max(len(f.path) for f in job.written)
        for f in job.written:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(f.mtime))
            out.append(f"    {f.path:<{width}}  {format_size(f.size):>9}  {when}")
    return out


def _last_node(job: Job) -> str:
    """Where the environment met the node: the job's node, or for a job back in line
    (preempted, moved, requeued: it has none) its last attempt's."""
    if job.node:
        return job.node
    ran = [getattr(a, "node", None) for a in getattr(job, "attempts", None) or []]
    return next((n for n in reversed(ran) if n), "its node")
