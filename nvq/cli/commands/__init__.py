"""Every `nvq` command, one module per command group. Each module declares its commands
on Typers of its own (`on_job`, `on_queue`, ...); this is the one place they are
attached to the apps of nvq.cli.app, in the order `--help` lists them."""

from __future__ import annotations

import typer

from nvq.cli.app import (
    app,
    cluster_app,
    daemon_app,
    job_app,
    keeper_app,
    node_app,
    project_app,
    queue_app,
)
from nvq.cli.commands import (
    busy,
    cluster,
    daemon,
    job,
    keeper,
    lane,
    node,
    ops,
    policy,
    queue,
    submit,
    world,
)
from nvq.cli.commands.web import on_web

__all__ = ["app"]


def _attach(group: typer.Typer, *parts: typer.Typer) -> None:
    for part in parts:
        group.registered_commands += part.registered_commands


_attach(job_app, submit.on_job, job.on_job, policy.on_job, busy.on_job, world.on_job)
_attach(queue_app, queue.on_queue, lane.on_queue, busy.on_queue, ops.on_queue, world.on_queue)
_attach(node_app, node.on_node)
_attach(daemon_app, daemon.on_daemon)
daemon_app.registered_callback = daemon.on_daemon.registered_callback
queue_app.registered_callback = queue.on_queue.registered_callback
_attach(keeper_app, keeper.on_keeper)
_attach(project_app, ops.on_project)
_attach(app, on_web)
_attach(cluster_app, cluster.on_cluster)
