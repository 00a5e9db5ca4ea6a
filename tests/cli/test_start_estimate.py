"""When a waiting job will start, through the real CLI: `job why` (text and --json)
and `job ls` give the estimate and what it rests on — a running job's --timeout, its
progress line, the typical run of a job ahead — or say that it cannot be known."""

from __future__ import annotations

import time
from pathlib import Path

from nvq.domain.start_estimate import clock
from tests.cluster import Nvq

WHOLE_NODE = ("--gpus", "2", "--vram", "20GiB")


def waiting_for_cards(nvq: Nvq, *args: str) -> int:
    job: int = nvq.submit("--vram", "20GiB", *args, "--", "true")["id"]
    nvq.wait_for(job, lambda j: j["reason"] == "Resources")
    return job


def test_a_job_behind_a_timeout_starts_when_that_timeout_ends(nvq: Nvq) -> None:
    blocker = nvq.submit(*WHOLE_NODE, "--timeout", "10m", "--", "sleep 900")["id"]
    started = nvq.wait_for(blocker, lambda j: j["started_at"] is not None)["started_at"]
    job = waiting_for_cards(nvq)

    start = nvq.json("job", "why", str(job))["start_estimate"]
    assert abs(start["at"] - (started + 600)) <= 60, (start, started)
    assert start["rests_on"] == f"when job {blocker}'s timeout ends at {clock(start['at'], time.time())}"
    why = nvq.ok("job", "why", str(job)).out.splitlines()
    assert why[1].startswith("estimated start ") and why[1].endswith(start["rests_on"]), why

    page = nvq.json("job", "ls")
    (row,) = [r for r in page["jobs"] if r["id"] == job]
    assert row["start_estimate"] == start
    assert "start_estimate" not in next(r for r in page["jobs"] if r["id"] == blocker)
    table = nvq.ok("job", "ls").out.splitlines()
    assert table[0].split()[7:9] == ["REASON", "START"]
    assert next(line for line in table if line.startswith(str(job))).split()[8].startswith("~")

    nvq.ok("job", "cancel", str(blocker))
    code, _ = nvq.wait(job)
    assert code == 0


def test_the_estimate_meets_the_real_start(nvq: Nvq) -> None:
    # A short timeout that really ends: the waiting job starts when it does.
    blocker = nvq.submit(*WHOLE_NODE, "--timeout", "20s", "--", "sleep 900")["id"]
    nvq.wait_for(blocker, lambda j: j["state"] == "running")
    job = waiting_for_cards(nvq)
    start = nvq.json("job", "why", str(job))["start_estimate"]
    assert f"job {blocker}'s timeout" in start["rests_on"]
    _, (ran,) = nvq.wait(job, timeout=120)
    assert nvq.show(blocker)["state"] == "timeout"
    assert abs(ran["started_at"] - start["at"]) < 60, (ran["started_at"], start)


def test_progress_tells_when_a_running_job_ends(nvq: Nvq, tmp_path: Path) -> None:
    go = tmp_path / "go"
    # 1% done after its first 2 s of work: about 200 s in all
    script = (f'sleep 2; echo "epoch 1/100" > "$NVQ_STATUS_FILE"; '
              f'while [ ! -e {go} ]; do sleep 0.05; done')
    blocker = nvq.submit(*WHOLE_NODE, "--timeout", "10h", "--", script)["id"]
    nvq.wait_for(blocker, lambda j: j["progress"] == "epoch 1/100")
    job = waiting_for_cards(nvq)
    start = nvq.json("job", "why", str(job))["start_estimate"]
    assert start["rests_on"].startswith(f"when job {blocker} finishes at its pace ('epoch 1/100' after ")
    started = nvq.show(blocker)["started_at"]
    # far sooner than its 10 h timeout
    assert started + 200 <= start["at"] < started + 3600, (started, start)
    go.touch()
    nvq.wait(job)


