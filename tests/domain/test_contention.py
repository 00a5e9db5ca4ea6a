"""An attempt's contention record: per sample and card, the memory of processes not of
this job, the card's utilisation while they ran, the other queue jobs there; closed
into an event when the attempt ends."""

from __future__ import annotations

import msgspec

from nvq.domain.attempts import derive
from nvq.domain.contention import (
    EVENT,
    KEEP,
    CardShare,
    Contention,
    Sketch,
    Tally,
    closing,
    observe,
    placed_on,
)
from nvq.model import Event, JobRecord, JobSpec, JobState
from nvq_runner.protocol import GpuProcess, GpuSample


def card(index: int, util: int | None, *procs: GpuProcess) -> GpuSample:
    return GpuSample(index=index, total_mb=24576, used_mb=0, util_percent=util,
                     processes=list(procs))


def job(id: int, state: JobState = JobState.RUNNING, attempt: int = 1,
        gpus: list[int] | None = None) -> JobRecord:
    return JobRecord(id=id, state=state, user="u", created_at=0.0, spec=JobSpec(command="x"),
                     attempt=attempt, node="n0", gpus=[0] if gpus is None else gpus)


def test_its_own_processes_are_not_foreign() -> None:
    gpus = [card(0, 90, GpuProcess(1, "u", 4000, job_id=7))]
    assert observe(7, [0], gpus, {0: [7]}) == [CardShare(0, 0, False, ())]


def test_foreign_memory_and_the_cards_utilisation_while_others_run() -> None:
    gpus = [card(0, 95, GpuProcess(1, "u", 4000, job_id=7), GpuProcess(2, "alice", 1024)),
            card(1, 40, GpuProcess(3, "bob", None))]
    assert observe(7, [0, 1], gpus, {0: [7]}) == [
        CardShare(95, 1024, True, ()),
        CardShare(40, 0, True, ()),  # a blind driver: a process, no memory figure
    ]


def test_other_queue_jobs_count_placed_or_seen() -> None:
    gpus = [card(0, 50, GpuProcess(1, "u", 2000, job_id=8))]
    assert observe(7, [0], gpus, {0: [7, 9]}) == [CardShare(50, 2000, True, (8, 9))]
    assert placed_on([job(7, gpus=[0, 1]), job(9, gpus=[1])]) == {0: [7], 1: [7, 9]}


def test_a_card_not_in_the_sample_is_skipped() -> None:
    assert observe(7, [3], [card(0, 0)], {}) == []


def test_a_tally_summarises_as_quantiles() -> None:
    tally = Tally()
    assert tally.record() is None
    for util in range(1, 101):
        tally.add([CardShare(util, util * 10, True, (12,) if util == 50 else ())])
    assert tally.record() == Contention(samples=100, foreign_util_p50=50, foreign_util_p95=95,
                                        foreign_mem_p50_mb=500, foreign_mem_p95_mb=950,
                                        shared_with=[12], quiet=False)


def test_quiet_only_when_nothing_else_was_ever_there() -> None:
    tally = Tally()
    tally.add([CardShare(0, 0, False, ())] * 3)
    record = tally.record()
    assert record is not None and record.quiet and record.samples == 3
    tally.add([CardShare(0, 0, True, ())])
    record = tally.record()
    assert record is not None and not record.quiet


def test_a_long_attempt_keeps_a_bounded_even_sample() -> None:
    sketch = Sketch()
    for v in range(10 * KEEP):
        sketch.add(v)
    assert len(sketch.values) < KEEP and sketch.seen == 10 * KEEP
    assert abs(sketch.quantile(0.5) - 5 * KEEP) < KEEP // 4


def test_the_commit_that_ends_an_attempt_closes_its_tally() -> None:
    tallies = {(7, 1): Tally(), (8, 1): Tally()}
    tallies[(7, 1)].add([CardShare(95, 1024, True, ())])
    tallies[(8, 1)].add([CardShare(0, 0, False, ())])
    before = {7: job(7), 8: job(8)}
    ended = job(7, JobState.COMPLETED)
    events = closing([ended, job(8)], before, tallies)
    assert [(e.kind, e.job_id, e.data["attempt"]) for e in events] == [(EVENT, 7, 1)]
    assert set(tallies) == {(8, 1)}
    # a requeue to a later attempt ends the earlier one too
    assert closing([job(8, JobState.PENDING, attempt=2)], before, tallies)[0].job_id == 8
    assert tallies == {}


def test_the_attempt_carries_its_record() -> None:
    record = Contention(samples=4, foreign_util_p50=0, foreign_util_p95=0,
                        foreign_mem_p50_mb=0, foreign_mem_p95_mb=0, quiet=True)
    events = [
        Event(id=1, time=1.0, kind="job_dispatched", job_id=7, node="n0",
              data={"attempt": 1, "gpus": [0]}),
        Event(id=2, time=2.0, kind="job_completed", job_id=7, node="n0", data={"attempt": 1}),
        Event(id=3, time=2.0, kind=EVENT, job_id=7, node="n0",
              data={"attempt": 1, "contention": msgspec.to_builtins(record)}),
    ]
    (attempt,) = derive(events)
    assert attempt.outcome == "completed" and attempt.contention == record
