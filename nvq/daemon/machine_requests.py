"""CLI requests of issue 5: a job's stored artifacts, a node's busy mode, and an
owner's choice to keep their own jobs off their busy nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nvq import control as c

if TYPE_CHECKING:
    from nvq.daemon.core import Core


async def answer(core: Core, request: c.Request, user: str) -> Any:
    from nvq.daemon.core import RequestError

    match request:
        case c.JobArtifacts(id=job_id):
            await core.get_job(job_id)  # no such job: one line, exit 1
            return core.machines.artifacts.listing(job_id)
        case c.BusyMode(node=name, mode=None):
            return core.machines.busy_view(core.find_node(name))
        case c.BusyMode(node=name, mode=str() as mode):
            return await core.machines.set_busy_mode(name, mode)
        case c.BusyAssign(forbid=forbid):
            return await core.machines.set_forbid(user, forbid)
    raise RequestError(f"unknown request {type(request).__name__}")
