"""Every CLI request's handler, by request type: one table, looked up by the control
server. A handler locks what it needs, checks, acts (one transition), and returns the
reply's data with the exit code the CLI should end with.

`nvq logs` is not here: it streams (`nvq.daemon.handlers.logs.open_logs`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.handlers import busy, jobs, lanes, nodes, ops, policy, submit, world

# The request parameter is each handler's own request type: Any here, so the table
# can hold them all (the lookup by type guarantees the match).
Handler = Callable[[Context, Any, str], Awaitable[tuple[Any, int]]]

HANDLERS: dict[type[c.Request], Handler] = {
    c.Ping: ops.ping,
    c.Submit: submit.submit,
    c.ListJobs: jobs.list_jobs,
    c.ShowJob: jobs.show,
    c.Cancel: policy.cancel,
    c.Release: policy.release,
    c.Note: jobs.note,
    c.Result: jobs.result,
    c.Wait: jobs.wait,
    c.Status: nodes.status,
    c.Nodes: nodes.nodes,
    c.NodeFlag: nodes.node_flag,
    c.Events: nodes.events,
    c.Bootstrap: nodes.bootstrap,
    c.Alerts: ops.alerts,
    c.Ack: ops.ack,
    c.Backup: ops.backup,
    c.StopDaemon: ops.stop_daemon,
    c.JobArtifacts: busy.job_artifacts,
    c.BusyMode: busy.busy_mode,
    c.BusyAssign: busy.busy_assign,
    c.Requeue: policy.requeue,
    c.Purge: jobs.purge,
    c.Edit: policy.edit,
    c.Priority: policy.priority,
    c.Pause: policy.pause,
    c.Resume: policy.resume,
    c.Lanes: lanes.lanes_request,
    c.Lane: lanes.lane_request,
    c.Gc: world.gc,
    c.Pull: world.pull,
}
