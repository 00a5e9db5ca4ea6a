"""The queue as text: nodes and their GPUs, `queue status`, the event log."""

from __future__ import annotations

import time

from nvq.cli.render.jobs import jobs_table
from nvq.cli.render.ops import status_lead, status_tail
from nvq.cli.render.table import clip, table
from nvq.values import format_duration, format_mib

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control import ArraySummary, QueueStatus
    from nvq.model import Event, GpuView, NodeView


def nodes_table(nodes: list[NodeView], procs: bool = False) -> str:
    rows = []
    proc_rows = []
    for n in nodes:
        state = _pilot_state(n) if isinstance(n.cluster, str) else n.state
        state = unreachable_label(n) or state
        if not n.gpus:
            rows.append([n.name, state, "-", "(no GPUs)", "", "", "", ""])
        for g in n.gpus:
            rows.append(
                [
                    n.name,
                    state,
                    str(g.index),
                    clip(g.name, 22),
                    f"{format_mib(g.mem_used_mb)}/{format_mib(g.mem_total_mb)}",
                    f"{g.util_percent}%" if g.util_percent is not None else "-",
                    format_mib(max(0, g.free_mb)) + _off(n, g),
                    ",".join(map(str, g.jobs)) or "-",
                ]
            )
            for pr in g.processes:
                proc_rows.append(
                    [
                        f"{n.name}:{g.index}",
                        str(pr.pid),
                        pr.user,
                        format_mib(pr.used_mb) if pr.used_mb is not None else "?",
                        f"job {pr.job_id}" if pr.managed else "external",
                    ]
                )
    out = table(["NODE", "STATE", "GPU", "NAME", "MEMORY", "UTIL", "FREE", "JOBS"], rows)
    # Why a node is not up, under the table: the cause and its fix are known at once.
    errors = [f"  {n.name}: {n.error}" for n in nodes if n.error and n.state != "up"]
    errors += [
        f"  {n.name}:{g.index} unhealthy: {'; '.join(g.faults)}"
        for n in nodes
        for g in n.gpus
        if getattr(g, "faults", None)
    ]
    errors += [
        f"  {n.name}:{','.join(str(g.index) for g in outside)} outside its Slurm allocation "
        "(the compute node's other cards are other jobs')"
        for n in nodes
        if (outside := [g for g in n.gpus if _outside_allocation(n, g)])
    ]
    errors += [
        f"  {n.name}:{g.index} reserved for {g.reservation} (nvq reserve ls)"
        for n in nodes
        for g in n.gpus
        if getattr(g, "reservation", None)
    ]
    if errors:
        out += "\n" + "\n".join(errors)
    if procs:
        out += "\n\n" + table(["GPU", "PID", "USER", "MEM", "OWNER"], proc_rows)
    return out


def _outside_allocation(n: NodeView, g: GpuView) -> bool:
    """A pilot's card that NVML shows but Slurm did not grant its allocation (a site
    without ConstrainDevices): never placed on, and not the queue's to explain as off."""
    return (
        isinstance(n.cluster, str)
        and not g.schedulable
        and not getattr(g, "faults", None)
        and not getattr(g, "reservation", None)
    )


def _off(n: NodeView, g: GpuView) -> str:
    if g.schedulable:
        return ""
    return " (not allocated)" if _outside_allocation(n, g) else " (off)"


def unreachable_label(n: NodeView, now: float | None = None) -> str | None:
    """`unreachable 40s (reassign in 80s)` while a node's grace runs, else None."""
    since = getattr(n, "unreachable_since", None)
    ends = getattr(n, "grace_ends_at", None)
    if since is None or ends is None:
        return None
    now = time.time() if now is None else now
    label = f"unreachable {format_duration(max(0.0, now - since))}"
    if n.running_jobs:
        label += f" (reassign in {format_duration(max(0.0, ends - now))})"
    return label


def _pilot_state(n: NodeView) -> str:
    """A Slurm pilot's state with where it runs and the time its allocation has left."""
    if n.state.startswith("requested"):
        return n.state
    extra = [n.host or ""]
    if isinstance(n.time_left, float | int):
        extra.append(f"{format_duration(n.time_left)} left")
    shown = ", ".join(e for e in extra if e)
    return f"{n.state} ({shown})" if shown else n.state


def status_text(doc: QueueStatus) -> str:
    shown = ", ".join(f"{n} {s}" for s, n in doc.counts.items() if n)
    parts = [
        *config_lines(doc),  # first: a config the daemon does not run with
        *status_lead(doc),  # open alerts first: they are what needs a person
        f"nvq daemon pid {doc.daemon.pid} (v{doc.daemon.version}), "
        f"up {format_duration(time.time() - doc.daemon.started_at)}",
        f"jobs: {shown or 'none'}"
        + (f"; {doc.pending_reaps} pending kills" if doc.pending_reaps else ""),
        "",
        nodes_table(doc.nodes),
    ]
    if doc.jobs:
        lost_links = {n.name for n in doc.nodes if unreachable_label(n)}
        parts += ["", jobs_table(doc.jobs, unreachable=lost_links)]
    if doc.arrays:
        parts += ["", *map(array_line, doc.arrays)]
    parts += status_tail(doc)
    return "\n".join(parts)


def config_lines(doc: QueueStatus) -> list[str]:
    """What `queue status` says first when the daemon does not run config.toml as it
    is: a reload to apply, or changes that wait for a restart (until it happens)."""
    waiting = list(getattr(doc, "needs_restart", []) or [])
    lines = [f"config.toml: {line}" for line in waiting]
    if waiting:
        lines.append("  (`nvq daemon stop`, then `nvq daemon start`, applies them)")
    elif getattr(doc, "config_changed", False):
        lines.append("config.toml changed since the daemon read it: "
                     "`nvq daemon reload` applies it")
    return [*lines, ""] if lines else []


def array_line(a: ArraySummary) -> str:
    """`array 12: 99,998 pending, 2 running, 0 failed`: those three always, then any
    other state a member is in."""
    always = ("pending", "running", "failed")
    shown = [*always, *(s for s, n in a.counts.items() if n and s not in always)]
    return f"array {a.id}: " + ", ".join(f"{a.counts.get(s, 0):,} {s}" for s in shown)


def event_line(e: Event) -> str:
    """One event as `queue events --follow` prints it, as it happens: the same columns
    as `queue events` (`nvq.cli.render.events`)."""
    from nvq.cli.render.events import event_row

    return event_row(e)


def events_table(events: list[Event]) -> str:
    from nvq.cli.render.events import HEADER, event_row

    return "\n".join([HEADER, *(event_row(e) for e in events)])
