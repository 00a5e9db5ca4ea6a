"""The lines of `job show` about a job's chunked artifact syncs: how its attempt got
the previous artifacts, and per sync what crossed against what it describes."""

from __future__ import annotations

from nvq.cli.render.table import ago
from nvq.values import counted

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control.replies import JobDetail

SHOWN = 10  # the newest syncs; --json has them all


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def artifact_lines(doc: JobDetail) -> list[str]:
    if not isinstance(doc.artifact_syncs, list) or not doc.artifact_syncs:
        return []
    out = [f"  {note}" for note in doc.artifact_notes or []] if isinstance(
        doc.artifact_notes, list) else []
    syncs = doc.artifact_syncs
    out.append(f"  artifact syncs ({len(syncs)}):")
    for s in syncs[-SHOWN:]:
        how = {"mounted": "on demand", "restored": "restored in full"}.get(s.mode, "")
        fetched = f", fetched {size(s.fetched)} {how}" if how else ""
        out.append(
            f"    attempt {s.attempt:<3} {s.node:<12} {ago(s.time):>10}  {counted(s.files, 'file')} "
            f"{size(s.bytes)}, {sent_text(s.sent, s.dedup_ratio)}{fetched}"
        )
    return out


def sent_text(sent: int, ratio: float) -> str:
    """`sent 1.2 MiB (12x less than it holds)`; `nothing new sent` when every chunk was
    there already (a ratio over nothing sent is no number a person can use)."""
    if sent <= 0:
        return "nothing new sent"
    shown = f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.1f}".removesuffix(".0")
    return f"sent {size(sent)}" + (f" (dedup {shown}x)" if ratio > 1 else "")
