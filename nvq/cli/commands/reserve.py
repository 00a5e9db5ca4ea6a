"""`nvq reserve add|ls|rm`: cards set aside for some users over a window of time
(Slurm's reservations). Adding and removing are the queue admins'."""

from __future__ import annotations

import time

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.cli.render.reservations import line
from nvq.client import Client

on_reserve = typer.Typer()  # attached to the `reserve` group in nvq.cli.commands


def _moment(text: str | None, flag: str, now: float) -> float:
    from nvq.values import parse_begin

    if text is None:
        return now
    try:
        return parse_begin(text, now)
    except ValueError as exc:
        raise CliError(str(exc).replace("--begin", flag), 2) from None


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


@on_reserve.command("add")
def reserve_add(
    name: str = typer.Argument(..., help="A name for it (one word)."),
    cards: str = typer.Option(None, "--cards", help="The cards: NODE:INDEX,... (node by prefix)."),
    gpus: int = typer.Option(0, "--gpus", help="Or this many free cards (with --nodes)."),
    nodes: str = typer.Option(None, "--nodes", help="--gpus on these nodes: gpu1,gpu2 (prefixes)."),
    start: str = typer.Option(None, "--start", help="From (default now): 2026-12-03T09:00, or 2h."),
    end: str = typer.Option(..., "--end", help="Until: 2026-12-05T18:00, or 3d from now."),
    users: str = typer.Option(None, "--users", help="Who may run in it: alice,bob (default: anyone)."),
    note: str = typer.Option("", "--note", help="What it is for."),
    as_json: bool = JsonOpt,
) -> int:
    """Set cards aside: during the window they run only `--reservation NAME` jobs of
    its users; before it, only jobs whose --timeout ends before it starts."""
    now = time.time()
    listed = _names(cards)
    if bool(listed) == bool(gpus) or gpus < 0:
        raise CliError("give --cards NODE:INDEX,... or --gpus N (not both)", 2)
    if nodes and not gpus:
        raise CliError("--nodes goes with --gpus", 2)
    res = Client().reserve_add(
        name,
        listed,
        _moment(start, "--start", now),
        _moment(end, "--end", now),
        users=_names(users),
        note=note,
        gpus=gpus,
        nodes=_names(nodes),
    )
    emit(res, as_json, f"reserved {line(res)}")
    return 0


@on_reserve.command("ls")
def reserve_ls(as_json: bool = JsonOpt) -> int:
    """Every reservation not yet removed, by start."""
    return reads.reserve_ls(as_json)


@on_reserve.command("rm")
def reserve_rm(
    name: str = typer.Argument(..., help="The reservation."), as_json: bool = JsonOpt
) -> int:
    """Remove a reservation: its cards are everyone's again, its jobs wait (or `job
    edit --reservation ''` them)."""
    res = Client().reserve_rm(name)
    emit(res, as_json, f"removed reservation {res.name}")
    return 0
