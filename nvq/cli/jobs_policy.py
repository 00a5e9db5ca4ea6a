"""CLI commands of the scheduling policy: requeue, purge, edit, priority, pause,
resume (on `nvq job`) and lanes (on `nvq queue`). Registered on the apps of
`nvq.cli.main`, which imports this module."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import typer

from nvq import control as c
from nvq.cli.client import CliError, call
from nvq.cli.main import JsonOpt, _ids, _size, emit, job_app, queue_app


def policy_options(
    *, retries: int, cuda: str | None, memory: str | None, lane: str | None, array: str | None
) -> dict[str, Any]:
    """Submit's policy flags → JobSpec fields, checked here so bad input fails before
    the daemon is asked."""
    from nvq.domain.arrays import parse_array
    from nvq.domain.lanes import LaneError, parse_lane
    from nvq.domain.matching import parse_cuda

    if retries < 0:
        raise CliError("--retries must be 0 or more", 2)
    try:
        if cuda is not None:
            parse_cuda(cuda)
        if array is not None:
            parse_array(array)
        if lane is not None:
            parse_lane(lane)
    except (ValueError, LaneError) as exc:
        flag = "--cuda" if cuda is not None and "CUDA" in str(exc) else ""
        raise CliError(f"{flag + ': ' if flag else ''}{exc}", 2) from None
    return {
        "retries": retries,
        "cuda": cuda,
        "memory_mb": _size(memory, "--memory"),
        "lane": lane,
        "array": array,
    }


def _lines(jobs: list[dict[str, Any]], said: str) -> str:
    return "\n".join(f"job {j['id']} {said}" for j in jobs) or "(no jobs)"


@job_app.command("requeue")
def job_requeue(
    job_ids: list[int] = typer.Argument(..., help="Finished job ids."),
    as_json: bool = JsonOpt,
) -> int:
    """Run finished jobs again (same id and note)."""
    jobs = call(c.Requeue(ids=job_ids)).data
    emit(jobs, as_json, _lines(jobs, "requeued"))
    return 0


def _before(text: str | None) -> float | None:
    """`--before 2025-01-31`, an ISO date-time (local time unless it says), or an age
    like `7d` (ended more than 7 days ago)."""
    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        from nvq.units import parse_duration

        try:
            return time.time() - parse_duration(text)
        except ValueError:
            raise CliError(
                f"--before {text!r}: expected a date (2025-01-31), a date-time or an age (7d)", 2
            ) from None
    return when.timestamp()


@job_app.command("purge")
def job_purge(
    before: str = typer.Option(None, "--before", help="Only jobs that ended before this date."),
    as_json: bool = JsonOpt,
) -> int:
    """Forget finished jobs (yours; an admin's purge forgets everyone's)."""
    doc = call(c.Purge(before=_before(before))).data
    emit(doc, as_json, f"purged {doc['purged']} finished jobs")
    return 0


@job_app.command("edit")
def job_edit(
    job_id: int = typer.Argument(..., help="A waiting (pending, held or paused) job."),
    drop_after: str = typer.Option(None, "--drop-after", help="Stop waiting for these: 12,13."),
    add_after: str = typer.Option(None, "--add-after", help="Also wait for these to complete."),
    as_json: bool = JsonOpt,
) -> int:
    """Change what a waiting job waits for; it keeps its id, note, place and submitter."""
    drop, add = _ids(drop_after, "--drop-after"), _ids(add_after, "--add-after")
    if not drop and not add:
        raise CliError("nothing to change: give --drop-after and/or --add-after", 2)
    job = call(c.Edit(id=job_id, drop_after=drop, add_after=add)).data
    waits = ",".join(map(str, job["after"])) or "nothing"
    emit(job, as_json, f"job {job['id']} {job['state']}, waiting for {waits}")
    return 0


@job_app.command("priority", context_settings={"ignore_unknown_options": True})
def job_priority(
    job_id: int = typer.Argument(..., help="Job id (array id with --array)."),
    value: str = typer.Argument(None, help="5 sets; +1 / -2 adjust."),
    up: int = typer.Option(None, "--up", help="Move a pending job K places earlier."),
    down: int = typer.Option(None, "--down", help="Move a pending job K places later."),
    array: bool = typer.Option(False, "--array", help="Apply to the array's waiting members."),
    as_json: bool = JsonOpt,
) -> int:
    """Change a job's place in the dispatch order."""
    given = [x for x in (value, up, down) if x is not None]
    if len(given) != 1:
        raise CliError("give exactly one of VALUE (5, +1, -2), --up K or --down K", 2)
    if value is not None:
        from nvq.domain.ordering import new_priority

        try:
            new_priority(0, value)
        except ValueError as exc:
            raise CliError(str(exc), 2) from None
    for k, flag in ((up, "--up"), (down, "--down")):
        if k is not None and k < 1:
            raise CliError(f"{flag} must be 1 or more", 2)
    places = up if up is not None else (-down if down is not None else None)
    jobs = call(c.Priority(ids=[job_id], change=value, up=places, array=array)).data
    text = "\n".join(f"job {j['id']} priority {j['priority']}" for j in jobs) or "(no jobs)"
    emit(jobs, as_json, text)
    return 0


