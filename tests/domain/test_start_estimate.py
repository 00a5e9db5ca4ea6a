"""Estimated starts: a waiting job's start from the running jobs' ends (time limit,
progress, typical run) and the jobs ahead of it, played forward with `place`; and
what each estimate rests on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob
from nvq.domain.start_estimate import (
    MAX_QUEUE,
    MAX_STEPS,
    Holder,
    Queued,
    RunFacts,
    clock,
    estimate_starts,
    progress_fraction,
    queued_run,
    run_end,
    typical_run,
)
from tests.property_budget import examples

GiB = 1024
NOW = 1_000_000.0


def node(name: str = "n0", used: list[int] | None = None, total: int = 24 * GiB,
         foreign: int = 0) -> NodeSlot:
    used = [20 * GiB] if used is None else used
    gpus = [GpuSlot(i, total, foreign, mb, queue_jobs=1 if mb else 0) for i, mb in enumerate(used)]
    return NodeSlot(name, True, gpus, 0, sum(1 for mb in used if mb))


def holder(id: int, ends: float | None, cards: dict[int, int] | None = None,
           on: str = "n0") -> Holder:
    return Holder(job_id=id, node=on, cards={0: 20 * GiB} if cards is None else cards,
                  ends_at=ends, ends_because=f"job {id} ends")


def waiting(id: int, vram: int = 20 * GiB, runs: float | None = None, gpus: int = 1,
            priority: int = 0) -> Queued:
    job = PendingJob(id, priority, float(id), gpus, vram)
    return Queued(job=job, runs_for=runs, runs_because=f"{runs}s")


def estimate(slots: list[NodeSlot], holders: list[Holder], queue: list[Queued],
             **kw: object) -> dict[int, tuple[float | None, str]]:
    found = estimate_starts(slots, holders, queue, now=NOW, headroom_mb=512, max_cpu_jobs=4,
                            **kw)  # type: ignore[arg-type]
    return {i: (e.at, e.rests_on) for i, e in found.items()}


# ---------------------------------------------------------------- progress lines


def test_progress_lines_read_as_fractions() -> None:
    assert progress_fraction("epoch 3/10") == 0.3
    assert progress_fraction("step 1200 / 4800 loss 0.3") == 0.25
    assert progress_fraction("45%") == 0.45
    assert progress_fraction("done 12.5 % of shards") == 0.125
    # the last number that reads as a fraction counts
    assert progress_fraction("epoch 1/2, batch 30/40") == 0.75


def test_lines_without_a_fraction_say_nothing() -> None:
    for line in (None, "", "warming up", "loss 0.31", "0/10", "12/0", "150%", "11/10"):
        assert progress_fraction(line) is None, line


def test_typical_run_is_the_median() -> None:
    assert typical_run([]) is None
    assert typical_run([60.0]) == 60.0
    assert typical_run([60.0, 600.0, 90.0]) == 90.0
    assert typical_run([60.0, 100.0]) == 80.0


# ---------------------------------------------------------------- one running job's end


def test_a_timeout_ends_the_job_at_start_plus_the_limit() -> None:
    at, why = run_end(RunFacts(job_id=12, started_at=NOW - 60, timeout=600.0), NOW)
    assert at == NOW + 540
    assert why == f"job 12's timeout ends at {clock(NOW + 540, NOW)}"


def test_the_shorter_of_timeout_and_max_runtime_binds() -> None:
    at, why = run_end(RunFacts(job_id=3, started_at=NOW, timeout=900.0, max_runtime=300.0), NOW)
    assert at == NOW + 300 and "--max-runtime" in why


def test_progress_says_it_ends_sooner_than_its_timeout() -> None:
    # 25% after 100 s: about 400 s in all
    run = RunFacts(job_id=7, started_at=NOW - 100, timeout=3600.0, progress="25%",
                   progress_at=NOW)
    at, why = run_end(run, NOW)
    assert at == NOW + 300
    assert why.startswith("job 7 finishes at its pace ('25%' after 1m40s)")


def test_progress_is_read_when_it_was_written_not_now() -> None:
    run = RunFacts(job_id=7, started_at=NOW - 100, progress="1/2", progress_at=NOW - 50)
    assert run_end(run, NOW)[0] == NOW  # 50 s for half: 100 s in all


def test_a_time_limit_caps_what_progress_predicts() -> None:
    run = RunFacts(job_id=7, started_at=NOW - 100, timeout=200.0, progress="10%",
                   progress_at=NOW)
    at, why = run_end(run, NOW)
    assert at == NOW + 100 and "timeout" in why


def test_the_typical_run_of_its_command_tells_when_no_progress_does() -> None:
    run = RunFacts(job_id=4, started_at=NOW - 60, typical=600.0, typical_of=5)
    at, why = run_end(run, NOW)
    assert at == NOW + 540
    assert why == f"job 4 ends after its command's typical 10m00s (median of 5 runs) about {clock(at, NOW)}"


def test_a_prediction_already_past_is_dropped() -> None:
    late = RunFacts(job_id=4, started_at=NOW - 900, typical=600.0, typical_of=2)
    assert run_end(late, NOW) == (None, "")
    timed = RunFacts(job_id=4, started_at=NOW - 900, typical=600.0, typical_of=2, timeout=1200.0)
    assert run_end(timed, NOW)[0] == NOW + 300


def test_nothing_tells_when_an_untimed_job_ends() -> None:
    assert run_end(RunFacts(job_id=1, started_at=NOW, progress="warming up",
                            progress_at=NOW), NOW) == (None, "")


def test_a_waiting_job_runs_for_its_typical_run_within_its_limit() -> None:
    assert queued_run(600.0, 120.0, 3) == (120.0, "its command's typical 2m00s (median of 3 runs)")
    assert queued_run(60.0, 120.0, 3) == (60.0, "its time limit 1m00s")
    assert queued_run(None, None, 0) == (None, "")


# ---------------------------------------------------------------- playing the queue


def test_a_job_behind_a_timed_job_starts_when_its_timeout_ends() -> None:
    found = estimate([node()], [holder(12, NOW + 600)], [waiting(13)])
    assert found == {13: (NOW + 600, "when job 12 ends")}


def test_a_job_that_fits_now_starts_now() -> None:
    found = estimate([node(used=[0])], [], [waiting(13)])
    assert found[13] == (NOW, "it fits: the next placement pass starts it")


def test_the_card_that_frees_first_decides() -> None:
    slots = [node(used=[20 * GiB, 20 * GiB])]
    holders = [holder(1, NOW + 900, {0: 20 * GiB}), holder(2, NOW + 300, {1: 20 * GiB})]
    assert estimate(slots, holders, [waiting(9)]) == {9: (NOW + 300, "when job 2 ends")}


def test_two_cards_wait_for_the_later_of_two_ends() -> None:
    slots = [node(used=[20 * GiB, 20 * GiB])]
    holders = [holder(1, NOW + 900, {0: 20 * GiB}), holder(2, NOW + 300, {1: 20 * GiB})]
    assert estimate(slots, holders, [waiting(9, gpus=2)]) == {9: (NOW + 900, "when job 1 ends")}


def test_jobs_ahead_take_the_cards_first() -> None:
    # job 10 (ahead: higher priority) takes the card when job 1 ends, for 300 s
    queue = [waiting(11), waiting(10, runs=300.0, priority=5)]
    found = estimate([node()], [holder(1, NOW + 600)], queue)
    assert found[10] == (NOW + 600, "when job 1 ends")
    at, why = found[11]
    assert at == NOW + 900
    assert why == f"when job 10 (ahead of it) ends after 300.0s at {clock(NOW + 900, NOW)}"


def test_a_job_ahead_with_no_known_run_leaves_it_unknown() -> None:
    queue = [waiting(10, runs=None), waiting(11)]
    found = estimate([node()], [holder(1, NOW + 600)], queue)
    assert found[10][0] == NOW + 600
    assert found[11][0] is None and "job 10 " in found[11][1]


def test_a_smaller_job_behind_may_start_first_as_the_pass_would() -> None:
    # 4 GiB free on the card now: the small job behind fits at once, the big one waits.
    slots = [node(used=[20 * GiB - 4 * GiB])]
    queue = [waiting(10, vram=20 * GiB), waiting(11, vram=2 * GiB)]
    found = estimate(slots, [holder(1, NOW + 60, {0: 16 * GiB})], queue)
    assert found[11][0] == NOW
    assert found[10][0] is None or found[10][0] >= NOW + 60


def test_untimed_holders_are_named() -> None:
    found = estimate([node()], [holder(3, None)], [waiting(13)])
    assert found == {13: (None, "it cannot be known: running job 3 has no time limit, "
                                "progress or finished runs of their command to tell when they end")}


def test_foreign_memory_that_never_leaves_keeps_it_unknown() -> None:
    slots = [node(used=[0], foreign=20 * GiB)]
    found = estimate(slots, [], [waiting(13)])
    assert found[13][0] is None and "cannot be known" in found[13][1]


def test_a_job_no_node_could_ever_hold_says_so() -> None:
    found = estimate([node()], [holder(1, NOW + 60)], [waiting(13, vram=80 * GiB)])
    assert found[13][0] is None and found[13][1].startswith("no node could ever hold it")


def test_only_the_wanted_jobs_are_answered() -> None:
    queue = [waiting(10, runs=60.0), waiting(11, runs=60.0)]
    found = estimate([node()], [holder(1, NOW + 60)], queue, wanted=[10])
    assert set(found) == {10}


def test_a_job_deeper_than_the_play_goes_is_not_estimated() -> None:
    queue = [waiting(i, runs=1.0) for i in range(1, MAX_QUEUE + 2)]
    last = MAX_QUEUE + 1
    found = estimate([node()], [holder(0, NOW + 1)], queue, wanted=[last])
    assert found[last] == (None, f"more than {MAX_QUEUE} jobs wait ahead of it")


def test_the_play_stops_after_so_many_ends() -> None:
    # Many small jobs share the card: the 20 GiB job fits only once most have ended.
    def crowd(count: int) -> dict[int, tuple[float | None, str]]:
        slots = [node(used=[count * 200])]
        holders = [holder(i, NOW + i, {0: 200}) for i in range(1, count + 1)]
        return estimate(slots, holders, [waiting(999)])

    assert crowd(40)[999][0] == NOW + 23  # 23 ended: 17 × 200 MiB left, 20 GiB free
    assert crowd(MAX_STEPS + 40)[999] == (
        None, f"it cannot be known: more than {MAX_STEPS} jobs end before it could start")


def test_a_cpu_job_waits_for_a_cpu_slot() -> None:
    slot = NodeSlot("n0", True, [], cpu_jobs=1, running_jobs=1)
    found = estimate_starts([slot], [holder(1, NOW + 30, {})],
                            [Queued(job=PendingJob(2, 0, 2.0, 0, 0), runs_for=None)],
                            now=NOW, headroom_mb=512, max_cpu_jobs=1)
    assert found[2].at == NOW + 30


@settings(max_examples=examples(60), deadline=None)
@given(
    ends=st.lists(st.integers(1, 10_000), min_size=1, max_size=6),
    gpus=st.integers(1, 3),
)
def test_never_before_enough_cards_could_be_free(ends: list[int], gpus: int) -> None:
    # One node, each card held by one timed job: N cards free at the N-th earliest end.
    cards = len(ends)
    slots = [node(used=[20 * GiB] * cards)]
    holders = [holder(i, NOW + e, {i: 20 * GiB}) for i, e in enumerate(ends)]
    found = estimate(slots, holders, [waiting(99, gpus=gpus)])
    at, _ = found[99]
    if gpus > cards:
        assert at is None
    else:
        assert at == NOW + sorted(ends)[gpus - 1]


def reference(slots: list[NodeSlot], holders: list[Holder], queue: list[Queued]) -> dict[int, float | None]:
    """The play at its plainest: every step, every node, every waiting job."""
    import heapq

    from nvq.domain import preemption
    from nvq.domain.placement import place
    from nvq.domain.start_estimate import _leaving

    by_name = {s.name: s for s in slots}
    waiting = {q.job.id: q for q in queue}
    holding = {h.job_id: h for h in holders}
    ends = [(h.ends_at, h.job_id) for h in holders if h.ends_at is not None]
    heapq.heapify(ends)
    found: dict[int, float | None] = {}
    t = NOW
    for _ in range(MAX_STEPS + 1):
        result = place(list(by_name.values()), [q.job for q in waiting.values()],
                       headroom_mb=512, max_cpu_jobs=4)
        for never in result.unschedulable:
            waiting.pop(never.job_id, None)
        for p in result.placements:
            q = waiting.pop(p.job_id)
            found[p.job_id] = t
            by_name[p.node] = preemption.deduct(by_name[p.node], p, q.job)
            end = None if q.runs_for is None else t + q.runs_for
            holding[p.job_id] = Holder(job_id=p.job_id, node=p.node, cards={g: q.job.vram_mb for g in p.gpus},
                                       ends_at=end)
            if end is not None:
                heapq.heappush(ends, (end, p.job_id))
        if not waiting or not ends:
            break
        t = ends[0][0]
        while ends and ends[0][0] == t:
            h = holding.pop(heapq.heappop(ends)[1])
            by_name[h.node] = preemption.free(by_name[h.node], [_leaving(h)])
    return found


@settings(max_examples=examples(200), deadline=None)
@given(
    nodes=st.lists(st.lists(st.sampled_from([0, 4, 12, 20]), min_size=1, max_size=3),
                   min_size=1, max_size=3),
    ends=st.lists(st.one_of(st.none(), st.integers(1, 50)), min_size=9, max_size=9),
    asks=st.lists(st.tuples(st.sampled_from([1, 2]), st.sampled_from([2, 8, 16, 20]),
                            st.one_of(st.none(), st.integers(1, 30)), st.integers(0, 2)),
                  max_size=12),
)
def test_the_play_offers_only_what_changed_and_still_agrees_with_the_plain_one(
    nodes: list[list[int]], ends: list[int | None], asks: list[tuple[int, int, int | None, int]],
) -> None:
    slots, holders = [], []
    for n, used in enumerate(nodes):
        slots.append(NodeSlot(f"n{n}", True, [GpuSlot(i, 24 * GiB, 0, mb * GiB, queue_jobs=1 if mb else 0)
                                             for i, mb in enumerate(used)], 0, sum(1 for mb in used if mb)))
        for i, mb in enumerate(used):
            if mb:
                end = ends[(n * 3 + i) % len(ends)]
                holders.append(Holder(job_id=100 + n * 3 + i, node=f"n{n}", cards={i: mb * GiB},
                                      ends_at=None if end is None else NOW + end))
    queue = [Queued(job=PendingJob(k + 1, prio, float(k), gpus, vram * GiB), runs_for=run)
             for k, (gpus, vram, run, prio) in enumerate(asks)]
    queue.sort(key=lambda q: (-q.job.priority, q.job.created_at))
    played = estimate_starts(slots, holders, queue, now=NOW, headroom_mb=512, max_cpu_jobs=4)
    plain = reference(slots, holders, queue)
    assert {i: e.at for i, e in played.items() if e.at is not None} == plain


def test_one_finished_run_is_named_as_one() -> None:
    run = RunFacts(job_id=4, started_at=NOW, typical=60.0, typical_of=1)
    assert run_end(run, NOW)[1].startswith("job 4 ends after its command's typical 1m00s (1 run)")
    assert queued_run(None, 60.0, 1) == (60.0, "its command's typical 1m00s (1 run)")
