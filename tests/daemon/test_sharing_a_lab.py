"""Sharing a lab through the real CLI, with a second OS user: fair share lets another
account's jobs past one account's long sweep."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Nvq
from tests.members import as_user, reachable_nvq, second_user


@pytest.fixture
def member() -> Iterator[tuple[str, str]]:
    with second_user() as made:
        yield made


@pytest.fixture
def shared_nvq() -> Iterator[Nvq]:
    with reachable_nvq() as q:
        yield q


def _release(gate: Path) -> None:
    """Let the sweep member reading `gate` (a FIFO) end: opening it for writing waits
    for the job to be reading it, closing it ends the job's read."""
    fd = os.open(gate, os.O_WRONLY)
    os.close(fd)


def test_another_accounts_jobs_start_within_the_next_two_releases(
    shared_nvq: Nvq, member: tuple[str, str]
) -> None:
    user, group = member
    nvq = shared_nvq
    nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
    gates = nvq.home.parent / "gates"
    gates.mkdir()
    for i in range(1, 21):
        os.mkfifo(gates / f"g{i}")
    # The owner's 20-job sweep, one job a card (2 cards), each until its gate opens.
    sweep = nvq.submit(
        "--array", "1-20", "--vram", "20GiB", "--no-snapshot", "--", "cat", f"{gates}/g{{}}"
    )
    first = sweep["id"] if "id" in sweep else sweep["jobs"][0]
    nvq.wait_for(first, lambda j: j["state"] == "running")
    nvq.wait_for(first + 1, lambda j: j["state"] == "running")
    mark = nvq.events()[-1]["id"]

    theirs = []
    for _ in range(2):
        r = as_user(
            user, nvq, "job", "submit", "--vram", "20GiB", "--no-snapshot", "--json", "--", "true"
        )
        assert r.code == 0, r.err
        theirs.append(r.json()["id"])

    # While both cards are busy, the sweep's next member says why the newcomer goes first.
    why = nvq.json("job", "why", str(first + 2))
    assert why["reason"] == "FairShare", why
    assert why["reason_detail"].startswith("root has used "), why
    assert f"(half-life 1d), {user} 0: {user} goes first" in why["reason_detail"], why

    # One card is released: the other account's two jobs take it, one after the other,
    # before the sweep's next member.
    _release(gates / "g1")
    code, _ = nvq.wait(*theirs)
    assert code == 0
    nvq.wait_for(first + 2, lambda j: j["state"] == "running")
    dispatched = [e["job_id"] for e in nvq.events(mark) if e["kind"] == "job_dispatched"]
    assert dispatched[:3] == [*theirs, first + 2], dispatched


def test_a_limit_holds_a_job_and_a_submit_over_max_queued_jobs_is_refused(nvq: Nvq) -> None:
    # The queue's owner is an admin, and bound like anyone (no exempt_admins).
    nvq.write_config("[limits]\nmax_running_jobs = 1\nmax_queued_jobs = 2\n")
    gate = nvq.home.parent / "gate"
    os.mkfifo(gate)
    first = nvq.submit("--gpus", "0", "--no-snapshot", "--", "cat", str(gate))
    nvq.wait_for(first["id"], lambda j: j["state"] == "running")
    held = nvq.submit("--gpus", "0", "--no-snapshot", "--", "true")
    rows = {j["id"]: j for j in nvq.json("job", "ls", "--active")["jobs"]}
    assert rows[held["id"]]["reason"] == "QuotaJobs", rows
    why = nvq.json("job", "why", str(held["id"]))
    assert why["reason_detail"] == "root runs 1 job, at most 1 (max_running_jobs)", why

    nvq.submit("--gpus", "0", "--no-snapshot", "--", "true")  # two queued: the most
    before = nvq.json("job", "ls", "--all")
    over = nvq.run("job", "submit", "--gpus", "0", "--no-snapshot", "--", "true")
    assert over.code == 1
    assert over.err == (
        "nvq: root has 2 jobs queued, at most 2 (max_queued_jobs): another would be over; "
        "wait for some to start, or cancel some\n"
    )
    assert nvq.json("job", "ls", "--all") == before  # nothing changed

    _release(gate)  # the running job ends: the held one may start
    code, _ = nvq.wait(first["id"], held["id"])
    assert code == 0


def test_a_day_over_max_gpu_hours_holds_the_next_job(nvq: Nvq) -> None:
    # 0.0003 GPU-h is about a second of one card: a job of two seconds goes over it.
    nvq.write_config("[limits]\nmax_gpu_hours = 0.0003\n")
    used = nvq.submit("--gpus", "1", "--no-snapshot", "--", "sleep 2")
    code, (done,) = nvq.wait(used["id"])
    assert code == 0 and done["ended_at"] - done["started_at"] >= 2
    held = nvq.submit("--gpus", "1", "--no-snapshot", "--", "true")
    row = nvq.wait_for(held["id"], lambda j: j.get("reason") == "QuotaHours")
    assert row["state"] == "pending"
    assert row["reason_detail"].startswith(
        "root used 0.0 GPU-h in the last day, at most 0.0003 (max_gpu_hours); "
        "under it again by "
    ), row["reason_detail"]
    nvq.ok("job", "cancel", str(held["id"]))
