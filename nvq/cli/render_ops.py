"""Human text for alerts, notification health, the keeper and backups."""

from __future__ import annotations

from typing import Any

from nvq.cli.render import _clip, ago, table


def alerts_table(alerts: list[dict[str, Any]], detail: bool = False) -> str:
    if not detail:
        rows = [
            [
                str(a["id"]),
                a["severity"],
                a["kind"],
                str(a["job_id"]) if a["job_id"] is not None else "-",
                ago(a["time"]),
                ("" if a["acked_at"] is None else "(acked) ") + _clip(a["message"], 70),
            ]
            for a in alerts
        ]
        return table(["ID", "SEVERITY", "KIND", "JOB", "WHEN", "MESSAGE"], rows)
    blocks = []
    for a in alerts:
        head = f"alert {a['id']}  {a['severity']}  {a['kind']}  {ago(a['time'])}"
        if a["acked_at"] is not None:
            head += f"  (acked by {a['acked_by']} {ago(a['acked_at'])})"
        lines = [head, f"  {a['message']}"]
        if a.get("detail"):
            lines.append("  output tail:")
            lines.extend("    " + ln for ln in a["detail"].splitlines())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def status_lead(doc: dict[str, Any]) -> list[str]:
    """What `queue status` shows first: the open alerts."""
    open_alerts = doc.get("alerts") or []
    if not open_alerts:
        return []
    n = len(open_alerts)
    lines = [f"{n} open alert{'s' * (n != 1)} (nvq queue alerts --detail; nvq queue ack ID):"]
    lines += [f"  #{a['id']} {a['severity']}: {_clip(a['message'], 90)}" for a in open_alerts[:10]]
    if n > 10:
        lines.append(f"  … and {n - 10} more")
    return [*lines, ""]


def status_tail(doc: dict[str, Any]) -> list[str]:
    """Keeper, backups and failing notification channels."""
    lines: list[str] = []
    keeper = doc.get("keeper")
    if keeper is not None:
        lines.append(
            f"keeper {'up' if keeper['up'] else 'DOWN'} ({keeper['kind']}"
            + (f", pid {keeper['pid']}" if keeper.get("pid") else "")
            + ")"
        )
    if doc.get("last_backup_at"):
        lines.append(f"last backup {ago(doc['last_backup_at'])}")
    for channel, h in (doc.get("notify") or {}).items():
        if h["failing"]:
            lines.append(
                f"notify {channel} FAILING ({h['waiting']} waiting, {h['attempts']} attempts): "
                f"{h['last_error']}"
            )
    return ["", *lines] if lines else []