@job_app.command("pause")
def job_pause(
    job_ids: list[int] = typer.Argument(..., help="Job ids (array ids with --array)."),
    array: bool = typer.Option(False, "--array", help="Pause the arrays' waiting members."),
    as_json: bool = JsonOpt,
) -> int:
    """Keep jobs queued but unassigned; a running one is stopped and comes back paused."""
    jobs = call(c.Pause(ids=job_ids, array=array)).data
    emit(jobs, as_json, _lines(jobs, "paused"))
    return 0


@job_app.command("resume")
def job_resume(
    job_ids: list[int] = typer.Argument(..., help="Paused job ids (array ids with --array)."),
    array: bool = typer.Option(False, "--array", help="Resume the arrays' paused members."),
    as_json: bool = JsonOpt,
) -> int:
    """Put paused jobs back in line where they were."""
    jobs = call(c.Resume(ids=job_ids, array=array)).data
    emit(jobs, as_json, _lines(jobs, "back in line"))
    return 0


# ---------------------------------------------------------------- lanes


def _lane_line(doc: dict[str, Any]) -> str:
    running = f"running {doc['running']}" if doc["running"] is not None else "idle"
    nxt = ",".join(map(str, doc["next"][:5])) or "-"
    flags = " paused" if doc["paused"] else ""
    if doc["blocked"]:
        flags += f" blocked:{doc['blocked']}"
    return f"{doc['lane']:<16} {running:<14} next {nxt}{flags}"


@queue_app.command("lanes")
def queue_lanes(as_json: bool = JsonOpt) -> int:
    """Every GPU's lane: what it runs now, what is next, paused or blocked."""
    docs = call(c.Lanes()).data
    emit(docs, as_json, "\n".join(_lane_line(d) for d in docs) or "(no GPUs)")
    return 0


@queue_app.command("lane")
def queue_lane(
    lane: str = typer.Argument(..., help="NODE:GPU (node prefix)."),
    action: str = typer.Argument(None, help="move, swap, skip, assign, pause or resume."),
    job_ids: list[int] = typer.Argument(None, help="Job ids the action takes."),
    to: str = typer.Option(None, "--to", help="move: head or a 1-based position."),
    before: int = typer.Option(None, "--before", help="move: before this job."),
    at: str = typer.Option(None, "--at", help="assign: head or a 1-based position."),
    as_json: bool = JsonOpt,
) -> int:
    """One lane's queue in running order, or reorder / pause / resume it."""
    request = c.Lane(lane=lane, action=action, ids=job_ids or [], to=to, before=before, at=at)
    doc = call(request).data
    lines = [_lane_line(doc)]
    lines += [f"  {j['position']}. job {j['id']} {j['state']} {j['name']}" for j in doc["jobs"]]
    emit(doc, as_json, "\n".join(lines))
    return 0
