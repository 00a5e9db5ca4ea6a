"""How a failed attempt is explained in one line: the exit or signal, and the likeliest
cause the queue can see (its `--memory` limit, an OOM kill, the submitting shell's
interpreter path that did not travel to the node). Pure."""

from __future__ import annotations

from nvq.model import JobRecord
from nvq.values import format_mib
from nvq_runner.protocol import JobExited

_OOM_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
# What decides which interpreter and packages a job runs with: named first when a job
# that failed left them behind.
_INTERPRETER_VARS = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PATH")


def failure_reason(job: JobRecord, ev: JobExited, node: str) -> str:
    """`exited with code 1 (likely cause: not carried to ws5: VIRTUAL_ENV=…)`."""
    reason = f"killed by signal {ev.signal}" if ev.signal else f"exited with code {ev.exit_code}"
    if memory_exceeded(job, ev):
        return reason + f": it exceeded its --memory limit of {format_mib(job.spec.memory_mb)}"
    likely = [d for d in job.env_dropped if _likeliest(d) < len(_INTERPRETER_VARS)]
    if likely:
        # The submitting shell's environment or interpreter path, missing on the
        # node: the likeliest cause of a failure there; `job show` lists the rest.
        first = min(likely, key=_likeliest)
        more = f" and {len(likely) - 1} more" if len(likely) > 1 else ""
        reason += f" (likely cause: not carried to {node}: {first}{more})"
    return reason


def _likeliest(item: str) -> int:
    name = item.split("=", 1)[0]
    return _INTERPRETER_VARS.index(name) if name in _INTERPRETER_VARS else len(_INTERPRETER_VARS)


def oom_reason(job: JobRecord, ev: JobExited) -> str:
    """`killed by the OOM killer (exit 137, host memory limit 8 GiB)`."""
    limit = f", host memory limit {format_mib(job.spec.memory_mb)}" if job.spec.memory_mb else ""
    return f"killed by the OOM killer (exit {ev.exit_code}{limit})"


def memory_exceeded(job: JobRecord, ev: JobExited) -> bool:
    """A job with `--memory` that died of its address-space rlimit: an allocation
    error in its stderr. (The cgroup's OOM kill is `ev.oom_killed`; a SIGKILL alone
    is not taken for one: anything may have sent it.)"""
    if not job.spec.memory_mb or ev.reason != "exit" or ev.exit_code == 0:
        return False
    tail = ev.stderr_tail or ""
    return any(marker in tail for marker in _OOM_MARKERS)
