"""`nvq job why` as text: the job's reason, then one block per node with every
constraint that fails there (or that it could start there now)."""

from __future__ import annotations

from nvq.control import WhyReport


def why_text(report: WhyReport) -> str:
    head = f"job {report.id} is {report.state}"
    if report.reason is None:
        return head + ": it is not waiting"
    out = [f"{head}: {report.reason}: {report.reason_detail}"]
    if not report.nodes:
        out.append("  (no nodes)")
    width = max((len(n.node) for n in report.nodes), default=0)
    for fit in report.nodes:
        if fit.fits:
            out.append(f"  {fit.node:<{width}}  could start here now")
            continue
        failing = [c for c in fit.checks if not c.ok]
        first, *rest = failing
        out.append(f"  {fit.node:<{width}}  {first.constraint}: {first.detail}")
        out.extend(f"  {'':<{width}}  {c.constraint}: {c.detail}" for c in rest)
    return "\n".join(out)
