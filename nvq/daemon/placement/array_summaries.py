"""`queue status` at scale: an array is one line, not one row per member. The live
members are counted from memory's job list; the finished ones through the store's
array index, so a 100,000-member array costs one grouped count."""

from __future__ import annotations

from collections.abc import Iterable

from nvq import control as c
from nvq.model import JobRecord, JobState
from nvq.store import Store


async def summarise_arrays(
    store: Store, live: Iterable[JobRecord]
) -> tuple[list[JobRecord], list[c.ArraySummary]]:
    """`live` split into the jobs outside any array, and one summary per array with a
    live member (its members' count in every state, in JobState order)."""
    singles: list[JobRecord] = []
    names: dict[int, str] = {}
    for job in live:
        if job.array_id is None:
            singles.append(job)
        elif job.array_id not in names:
            names[job.array_id] = job.spec.name.rsplit("[", 1)[0]
    counts = await store.array_counts(sorted(names))
    summaries = [
        c.ArraySummary(
            id=array_id,
            name=names[array_id],
            counts={s.value: counts[array_id].get(s.value, 0) for s in JobState},
        )
        for array_id in sorted(names)
    ]
    return singles, summaries
