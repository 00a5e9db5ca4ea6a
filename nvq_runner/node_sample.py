"""Taking one `Sample` of a node: the GPU backend's figures, each GPU process matched
to the job whose session it runs in, free host memory, and the jobs' progress lines.
Blocking (it reads /proc and the drivers): the runner calls it in a thread."""

from __future__ import annotations

import time

from . import procfs
from .gpu import GpuBackend
from .jobfiles import JobDir
from .protocol import GpuProcess, GpuSample, Sample


def take_sample(
    backend: GpuBackend, sessions: dict[int, int], dirs: dict[int, JobDir]
) -> Sample:
    """The cards with their processes tied to jobs by session (`sessions`: wrapper pid
    → job id), host memory, and each running job's progress line (`dirs`)."""
    gpus = []
    for g in backend.sample():
        procs = []
        for p in g.processes:
            sid = procfs.session_id(p.pid)
            job = sessions.get(sid) if sid is not None else None
            procs.append(GpuProcess(pid=p.pid, user=p.user, used_mb=p.used_mb, job_id=job))
        gpus.append(
            GpuSample(
                index=g.index,
                total_mb=g.total_mb,
                used_mb=g.used_mb,
                util_percent=g.util_percent,
                processes=procs,
                blind=g.blind,
                faults=g.faults,
            )
        )
    progress = {}
    for job, d in dirs.items():
        line = d.progress()
        if line is not None:
            progress[job] = line
    return Sample(
        time=time.time(),
        gpus=gpus,
        mem_free_mb=procfs.meminfo_mb("MemAvailable"),
        progress=progress,
    )
