"""`nvq cluster status|scale|drain|retry`: Slurm clusters lent to the queue through
pilot jobs."""

from __future__ import annotations

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.render.clusters import cluster_text
from nvq.cli.render.output import emit
from nvq.client import Client

on_cluster = typer.Typer()  # attached to the `cluster` group in nvq.cli.commands


@on_cluster.command("status")
def cluster_status(
    name: str = typer.Argument(None, help="Cluster name (default: every cluster)."),
    as_json: bool = JsonOpt,
) -> int:
    """Each cluster's login connection, scaling and pilots with Slurm's state."""
    return reads.cluster_status(name, as_json)


@on_cluster.command("scale")
def cluster_scale(
    name: str = typer.Argument(..., help="Cluster name."),
    pilots: str = typer.Argument(..., help="Pilots to keep, or `auto` to scale with demand."),
    as_json: bool = JsonOpt,
) -> int:
    """Keep exactly N pilots (up to max_pilots); idle ones above it are released."""
    count: int | None = None
    if pilots != "auto":
        try:
            count = int(pilots)
        except ValueError:
            raise typer.BadParameter(f"expected a number or `auto`, got {pilots!r}") from None
    view = Client().cluster_scale(name, count)
    emit(view, as_json, cluster_text(view))
    return 0


@on_cluster.command("drain")
def cluster_drain(
    name: str = typer.Argument(..., help="Cluster name."), as_json: bool = JsonOpt
) -> int:
    """Request no more pilots; each one is released once its jobs end."""
    view = Client().cluster_drain(name)
    emit(view, as_json, cluster_text(view))
    return 0


@on_cluster.command("retry")
def cluster_retry(
    name: str = typer.Argument(..., help="Cluster name."), as_json: bool = JsonOpt
) -> int:
    """Request pilots again after a refusal or failed starts (fix the cause first):
    the cluster's table is read again from config.toml."""
    view = Client().cluster_retry(name)
    emit(view, as_json, f"{view.applied}\n{cluster_text(view)}")
    return 0
