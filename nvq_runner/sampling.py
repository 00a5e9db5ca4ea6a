"""Which samples are worth sending: pure.

The runner samples every few seconds, but an idle node's figures rarely change, and
every frame costs the daemon an SSH read, a decode and a look at its queue. So a
sample goes out when the cards or the jobs' progress lines changed, when host memory
moved by a whole step, or when the last one sent is a heartbeat old.
"""

from __future__ import annotations

from nvq_runner.protocol import Sample

HEARTBEAT_S = 30.0
MEM_STEP_MB = 256


def worth_sending(
    last_sent: Sample | None,
    sample: Sample,
    *,
    heartbeat_s: float = HEARTBEAT_S,
    mem_step_mb: int = MEM_STEP_MB,
) -> bool:
    if last_sent is None:
        return True
    if sample.time - last_sent.time >= heartbeat_s:
        return True
    if sample.gpus != last_sent.gpus or sample.progress != last_sent.progress:
        return True
    return abs(sample.mem_free_mb - last_sent.mem_free_mb) >= mem_step_mb
