"""A pending job whose prerequisite's final artifact sync still runs is not placed:
it would start without that job's last artifacts at $NVQ_INPUTS."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nvq.daemon.machines.reassign import Reassigner
from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState


def job(id: int, state: JobState, **kw: Any) -> JobRecord:
    return record_of(Job(id=id, name="j", state=state, command="true", user="u", submitter="u",
               created_at=0.0, **kw))


def test_a_step_waits_for_its_prerequisites_final_sync() -> None:
    jobs = {
        1: job(1, JobState.COMPLETED),
        2: job(2, JobState.PENDING, after=[1]),
        3: job(3, JobState.PENDING, after_any=[1]),
        4: job(4, JobState.PENDING, after=[9]),
        5: job(5, JobState.RUNNING, after=[1]),
    }
    syncs = SimpleNamespace(syncing=set())
    machines = Reassigner(SimpleNamespace(jobs=jobs, reaps={}), syncs)  # type: ignore[arg-type]
    assert machines.unplaceable() == set()
    machines.syncs.syncing.add(1)
    assert machines.unplaceable() == {1, 2, 3}
    machines.syncs.syncing.discard(1)
    assert machines.unplaceable() == set()
