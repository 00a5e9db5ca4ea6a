"""Text for operating the queue: alerts, notification health, the keeper, backups,
lanes and stored artifacts."""

from __future__ import annotations

from nvq.cli.render.table import ago, clip, table
from nvq.values import counted, format_mib

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control import (
        Alert,
        Artifacts,
        LaneDetail,
        LaneStatus,
        QueueStatus,
        RunnerStatus,
        StoreCheck,
    )


def alerts_table(alerts: list[Alert], detail: bool = False) -> str:
    if not detail:
        rows = [
            [
                str(a.id),
                a.severity,
                a.kind,
                str(a.job_id) if a.job_id is not None else "-",
                ago(a.time),
                ("" if a.acked_at is None else "(acked) ") + clip(a.message, 70),
            ]
            for a in alerts
        ]
        return table(["ID", "SEVERITY", "KIND", "JOB", "WHEN", "MESSAGE"], rows)
    blocks = []
    for a in alerts:
        head = f"alert {a.id}  {a.severity}  {a.kind}  {ago(a.time)}"
        if a.acked_at is not None:
            head += f"  (acked by {a.acked_by} {ago(a.acked_at)})"
        lines = [head, f"  {a.message}"]
        if a.detail:
            lines.append("  output tail:")
            lines.extend("    " + ln for ln in a.detail.splitlines())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


STATUS_ALERTS = 3  # the newest open alerts `queue status` shows; `queue alerts` has all


def status_lead(doc: QueueStatus) -> list[str]:
    """What `queue status` shows first: a full disk, the open alerts."""
    full = [doc.disk_full, ""] if doc.disk_full else []
    open_alerts = doc.alerts
    if not open_alerts:
        return full
    n = len(open_alerts)
    lines = [
        *full,
        f"{n} open alert{'s' * (n != 1)} (nvq queue alerts --detail; nvq queue ack ID):",
    ]
    newest = sorted(open_alerts, key=lambda a: a.id, reverse=True)[:STATUS_ALERTS]
    lines += [f"  #{a.id} {a.severity}: {clip(a.message, 90)}" for a in newest]
    if n > STATUS_ALERTS:
        lines.append(f"  … and {n - STATUS_ALERTS} older (nvq queue alerts)")
    return [*lines, ""]


def status_tail(doc: QueueStatus) -> list[str]:
    """Keeper, backups and failing notification channels."""
    lines: list[str] = []
    keeper = doc.keeper
    if keeper is not None:
        lines.append(
            f"keeper {'up' if keeper['up'] else 'DOWN'} ({keeper['kind']}"
            + (f", pid {keeper['pid']}" if keeper.get("pid") else "")
            + ")"
        )
    if doc.last_backup_at:
        lines.append(f"last backup {ago(doc.last_backup_at)}")
    for channel, h in doc.notify.items():
        if h.failing:
            lines.append(
                f"notify {channel} FAILING ({h.waiting} waiting, {h.attempts} attempts): "
                f"{h.last_error}"
            )
    return ["", *lines] if lines else []


def lane_line(doc: LaneStatus) -> str:
    running = f"running {doc.running}" if doc.running is not None else "idle"
    nxt = ",".join(map(str, doc.next[:5])) or "-"
    flags = " paused" if doc.paused else ""
    if doc.blocked:
        flags += f" blocked:{doc.blocked}"
    return f"{doc.lane:<16} {running:<14} next {nxt}{flags}"


def files_table(doc: Artifacts) -> str:
    if not doc.files:
        return f"job {doc.job_id}: no artifacts stored"
    width = max(len(f.path) for f in doc.files)
    lines = [f"{f.path:<{width}}  {f.size:>12} B" for f in doc.files]
    total = format_mib(doc.bytes // (1024 * 1024)) if doc.bytes >= 1024 * 1024 else ""
    lines.append(f"{counted(len(doc.files), 'file')}, {counted(doc.bytes, 'byte')} {total}".rstrip())
    return "\n".join(lines)


def check_text(doc: StoreCheck) -> str:
    """`queue check`: one line for queue.db, one per node."""
    lines = [f"queue.db integrity: {doc.integrity}"]
    for name, n in doc.nodes.items():
        problems = []
        if n.missing:
            shown = ", ".join(str(i) for i in n.missing[:20])
            more = f" and {len(n.missing) - 20} more" if len(n.missing) > 20 else ""
            problems.append(f"knows jobs {shown}{more} that queue.db does not")
        if n.lost_events:
            problems.append(f"{n.lost_events} journal events queue.db never applied")
        if n.recovered:
            shown = ", ".join(str(i) for i in n.recovered[:20])
            more = f" and {len(n.recovered) - 20} more" if len(n.recovered) > 20 else ""
            lines.append(f"node {name}: recovered jobs {shown}{more} from its start records")
        if problems:
            lines.append(f"node {name}: " + "; ".join(problems))
        elif n.journal_head is None:
            lines.append(f"node {name}: not compared ({n.state})")
        else:
            lines.append(f"node {name}: agrees (journal {n.journal_head}, applied {n.applied_seq})")
    return "\n".join(lines)


def lane_detail(doc: LaneDetail) -> str:
    """`queue lane L`: its status line, then its jobs in running order."""
    lines = [lane_line(doc)]
    lines += [f"  {j['position']}. job {j['id']} {j['state']} {j['name']}" for j in doc.jobs]
    return "\n".join(lines)


def runner_text(doc: RunnerStatus) -> str:
    """`node status`: one line saying whether the runner is up, then its details."""
    from nvq.values import format_duration

    if doc.runner_up:
        up = "up" + (f" {format_duration(doc.uptime_s)}" if doc.uptime_s is not None else "")
        head = f"node {doc.node}: runner {up}, pid {doc.pid}, version {doc.version}"
    else:
        head = f"node {doc.node}: runner not reporting ({doc.state})"
        if doc.pid is not None:
            head += f"; last seen pid {doc.pid}, version {doc.version}, {ago(doc.last_seen)}"
    jobs = ", ".join(map(str, doc.jobs)) or "none"
    lines = [head, f"  jobs running: {jobs}"]
    lines.append(f"  journal {doc.journal_id or '-'}: {doc.applied_seq} events applied")
    if doc.last_error:
        lines.append(f"  last error: {doc.last_error}")
    return "\n".join(lines)
