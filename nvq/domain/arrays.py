"""Job arrays: `--array 0-99[:step][%K]` → one job per index, at most K running. Pure.

Members are ordinary jobs that share `array_id` (the first member's id). Their
command has `{}` replaced by the index, and their environment carries
`NVQ_ARRAY_INDEX` and `NVQ_ARRAY_ID`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from nvq.model import JobRecord, JobState

MAX_MEMBERS = 100_000
_ARRAY_RE = re.compile(r"(\d+)(?:-(\d+))?(?::(\d+))?(?:%(\d+))?")


@dataclass(frozen=True)
class ArraySpec:
    start: int
    stop: int  # inclusive
    step: int = 1
    limit: int | None = None  # at most this many running

    def indices(self) -> range:
        return range(self.start, self.stop + 1, self.step)


def parse_array(text: str) -> ArraySpec:
    match = _ARRAY_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"--array {text!r}: expected START-END[:STEP][%MAX_RUNNING], e.g. 0-99:2%4"
        )
    start, stop, step, limit = match.groups()
    spec = ArraySpec(
        start=int(start),
        stop=int(stop) if stop is not None else int(start),
        step=int(step) if step is not None else 1,
        limit=int(limit) if limit is not None else None,
    )
    if spec.stop < spec.start:
        raise ValueError(f"--array {text!r}: the end is before the start")
    if spec.step < 1:
        raise ValueError(f"--array {text!r}: the step must be at least 1")
    if spec.limit is not None and spec.limit < 1:
        raise ValueError(f"--array {text!r}: %MAX_RUNNING must be at least 1")
    if len(spec.indices()) > MAX_MEMBERS:
        raise ValueError(f"--array {text!r}: more than {MAX_MEMBERS} members")
    return spec


def expand(template: JobRecord, spec: ArraySpec, first_id: int) -> list[JobRecord]:
    """One job per index with ids first_id, first_id+1, …; the array's id is first_id."""
    members: list[JobRecord] = []
    for n, index in enumerate(spec.indices()):
        env = dict(template.spec.env)
        env["NVQ_ARRAY_INDEX"] = str(index)
        env["NVQ_ARRAY_ID"] = str(first_id)
        members.append(
            msgspec.structs.replace(
                template,
                id=first_id + n,
                spec=msgspec.structs.replace(
                    template.spec,
                    name=f"{template.spec.name}[{index}]",
                    command=template.spec.command.replace("{}", str(index)),
                    env=env,
                    tags=list(template.spec.tags),
                    after=list(template.spec.after),
                    after_any=list(template.spec.after_any),
                ),
                array_id=first_id,
                array_index=index,
                array_limit=spec.limit,
            )
        )
    return members


def admit(ordered: Sequence[JobRecord], running: Iterable[JobRecord]) -> list[JobRecord]:
    """The jobs of `ordered` (dispatch order) that an array's `%K` lets start now:
    per array, only the first K − (members running) of its waiting members."""
    left: Counter[int] = Counter()
    for job in running:
        if job.array_id is not None and job.state is JobState.RUNNING:
            left[job.array_id] -= 1
    out: list[JobRecord] = []
    seen: Counter[int] = Counter()
    for job in ordered:
        if job.array_id is None or job.array_limit is None:
            out.append(job)
            continue
        if seen[job.array_id] < job.array_limit + left[job.array_id]:
            out.append(job)
        seen[job.array_id] += 1
    return out
