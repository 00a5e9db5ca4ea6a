"""Every `nvq` command, one module per command group. Each module declares its commands
on Typers of its own (`on_job`, `on_queue`, ...); `full_app` is the one place they are
attached to the apps of nvq.cli.app, in the order `--help` lists them.

Importing this package imports none of them: a CLI call runs one command, and some
modules carry heavy imports (the snapshot machinery, the validator) that other commands
never need. `command_info` finds the one module that declares `nvq GROUP COMMAND` and
imports only that; `app` (help, anything unusual) assembles everything on first use.

A new command: `@on_GROUP.command("NAME")` in a module here, as the others are (the
name given as a literal, so `command_info` finds it; one without still works, through
the whole app). A new module: one more `_attach` row in `full_app`."""

from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from typer.models import CommandInfo

__all__ = ["app", "command_info", "full_app"]

HERE = Path(__file__).resolve().parent
DECLARED = re.compile(r'^@(on_\w+)\.command\(\s*"([^"]+)"', re.MULTILINE)


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


@functools.cache
def _declarations() -> dict[tuple[str, str], list[str]]:
    """(Typer attribute, command name) → the modules whose source declares it, read
    from the text: finding a command must not import the modules it is not in."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(HERE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        for attr, name in DECLARED.findall(path.read_text(encoding="utf-8")):
            found.setdefault((attr, name), []).append(path.stem)
    return found


def command_info(group: str, name: str) -> CommandInfo | None:
    """`nvq GROUP NAME`'s command, importing only the module that declares it; None
    when no single module does (then the whole app decides what the argv means)."""
    modules = _declarations().get((f"on_{group}", name), [])
    if len(modules) != 1:
        return None
    part = getattr(importlib.import_module(f"{__name__}.{modules[0]}"), f"on_{group}", None)
    match = [c for c in getattr(part, "registered_commands", []) if c.name == name]
    return match[0] if len(match) == 1 else None