def test_a_job_ahead_runs_for_its_commands_typical_run(nvq: Nvq) -> None:
    ahead_cmd = "sleep 1; echo ahead"
    code, _ = nvq.wait(nvq.submit("--", ahead_cmd)["id"])
    assert code == 0
    blocker = nvq.submit(*WHOLE_NODE, "--timeout", "10m", "--", "sleep 900")["id"]
    started = nvq.wait_for(blocker, lambda j: j["started_at"] is not None)["started_at"]
    ahead = nvq.submit("--vram", "20GiB", "--gpus", "2", "--priority", "5", "--", ahead_cmd)["id"]
    nvq.wait_for(ahead, lambda j: j["reason"] == "Resources")
    job = waiting_for_cards(nvq)
    start = nvq.json("job", "why", str(job))["start_estimate"]
    assert start["rests_on"].startswith(
        f"when job {ahead} (ahead of it) ends after its command's typical "), start
    assert start["rests_on"].endswith(f"(1 run) at {clock(start['at'], time.time())}")
    assert started + 600 < start["at"] < started + 600 + 60, (started, start)
    nvq.ok("job", "cancel", "--mine")


def test_no_estimate_without_an_end_or_for_a_job_that_waits_on_no_card(nvq: Nvq) -> None:
    blocker = nvq.submit(*WHOLE_NODE, "--", "sleep 900")["id"]
    nvq.wait_for(blocker, lambda j: j["state"] == "running")
    job = waiting_for_cards(nvq)
    start = nvq.json("job", "why", str(job))["start_estimate"]
    assert start == {
        "at": None,
        "rests_on": f"it cannot be known: running job {blocker} has no time limit, progress "
        "or finished runs of their command to tell when they end",
    }
    assert f"estimated start: {start['rests_on']}" in nvq.ok("job", "why", str(job)).out
    # no row has a time: no START column
    assert "START" not in nvq.ok("job", "ls").out.splitlines()[0]

    after = nvq.submit("--after", str(blocker), "--", "true")["id"]
    nvq.wait_for(after, lambda j: j["reason"] == "Dependency")
    assert nvq.json("job", "why", str(after))["start_estimate"] == {
        "at": None, "rests_on": "it cannot be known: it waits on Dependency, not on cards"}
    assert nvq.json("job", "why", str(blocker))["start_estimate"] is None
    nvq.ok("job", "cancel", "--mine")


def test_a_job_held_by_its_begin_starts_no_earlier_than_that(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--begin", "after 2h", "--", "true")
    nvq.wait_for(job["id"], lambda j: j["reason"] == "BeginTime")
    start = nvq.json("job", "why", str(job["id"]))["start_estimate"]
    assert start == {"at": job["begin_at"], "rests_on": "at its --begin time, if cards are free then"}
    (row,) = nvq.json("job", "ls")["jobs"]
    assert row["start_estimate"] == start
    line = nvq.ok("job", "why", str(job["id"])).out.splitlines()[1]
    assert line.startswith("estimated start ") and line.endswith(start["rests_on"]), line


def test_an_array_member_runs_for_its_arrays_typical_run(nvq: Nvq, tmp_path: Path) -> None:
    # Each member's command differs ({} is its index): only the array's own completed
    # members say how long the next one runs.
    go = tmp_path / "go"
    work = (f'if [ {{}} -lt 2 ]; then sleep 1; else while [ ! -e {go} ]; do sleep 0.05; done; fi')
    sweep = nvq.submit(*WHOLE_NODE, "--timeout", "10m", "--array", "0-4", "--", work)
    first = sweep["id"] if "id" in sweep else sweep["jobs"][0]
    holder = nvq.wait_for(first + 2, lambda j: j["started_at"] is not None)
    assert [nvq.show(first + i)["state"] for i in (0, 1)] == ["completed", "completed"]
    nvq.wait_for(first + 4, lambda j: j["reason"] == "Resources")
    start = nvq.json("job", "why", str(first + 4))["start_estimate"]
    assert start["rests_on"].startswith(
        f"when job {first + 3} (ahead of it) ends after its command's typical "), start
    assert "(median of 2 runs)" in start["rests_on"], start
    # (member 2's own end is its array's typical run too, or its timeout once that passed)
    assert holder["started_at"] < start["at"] < holder["started_at"] + 660, (holder, start)
    nvq.ok("job", "cancel", "--mine")
