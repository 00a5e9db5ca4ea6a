"""Which endings spend a `--retries` restart (`--retries-on oom,lost`). Pure.

* `lost`: the process vanished with no exit status (the default, as before).
* `oom`: the kernel's OOM killer killed it, known from its memory cgroup's counter
  (the runner's `JobExited.oom_killed`); a plain SIGKILL is never taken for one. Or
  it ran out of GPU memory (nvq.domain.gpu_oom): that retry reserves more `--vram`.

A job that exited, failed or timed out on its own is never retried: running it
again would give the same answer."""

from __future__ import annotations

from nvq.model import JobRecord

CAUSES = ("lost", "oom")
DEFAULT = "lost"


def parse_retries_on(text: str) -> str:
    """`"oom, lost"` → `"lost,oom"` (sorted, no repeats); ValueError naming the
    unknown word otherwise."""
    words = sorted({w.strip() for w in text.split(",") if w.strip()})
    if not words:
        raise ValueError("--retries-on: give one or more of lost, oom")
    unknown = [w for w in words if w not in CAUSES]
    if unknown:
        raise ValueError(f"--retries-on: unknown {', '.join(unknown)} (choose from lost, oom)")
    return ",".join(words)


def retries(job: JobRecord, cause: str) -> bool:
    """True when `job` ended by `cause` may run again: the cause is one it retries
    on and it has restarts left."""
    wanted = {w.strip() for w in (job.spec.retries_on or DEFAULT).split(",")}
    return cause in wanted and job.retried < job.spec.retries
