"""Whether a card can be trusted with work, judged from what NVML (or the fake backend)
says about it, the way the NVIDIA device plugin judges it. Pure: no NVML here.

Each fault is one line of evidence (`xid 79`, `2 volatile double-bit ECC errors`);
a card with any is unhealthy. Runs on the node's Python (3.9+)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Xids the device plugin does not count against the card: the application's own
# faults (13 graphics engine exception, 31 MMU fault, 43 channel stopped, 45 preemptive
# cleanup, 68 video decoder exception) and 109 (context switch timeout). Every other
# Xid (48 DBE, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92, 94, 95, …)
# is critical.
NON_FATAL_XIDS = frozenset({13, 31, 43, 45, 68, 109})


def xid_fatal(xid: int) -> bool:
    return xid not in NON_FATAL_XIDS


@dataclass
class CardEvidence:
    """What was seen of one card since the runner started (Xids are events: kept)."""

    xids: list[int] = field(default_factory=list)
    ecc_dbe: int = 0  # volatile double-bit ECC errors
    retired_pending: bool = False  # retired pages or remapped rows waiting for a reset
    nvml_hang: bool = False  # an NVML call on the card did not return in time
    lost: bool = False  # the card vanished (NVML no longer finds it)


def faults(ev: CardEvidence) -> list[str]:
    """The evidence that makes a card unhealthy, one line each; [] when it is fine."""
    out = [f"xid {x}" for x in dict.fromkeys(ev.xids) if xid_fatal(x)]
    if ev.ecc_dbe:
        out.append(f"{ev.ecc_dbe} volatile double-bit ECC error{'s' if ev.ecc_dbe != 1 else ''}")
    if ev.retired_pending:
        out.append("retired pages or remapped rows pending (the card needs a reset)")
    if ev.nvml_hang:
        out.append("NVML did not answer in time")
    if ev.lost:
        out.append("the card vanished")
    return out
