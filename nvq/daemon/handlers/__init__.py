"""Every CLI request's handler, by request type: one table, looked up by the control
server, beside who may send it (PERMISSIONS) and the reply it returns (REPLIES, in
nvq.control, where the client reads it too). A handler locks what it needs, checks,
acts (one transition), and returns its reply.

One module per verb family, named as the CLI module that sends its requests
(`handlers/X.py` ⇄ `nvq/cli/commands/X.py`; the families are listed in
docs/DESIGN.md, Front ends). `subscribe` (the event stream) and `history` (card
history) serve the TUI and the web page; `submit_preview` is `submit --dry-run`'s.

`nvq logs` is not here: it streams (`nvq.daemon.handlers.logs.open_logs`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nvq import control as c
from nvq.daemon.handlers import (
    artifacts,
    busy,
    cluster,
    daemon,
    edit,
    image,
    jobs,
    lanes,
    move,
    node,
    ops,
    policy,
    queue,
    report,
    reserve,
    submit,
    submit_from_job,
    why,
    world,
)
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.history import gpu_history
from nvq.domain.permissions import ANYONE, Permission, admin, owner, private

# The request parameter is each handler's own request type, and the reply the one
# nvq.control.REPLIES names for it (a `Coded` reply where the answer sets the exit
# code): Any here, so the table can hold them all. The lookup by type guarantees the
# request's match; tests/daemon/test_reply_types.py holds each annotation to REPLIES.
Handler = Callable[[Context, Any, str], Awaitable[Any]]

HANDLERS: dict[type[c.Request], Handler] = {
    c.Ping: daemon.ping,
    c.Submit: submit.submit,
    c.SubmitDry: submit.submit_dry_run,
    c.SubmitFromJob: submit_from_job.submit_from_job,
    c.ListJobs: jobs.list_jobs,
    c.ShowJob: jobs.show,
    c.Cancel: policy.cancel,
    c.Release: policy.release,
    c.Note: jobs.note,
    c.Result: jobs.result,
    c.Wait: jobs.wait,
    c.Status: queue.status,
    c.Nodes: queue.nodes,
    c.NodeFlag: queue.node_flag,
    c.Events: queue.events,
    c.Bootstrap: node.bootstrap,
    c.Alerts: ops.alerts,
    c.Ack: ops.ack,
    c.Backup: ops.backup,
    c.Check: ops.check,
    c.StopDaemon: daemon.stop_daemon,
    c.Reload: daemon.reload,
    c.JobArtifacts: artifacts.job_artifacts,
    c.BusyMode: busy.busy_mode,
    c.BusyAssign: busy.busy_assign,
    c.Requeue: policy.requeue,
    c.Purge: jobs.purge,
    c.Edit: edit.edit,
    c.Priority: policy.priority,
    c.Pause: policy.pause,
    c.Resume: policy.resume,
    c.Lanes: lanes.lanes_request,
    c.ProgressLines: jobs.progress_lines,
    c.Lane: lanes.lane_request,
    c.GpuHistory: gpu_history,
    c.Why: why.why,
    c.Report: report.usage_report,
    c.ClusterStatus: cluster.cluster_status,
    c.ClusterScale: cluster.cluster_scale,
    c.ClusterDrain: cluster.cluster_drain,
    c.ClusterRetry: cluster.cluster_retry,
    c.EditJob: edit.edit_job,
    c.Gc: world.gc,
    c.SubmitSettings: world.submit_settings,
    c.Pull: world.pull,
    c.JobWindow: jobs.job_window,
    c.Move: move.move,
    c.NodeStop: node.node_stop,
    c.NodeStatus: node.node_status,
    c.NodeRestart: node.node_restart,
    c.ReserveAdd: reserve.reserve_add,
    c.ReserveList: reserve.reserve_list,
    c.ReserveRemove: reserve.reserve_remove,
    c.ImagePush: image.image_push,
    c.ImageList: image.image_list,
}


# Who may send each request (see nvq.domain.permissions), enforced by the control
# server before the handler runs. A request that reads when it names nothing to
# change (a note without text, a lane without an action) is anyone's; then its rule
# is a function of the request.
PermissionRule = Permission | Callable[[Any], Permission]

PERMISSIONS: dict[type[c.Request], PermissionRule] = {
    c.Ping: ANYONE,
    c.Submit: ANYONE,
    c.SubmitDry: ANYONE,
    c.SubmitFromJob: owner("submit from"),  # a job's own `nvq`: its owner's rights
    c.ListJobs: ANYONE,
    # Reading a job: its metadata is anyone's, what it holds (logs, result, files) its
    # owner's (nvq.daemon.handlers.visibility blanks the rest of other users' jobs in replies).
    c.ShowJob: lambda r: (
        owner("reveal the secrets of")
        if r.reveal
        else private("read the logs of")
        if r.logs
        else ANYONE
    ),
    c.Wait: ANYONE,
    c.Logs: private("read the logs of"),
    c.Status: ANYONE,
    c.Nodes: ANYONE,
    c.Events: ANYONE,
    c.Alerts: ANYONE,
    c.Lanes: ANYONE,
    c.ProgressLines: ANYONE,  # only the lines the asker may read are answered
    c.JobArtifacts: private("read the artifacts of"),
    c.Cancel: owner("cancel"),
    c.Release: owner("release"),
    c.Note: lambda r: (
        ANYONE
        if r.text is None and r.append is None and not r.clear
        else owner("change the note of")
    ),
    c.Result: lambda r: (
        private("read the result of") if r.set_json is None else owner("set the result of")
    ),
    c.Requeue: owner("requeue"),
    c.Edit: owner("edit"),
    c.Priority: owner("re-prioritise"),
    c.Pause: owner("pause"),
    c.Resume: owner("resume"),
    c.Lane: lambda r: (
        ANYONE
        if r.action is None
        else admin(f"{r.action} a lane")
        if r.action in ("pause", "resume")
        else owner(f"{r.action} in a lane")
    ),
    c.NodeFlag: admin("drain, resume or ignore a node"),
    c.Bootstrap: admin("bootstrap a node"),
    c.BusyMode: lambda r: ANYONE if r.mode is None else admin("set a node's busy mode"),
    c.BusyAssign: admin("forbid or allow jobs on busy nodes"),
    c.Ack: admin("acknowledge alerts"),
    c.Backup: admin("back up the queue"),
    c.StopDaemon: admin("stop the daemon"),
    c.Reload: admin("reload the config"),
    # anyone's: the handler purges a member's own finished jobs, an admin's everyone's
    c.Purge: ANYONE,
    c.Subscribe: ANYONE,
    c.Why: ANYONE,
    c.Report: ANYONE,
    c.GpuHistory: ANYONE,
    c.ClusterStatus: ANYONE,
    c.ClusterScale: admin("scale a cluster"),
    c.ClusterDrain: admin("drain a cluster"),
    c.ClusterRetry: admin("retry a cluster"),
    c.EditJob: owner("edit"),
    c.Check: admin("check the queue's store"),
    c.Gc: admin("free the blob store"),
    c.SubmitSettings: ANYONE,
    # a session-like exchange (nvq.daemon.artifacts.snapshot_intake): any member may store blobs
    c.ReceiveSnapshot: ANYONE,
    c.Pull: private("pull the files of"),
    c.JobWindow: ANYONE,
    c.Move: owner("move"),
    c.NodeStop: admin("stop a node's runner"),
    c.NodeStatus: ANYONE,
    c.NodeRestart: admin("restart a node's runner"),
    c.ReserveAdd: admin("reserve cards"),
    c.ReserveList: ANYONE,
    c.ReserveRemove: admin("remove a reservation"),
    c.ImagePush: admin("stage an image on nodes"),
    c.ImageList: ANYONE,
    # streams served by nvq.daemon.sessions.sessions (a shell's submit is checked as a submit)
    c.Shell: ANYONE,
    c.Exec: owner("exec into"),
    c.Forward: owner("forward a port to"),
}


def permission(request: c.Request) -> Permission:
    rule = PERMISSIONS[type(request)]
    return rule if isinstance(rule, Permission) else rule(request)
