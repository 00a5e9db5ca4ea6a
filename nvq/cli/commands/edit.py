"""`nvq job edit ID`: what a waiting job waits for, or what a job asks for."""

from __future__ import annotations

from typing import Any

import typer

from nvq.cli import flag_values
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError, duration, env_pairs, ids, size
from nvq.cli.render.output import emit
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("edit")
def job_edit(
    job_id: int = typer.Argument(..., help="A waiting (pending, held or paused) job."),
    drop_after: str = typer.Option(None, "--drop-after", help="Stop waiting for these: 12,13."),
    add_after: str = typer.Option(None, "--add-after", help="Also wait for these to complete."),
    node: str = typer.Option(None, "--node", help="Pin to a node (prefix match)."),
    vram: str = typer.Option(None, "--vram", help="VRAM to reserve on each GPU."),
    gpus: int = typer.Option(None, "--gpus", help="GPUs needed; 0 for a CPU-only job."),
    memory: str = typer.Option(None, "--memory", help="Host RAM it needs (and its limit)."),
    cuda: str = typer.Option(None, "--cuda", help="Minimum driver CUDA version."),
    image: str = typer.Option(None, "--image", help="Run it in this container image."),
    timeout: str = typer.Option(None, "--timeout", help="Kill it after this long."),
    priority: int = typer.Option(None, "--priority", help="Higher runs first."),
    name: str = typer.Option(None, "--name", "-n", help="A short label."),
    note: str = typer.Option(None, "--note", help="What the job is for."),
    tag: list[str] = typer.Option(None, "--tag", help="Its tags (replaces them), repeatable."),
    env: list[str] = typer.Option(
        None, "--env", help="KEY=VALUE (replaces its environment), repeatable."
    ),
    lane: str = typer.Option(None, "--lane", help="Move it to the tail of a lane: NODE:GPU."),
    command: str = typer.Option(None, "--command", help="The command, as one string."),
    signal: str = typer.Option(
        None, "--signal", help="Send SIG this long before --timeout ends it: USR1@5m."
    ),
    preemptible: bool = typer.Option(
        None, "--preemptible/--not-preemptible", help="Whether a more urgent job may stop it."
    ),
    reservation: str = typer.Option(
        None, "--reservation", help="Run in this reservation ('' for none)."
    ),
    notify_on: str = typer.Option(
        None, "--notify-on", help="What its webhooks hear of: start,end,fail,time-limit-80."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Change what a waiting job waits for; it keeps its id, note, place and submitter.

    The options of submit change what it asks for, checked as at submit (an event
    records each value before and after). A running job can change only --priority
    --name --note --tag --notify-on."""
    drop, add = ids(drop_after, "--drop-after"), ids(add_after, "--add-after")
    given: dict[str, Any] = {
        "node": node,
        "vram_mb": None if vram is None else size(vram, "--vram"),
        "gpus": gpus,
        "memory_mb": None if memory is None else size(memory, "--memory"),
        "cuda": cuda,
        "image": image,
        "timeout": duration(timeout, "--timeout"),
        "priority": priority,
        "name": name,
        "note": note,
        "tags": tag or None,
        "env": env_pairs(env) if env else None,
        "lane": lane,
        "command": command,
        "signal": signal,
        "preemptible": preemptible,
        "reservation": reservation,
        "notify_on": flag_values.notify_on(notify_on),
    }
    changes = {k: v for k, v in given.items() if v is not None}
    if not drop and not add and not changes:
        raise CliError("nothing to change: give --drop-after/--add-after or what to change", 2)
    client = Client()
    job = client.edit(job_id, drop_after=drop, add_after=add) if drop or add else None
    if changes:
        job = client.edit_job(job_id, changes)
        from nvq.domain.validate import flag_of  # the validator: only an edit needs it

        flags = ", ".join(flag_of(k) or "--command" for k in changes)
        emit(job, as_json, f"job {job.id} {job.state}, changed {flags}")
        return 0
    assert job is not None
    waits = ",".join(map(str, job.after)) or "nothing"
    emit(job, as_json, f"job {job.id} {job.state}, waiting for {waits}")
    return 0


