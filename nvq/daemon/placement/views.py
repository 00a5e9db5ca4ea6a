"""Pure accounting of what is on each card: the figures `queue nodes` shows and the
free memory placement plans against. No I/O: inputs are the runner's latest facts and
the queue's own jobs on the node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from nvq.domain.card_marks import CardMark, unacked
from nvq.model import GpuProcessView, GpuView, JobRecord
from nvq_runner.protocol import GpuInfo, GpuSample, Sample


def gpu_view(
    info: GpuInfo,
    sample: GpuSample | None,
    jobs_on_card: Sequence[JobRecord],
    *,
    headroom_mb: int,
    schedulable: bool,
) -> GpuView:
    total = sample.total_mb if sample else info.total_mb
    used = sample.used_mb if sample else 0
    procs = sample.processes if sample else []
    blind = bool(sample and (sample.blind or any(p.used_mb is None for p in procs)))
    reserved = sum(j.spec.vram_mb for j in jobs_on_card)
    charged = {j.id for j in jobs_on_card}
    per_job_actual: dict[int, int] = {}
    for p in procs:
        if p.job_id in charged and p.used_mb is not None:
            per_job_actual[p.job_id] = per_job_actual.get(p.job_id, 0) + p.used_mb
    if blind:
        # The driver names no memory per process: the queue's share is inferred from
        # its reservations and everything else on the card is taken as foreign.
        queue_mem = min(used, reserved)
        external = max(0, used - reserved)
        charge = reserved
    else:
        queue_mem = sum(per_job_actual.values())
        # A queue process whose job is not charged to this card (the orphan of an
        # attempt that was reassigned while its node was away) holds memory no job
        # reservation covers: it counts as foreign, so the card is never oversubscribed.
        external = sum(p.used_mb or 0 for p in procs if p.job_id not in charged)
        charge = sum(max(j.spec.vram_mb, per_job_actual.get(j.id, 0)) for j in jobs_on_card)
    free = total - external - charge - headroom_mb
    return GpuView(
        index=info.index,
        name=info.name,
        mem_used_mb=used,
        mem_total_mb=total,
        mem_used_percent=round(100.0 * used / total, 1) if total else 0.0,
        util_percent=sample.util_percent if sample else None,
        external_mem_mb=external,
        external_procs=sum(1 for p in procs if p.job_id not in charged),
        queue_mem_mb=queue_mem,
        reserved_mb=reserved,
        free_mb=free,
        attribution="blind" if blind else "measured",
        schedulable=schedulable,
        faults=list(sample.faults) if sample else [],
        health="unhealthy" if sample and sample.faults else "ok",
        mig=info.mig,
        parent=info.parent,
        jobs=[j.id for j in jobs_on_card],
        processes=[
            GpuProcessView(
                pid=p.pid,
                user=p.user,
                used_mb=p.used_mb,
                managed=p.job_id is not None,
                job_id=p.job_id,
            )
            for p in procs
        ],
    )


def gpu_views(
    gpus: Sequence[GpuInfo],
    samples: Sequence[GpuSample] | None,
    jobs_on_node: Sequence[JobRecord],
    *,
    headroom_mb: int,
    allow: Sequence[int] | None,
) -> list[GpuView]:
    by_index = {s.index: s for s in samples or []}
    infos = {g.index: g for g in gpus}
    if samples is not None:
        # The latest sample is the truth about which cards exist (a fake GPU file can
        # change while the runner runs); the Hello only names them.
        infos = {
            s.index: infos.get(s.index)
            or GpuInfo(index=s.index, name="?", uuid="", total_mb=s.total_mb)
            for s in samples
        }
    views = []
    for info in infos.values():
        on_card = [j for j in jobs_on_node if info.index in j.gpus]
        views.append(
            gpu_view(
                info,
                by_index.get(info.index),
                on_card,
                headroom_mb=headroom_mb,
                schedulable=allow is None or info.index in allow,
            )
        )
    return views


def with_health(views: list[GpuView], marks: Mapping[int, CardMark]) -> list[GpuView]:
    """The cards' views with their marks in queue.db (domain/card_marks.py): the
    evidence the runner reports now, less what an admin returned the card despite,
    plus what took the card out."""
    out = []
    for v in views:
        mark = marks.get(v.index)
        if mark is None:
            out.append(v)
            continue
        faults = [*mark.faults, *unacked(mark, v.faults)] if mark.out else unacked(mark, v.faults)
        out.append(msgspec.structs.replace(
            v, faults=list(dict.fromkeys(faults)),
            health=mark.state if mark.out else ("unhealthy" if faults else "ok"),
            health_since=mark.since, health_by=mark.by,
        ))
    return out


def capacity_grew(previous: Sample | None, sample: Sample) -> bool:
    """Could `sample` let a node hold more than `previous` did: a card with more memory
    unused, a card that was not there, more free host memory? A false yes only costs
    one placement pass; a false no would leave a job waiting, so any growth counts."""
    if previous is None:
        return True
    if sample.mem_free_mb > previous.mem_free_mb:
        return True
    before = {g.index: g.total_mb - g.used_mb for g in previous.gpus}
    return any(g.total_mb - g.used_mb > before.get(g.index, -1) for g in sample.gpus)
