"""`nvq job why` as text: the job's reason, then one block per node with every
constraint that fails there (or that it could start there now)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control import SubmitPreview, WhyReport
    from nvq.domain.start_estimate import StartEstimate
    from nvq.domain.waiting import NodeFit


def why_text(report: WhyReport) -> str:
    head = f"job {report.id} is {report.state}"
    if report.reason is None:
        return head + ": it is not waiting"
    if report.reason_detail is None:  # a running job placed on a busy card says so
        return f"{head}: {report.reason}"
    start = getattr(report, "start_estimate", None)
    return "\n".join([f"{head}: {report.reason}: {report.reason_detail}",
                      *([start_line(start)] if start is not None else []), *_nodes(report.nodes)])


def start_line(start: StartEstimate, now: float | None = None) -> str:
    """`estimated start 14:20 (in 9m32s), when job 12's timeout ends at 14:20`, or why
    it cannot be known."""
    if start.at is None:
        return f"estimated start: {start.rests_on}"
    import time

    from nvq.values import format_duration

    now = time.time() if now is None else now
    if start.at <= now:
        return f"estimated start now: {start.rests_on}"
    return (f"estimated start {start_clock(start.at, now)} (in {format_duration(start.at - now)}), "
            f"{start.rests_on}")


def start_clock(at: float, now: float) -> str:
    """The start as a column shows it: the local time, with the day when not today."""
    import time

    fmt = "%H:%M" if time.localtime(at)[:3] == time.localtime(now)[:3] else "%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(at))


def preview_text(doc: SubmitPreview) -> str:
    """`job submit --dry-run`: where it would start, or why it would wait."""
    what = f"{doc.count} jobs" if doc.count > 1 else "the job"
    head = f"dry run, nothing stored: {what}"
    if doc.unreported:
        head += f" (not checked against {', '.join(doc.unreported)}: not reported yet)"
    vram = [f"  {doc.vram_note}"] if getattr(doc, "vram_note", None) else []
    if doc.would_start:
        cards = f", GPUs {','.join(map(str, doc.gpus))}" if doc.gpus else " (no GPU)"
        return "\n".join([f"{head} would start now on {doc.node}{cards}", *vram])
    return "\n".join(
        [f"{head} would wait: {doc.reason}: {doc.reason_detail}", *vram, *_nodes(doc.nodes)]
    )


def _nodes(nodes: list[NodeFit]) -> list[str]:
    out = [] if nodes else ["  (no nodes)"]
    width = max((len(n.node) for n in nodes), default=0)
    for fit in nodes:
        if fit.fits:
            out.append(f"  {fit.node:<{width}}  could start here now")
            continue
        failing = [c for c in fit.checks if not c.ok]
        first, *rest = failing
        out.append(f"  {fit.node:<{width}}  {first.constraint}: {first.detail}")
        out.extend(f"  {'':<{width}}  {c.constraint}: {c.detail}" for c in rest)
    return out
