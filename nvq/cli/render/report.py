"""`nvq report`: the usage report as a table, or CSV (one row a key, one column a
figure, outcomes spread into columns)."""

from __future__ import annotations

import csv
import io
import time

from nvq.domain.report import OUTCOMES, ReportRow, UsageReport
from nvq.values import format_duration

_HEAD = ["gpu_hours_reserved", "gpu_hours_used", "attempts", *OUTCOMES]
_TAIL = ["failure_rate", "preemptions", "wait_mean_s", "wait_p90_s"]


def _cells(row: ReportRow) -> list[object]:
    return [
        round(row.gpu_hours_reserved, 4),
        round(row.gpu_hours_used, 4),
        row.attempts,
        *(row.jobs.get(o, 0) for o in OUTCOMES),
        "" if row.failure_rate is None else round(row.failure_rate, 4),
        row.preemptions,
        "" if row.wait_mean_s is None else round(row.wait_mean_s, 3),
        "" if row.wait_p90_s is None else round(row.wait_p90_s, 3),
    ]


def report_csv(doc: UsageReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([doc.by, *_HEAD, *_TAIL])
    for row in [*doc.rows, doc.total]:
        writer.writerow([row.key, *_cells(row)])
    return out.getvalue().rstrip("\n")


def _hours(h: float) -> str:
    if h == 0:
        return "0"
    if h < 0.01:
        return f"{h:.4f}"
    return f"{h:.2f}" if h < 100 else f"{h:,.0f}"


def _wait(s: float | None) -> str:
    return "-" if s is None else format_duration(s)


def report_text(doc: UsageReport) -> str:
    clock = "%Y-%m-%d %H:%M"
    since = time.strftime(clock, time.localtime(doc.since))
    until = time.strftime(clock, time.localtime(doc.until))
    head = [doc.by.upper(), "GPU-H RESERVED", "USED", "JOBS OK/FAIL/OTHER", "FAIL%"]
    head += ["PREEMPT", "WAIT MEAN", "P90"]
    lines: list[list[str]] = [head]
    for row in [*doc.rows, doc.total]:
        failed = sum(row.jobs.get(k, 0) for k in ("failed", "timeout", "lost"))
        other = sum(row.jobs.values()) - failed - row.jobs.get("completed", 0)
        rate = "-" if row.failure_rate is None else f"{100 * row.failure_rate:.0f}%"
        lines.append(
            [
                row.key,
                _hours(row.gpu_hours_reserved),
                _hours(row.gpu_hours_used),
                f"{row.jobs.get('completed', 0)}/{failed}/{other}",
                rate,
                str(row.preemptions),
                _wait(row.wait_mean_s),
                _wait(row.wait_p90_s),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = [f"usage from {since} to {until}, by {doc.by}"]
    for line in lines:
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        text.append("  ".join(cells).rstrip())
    return "\n".join(text)
