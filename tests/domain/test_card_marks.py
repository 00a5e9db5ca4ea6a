"""Cards out of placement (`nvq.domain.card_marks`) and a job failed by its card
(`nvq.domain.card_health.card_failed`): pure, driven through the functions the daemon
calls at commit time."""

from __future__ import annotations

import msgspec

from nvq.domain import card_marks, transitions
from nvq.domain.card_health import unhealthy_events
from nvq.domain.card_marks import CardMark, apply, parse_card
from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState, NewEvent
from nvq_runner.protocol import GpuSample, JobExited, Sample


def _ev(kind: str, card: int, node: str = "n0", **data: object) -> NewEvent:
    return NewEvent(kind, None, node, {"card": card, **data})


def test_a_card_stays_out_until_an_admin_returns_it() -> None:
    marks = apply({}, [_ev("gpu_unhealthy", 1, faults=["xid 79"])], now=10.0)
    assert marks == {"n0:1": CardMark(state="unhealthy", since=10.0, faults=["xid 79"])}
    # the same evidence again changes nothing; more evidence is added
    assert apply(marks, [_ev("gpu_unhealthy", 1, faults=["xid 79"])], now=11.0) is None
    worse = apply(marks, [_ev("gpu_unhealthy", 1, faults=["the card vanished"])], now=12.0)
    assert worse is not None and worse["n0:1"].faults == ["xid 79", "the card vanished"]
    assert worse["n0:1"].since == 10.0
    # returned: its evidence (and what the runner reports now) is acknowledged
    back = apply(worse, [_ev("card_resumed", 1, by="root", faults=["ecc"])], now=13.0)
    assert back is not None
    assert back["n0:1"] == CardMark(state="ok", since=13.0, by="root",
                                    acked=["xid 79", "the card vanished", "ecc"])
    assert card_marks.of_node(back, "n0") == {1: back["n0:1"]} and not back["n0:1"].out
    # NVML keeps reporting an acknowledged Xid: it does not take the card out again
    assert apply(back, [_ev("gpu_unhealthy", 1, faults=["xid 79"])], now=14.0) is None
    again = apply(back, [_ev("gpu_unhealthy", 1, faults=["xid 79", "xid 48"])], now=15.0)
    assert again is not None and again["n0:1"].faults == ["xid 48"] and again["n0:1"].out
    # a card resumed that is not out: nothing
    assert apply(back, [_ev("card_resumed", 1, by="root")], now=16.0) is None


def test_drained_by_hand_and_kept_in_queue_db_form() -> None:
    marks = apply({}, [_ev("card_drained", 0, by="alice")], now=5.0)
    assert marks is not None and marks["n0:0"].state == "drained" and marks["n0:0"].by == "alice"
    assert apply(marks, [_ev("card_drained", 0, by="bob")], now=6.0) is None
    assert card_marks.decode(card_marks.encode(marks)) == marks
    assert card_marks.decode("{not json") == {}
    assert parse_card("gpu1:2") == ("gpu1", 2) and parse_card("gpu1") is None
    assert parse_card("gpu1:x") is None and parse_card(":2") is None


def test_samples_leave_out_evidence_an_admin_acknowledged() -> None:
    def sample(faults: list[str]) -> Sample:
        g = GpuSample(index=0, total_mb=1, used_mb=0, util_percent=None, processes=[],
                      faults=faults)
        return Sample(time=0.0, gpus=[g], mem_free_mb=0, progress={})

    acked = {0: CardMark(state="ok", acked=["xid 79"])}
    assert unhealthy_events("n0", None, sample(["xid 79"]), acked) == []
    (ev,) = unhealthy_events("n0", None, sample(["xid 79", "xid 48"]), acked)
    assert ev.data == {"card": 0, "faults": ["xid 48"]}


def _running() -> JobRecord:
    return record_of(Job(id=7, name="j", state=JobState.RUNNING, command="train", user="me",
               submitter="me", created_at=1.0, node="n0", attempt=1, gpus=[1],
               dispatched_at=1.0, started_at=2.0, retries=1))


def _exit(code: int, faults: dict[int, list[str]], reason: str = "exit") -> JobExited:
    return JobExited(seq=3, job_id=7, attempt=1, exit_code=code, signal=None, ended_at=9.0,
                     reason=reason, card_faults=faults)  # type: ignore[arg-type]


def test_a_job_failed_by_its_card_goes_back_without_spending_a_retry() -> None:
    out = transitions.exited(_running(), _exit(1, {1: ["xid 79"]}), "n0")
    assert out.job is not None and out.job.state is JobState.PENDING
    assert out.job.retried == 0 and out.job.node is None and out.job.gpus == []
    assert out.job.reason == "requeued: card failed (n0:1 xid 79); no retry spent"
    kinds = [(e.kind, e.data.get("card")) for e in out.events]
    assert kinds == [("job_card_failed", None), ("gpu_unhealthy", 1)]
    # the same transaction marks the card: placement cannot choose it again
    marks = apply({}, out.events, now=9.0)
    assert marks is not None and marks["n0:1"].out


def test_only_a_failure_of_its_own_counts_against_the_card() -> None:
    job = _running()
    done = transitions.exited(job, _exit(0, {1: ["xid 79"]}), "n0")  # it finished anyway
    assert done.job is not None and done.job.state is JobState.COMPLETED
    timeout = transitions.exited(job, _exit(143, {1: ["xid 79"]}, "timeout"), "n0")
    assert timeout.job is not None and timeout.job.state is JobState.TIMEOUT
    plain = transitions.exited(job, _exit(1, {}), "n0")
    assert plain.job is not None and plain.job.state is JobState.FAILED
    settled = msgspec.structs.replace(job, state=JobState.CANCELLED)
    late = transitions.exited(settled, _exit(1, {1: ["xid 79"]}), "n0")
    assert late.job is not None and late.job.state is JobState.CANCELLED
