"""Every `nvq` command, one module per command group. Each module declares its commands
on Typers of its own (`on_job`, `on_queue`, ...); `full_app` is the one place they are
attached to the apps of nvq.cli.app, in the order `--help` lists them.

Importing this package imports none of them: a CLI call runs one command, and some
modules carry heavy imports (the snapshot machinery, the validator) that other commands
never need. `command_info` finds the one module that declares `nvq GROUP COMMAND` and
imports only that; `app` (help, anything unusual) assembles everything on first use.

A new command: `@on_GROUP.command("NAME")` in a module here and a row in `WHERE` (a
test checks the table against the whole app; a command missing from it still works,
through the whole app). A new module: one more `_attach` row in `full_app`."""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from typer.models import CommandInfo

__all__ = ["app", "command_info", "full_app"]

# GROUP → COMMAND → the module here that declares `nvq GROUP COMMAND` on its
# `on_GROUP`, for the groups a call is narrowed to (nvq.cli.app.GROUPS).
WHERE: dict[str, dict[str, str]] = {
    "job": {
        **dict.fromkeys(["cancel", "logs", "ls", "note", "release", "result", "show", "wait",
                         "why"], "job"),
        **dict.fromkeys(["edit", "move", "pause", "priority", "purge", "requeue", "resume"],
                        "policy"),
        "artifacts": "busy", "exec": "reach", "forward": "reach", "pull": "world",
        "shell": "shell", "submit": "submit",
    },
    "node": dict.fromkeys(["add", "bootstrap", "health", "restart", "start", "status", "stop"],
                          "node"),
    "queue": {
        **dict.fromkeys(["ack", "alerts", "backup", "check", "restore"], "ops"),
        **dict.fromkeys(["allow-busy-assign", "busy", "forbid-busy-assign"], "busy"),
        **dict.fromkeys(["drain", "events", "ignore", "nodes", "resume", "status", "unignore"],
                        "queue"),
        **dict.fromkeys(["gc", "receive-blobs"], "world"),
        **dict.fromkeys(["lane", "lanes"], "lane"),
    },
}


def _attach(group: typer.Typer, *parts: typer.Typer) -> None:
    for part in parts:
        group.registered_commands += part.registered_commands


@functools.cache
def full_app() -> typer.Typer:
    from nvq.cli.app import (
        app,
        cluster_app,
        daemon_app,
        image_app,
        job_app,
        keeper_app,
        node_app,
        project_app,
        queue_app,
        reserve_app,
        skill_app,
    )
    from nvq.cli.commands import (
        busy,
        cluster,
        completion,
        daemon,
        image,
        job,
        keeper,
        lane,
        node,
        ops,
        policy,
        queue,
        reach,
        reserve,
        shell,  # noqa: F401 - declares `job shell` on submit's Typer
        skill,
        submit,
        world,
    )
    from nvq.cli.commands.mcp import on_mcp
    from nvq.cli.commands.report import on_report
    from nvq.cli.commands.schema import on_schema
    from nvq.cli.commands.web import on_web

    _attach(
        job_app, submit.on_job, job.on_job, policy.on_job, busy.on_job, world.on_job, reach.on_job
    )
    _attach(queue_app, queue.on_queue, lane.on_queue, busy.on_queue, ops.on_queue, world.on_queue)
    _attach(node_app, node.on_node)
    _attach(daemon_app, daemon.on_daemon)
    daemon_app.registered_callback = daemon.on_daemon.registered_callback
    queue_app.registered_callback = queue.on_queue.registered_callback
    _attach(keeper_app, keeper.on_keeper)
    _attach(project_app, ops.on_project)
    _attach(image_app, image.on_image)
    _attach(app, on_web, on_mcp, completion.on_completion)
    _attach(app, on_schema)
    _attach(app, on_report)
    _attach(cluster_app, cluster.on_cluster)
    _attach(reserve_app, reserve.on_reserve)
    _attach(skill_app, skill.on_skill)
    skill_app.registered_callback = skill.on_skill.registered_callback
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def command_info(group: str, name: str) -> CommandInfo | None:
    """`nvq GROUP NAME`'s command, importing only the module that declares it; None
    when the table names none (then the whole app decides what the argv means)."""
    module = WHERE.get(group, {}).get(name)
    if module is None:
        return None
    part = getattr(importlib.import_module(f"{__name__}.{module}"), f"on_{group}", None)
    match = [c for c in getattr(part, "registered_commands", []) if c.name == name]
    return match[0] if len(match) == 1 else None
