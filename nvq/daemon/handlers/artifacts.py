"""`nvq job artifacts ID`: a job's stored artifacts ($NVQ_ARTIFACTS as of its last sync)."""

from __future__ import annotations

import msgspec

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import private


@handles(c.JobArtifacts, may=private("read the artifacts of"))
async def job_artifacts(ctx: Context, req: c.JobArtifacts, user: str) -> c.Artifacts:
    await ctx.state.get_job(req.id)  # no such job: one line, exit 1
    return msgspec.convert(ctx.artifacts.listing(req.id), c.Artifacts)
