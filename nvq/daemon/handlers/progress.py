"""`ProgressLines`: the running jobs' progress lines, from memory (samples keep them
there; they raise no event), for the front ends that show them moving. A line is
what a job wrote of itself: answered only for jobs whose output the asker may read."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.apply import queue_admins
from nvq.daemon.context import Context
from nvq.domain.permissions import may_read_private
from nvq.model import JobState


async def progress_lines(ctx: Context, req: c.ProgressLines, user: str) -> list[c.ProgressLine]:
    state = ctx.state
    admins, read = queue_admins(state), state.config.queue.members_read
    return [
        c.ProgressLine(id=job.id, progress=job.progress)
        for job in sorted(state.jobs.values(), key=lambda j: j.id)
        if job.state is JobState.RUNNING and may_read_private(job.user, user, admins, read)
    ]
