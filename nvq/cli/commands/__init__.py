"""Every `nvq` command, one module per verb family. Each module declares its commands
on Typers of its own (`on_job`, `on_queue`, ...); `full_app` is the one place they are
attached to the apps of nvq.cli.app.

A module here and the daemon's handler module for the same requests share a name
(`commands/X.py` ⇄ `nvq/daemon/handlers/X.py`; docs/DESIGN.md, Front ends, lists the
families). Commands served without a request handler (`job shell|exec|forward`, the
sessions; `project test`, run here) have a CLI module only.

Importing this package imports none of them: a CLI call runs one command, and some
modules carry heavy imports (the snapshot machinery, the validator) that other commands
never need. `command_info` finds the one module that declares `nvq GROUP COMMAND` and
imports only that; `app` (help, anything unusual) assembles everything on first use.

A new command of `job`, `queue` or `node`: `@on_GROUP.command("NAME")` in its family's
module and a row in `WHERE`, whose order is the order `--help` lists them in (a test
checks the table against every module here). Other groups: one more `_attach` row in
`full_app`."""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from typer.models import CommandInfo

__all__ = ["app", "command_info", "full_app"]

# GROUP → COMMAND → the module here that declares `nvq GROUP COMMAND` on its
# `on_GROUP`, for the groups a call is narrowed to (nvq.cli.app.GROUPS), in the order
# `nvq GROUP --help` lists them.
WHERE: dict[str, dict[str, str]] = {
    "job": {
        "submit": "submit", "shell": "shell", "clone": "submit",
        "ls": "jobs", "show": "jobs", "why": "why", "logs": "logs", "wait": "jobs",
        "cancel": "policy", "release": "policy", "note": "jobs", "result": "jobs",
        "requeue": "policy", "purge": "jobs", "edit": "edit", "move": "move",
        "priority": "policy", "pause": "policy", "resume": "policy",
        "artifacts": "artifacts", "pull": "world", "exec": "reach", "forward": "reach",
    },
    "queue": {
        **dict.fromkeys(["status", "nodes", "drain", "resume", "ignore", "unignore", "events"],
                        "queue"),
        **dict.fromkeys(["lanes", "lane"], "lanes"),
        **dict.fromkeys(["busy", "forbid-busy-assign", "allow-busy-assign"], "busy"),
        **dict.fromkeys(["alerts", "ack", "backup", "check", "restore"], "ops"),
        **dict.fromkeys(["gc", "receive-blobs"], "world"),
    },
    "node": dict.fromkeys(["bootstrap", "stop", "add", "health", "status", "restart", "start"],
                          "node"),
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
        cluster,
        completion,
        daemon,
        image,
        keeper,
        project,
        queue,
        reserve,
        skill,
    )
    from nvq.cli.commands.mcp import on_mcp
    from nvq.cli.commands.report import on_report
    from nvq.cli.commands.schema import on_schema
    from nvq.cli.commands.web import on_web

    for group, part in (("job", job_app), ("queue", queue_app), ("node", node_app)):
        part.registered_commands += [_declared(group, name) for name in WHERE[group]]
    _attach(daemon_app, daemon.on_daemon)
    daemon_app.registered_callback = daemon.on_daemon.registered_callback
    queue_app.registered_callback = queue.on_queue.registered_callback
    _attach(keeper_app, keeper.on_keeper)
    _attach(project_app, project.on_project)
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


def _declared(group: str, name: str) -> CommandInfo:
    info = command_info(group, name)
    if info is None:
        raise LookupError(f"nvq {group} {name}: not declared where WHERE says")
    return info


def command_info(group: str, name: str) -> CommandInfo | None:
    """`nvq GROUP NAME`'s command, importing only the module that declares it; None
    when the table names none (then the whole app decides what the argv means)."""
    module = WHERE.get(group, {}).get(name)
    if module is None:
        return None
    part = getattr(importlib.import_module(f"{__name__}.{module}"), f"on_{group}", None)
    match = [c for c in getattr(part, "registered_commands", []) if c.name == name]
    return match[0] if len(match) == 1 else None
