"""queue.db forgets a job that runs (an older copy restored over it): the daemon does
not kill it as an orphan but makes its record again from the node's start record,
tags it `recovered`, alerts once, and the job ends with its real exit."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from tests.cluster import Nvq


def _copy_db(src: Path, dst: Path) -> None:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


def test_a_running_job_queue_db_forgot_is_recovered_and_ends_as_it_did(
    nvq: Nvq, tmp_path: Path
) -> None:
    first = nvq.submit("--gpus", "0", "--", "true")
    nvq.wait(first["id"])
    nvq.ok("daemon", "stop")
    older = tmp_path / "older.db"
    _copy_db(nvq.home / "queue.db", older)  # before the job below existed

    gate = tmp_path / "gate"
    job = nvq.submit("--gpus", "0", "--name", "train", "--",
                     f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 3")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
    nvq.ok("daemon", "stop")  # the job runs on: runners outlive the daemon
    for suffix in ("", "-wal", "-shm"):
        (nvq.home / f"queue.db{suffix}").unlink(missing_ok=True)
    _copy_db(older, nvq.home / "queue.db")

    # The next command starts a daemon on the older queue.db; the node knows the job.
    deadline = time.monotonic() + 60
    while (shown := nvq.run("job", "show", str(job["id"]), "--json")).code != 0:
        assert time.monotonic() < deadline, f"job {job['id']} never came back: {shown.err}"
        time.sleep(0.2)
    back = shown.json()
    assert (back["state"], back["name"], back["attempt"], back["node"]) == (
        "running", "train", 1, "local")
    assert back["tags"] == ["recovered"]
    check = nvq.run("queue", "check", "--json").json()
    assert check["nodes"]["local"]["recovered"] == [job["id"]]
    assert job["id"] not in check["nodes"]["local"]["missing"]
    alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]  # exits 1: one is open
    assert [a["kind"] for a in alerts] == ["jobs_recovered"], alerts
    assert f"jobs {job['id']} that node local knows" in alerts[0]["message"]

    gate.touch()  # it was never killed: it ends as it would have
    _code, (ended,) = nvq.wait(job["id"])
    assert (ended["state"], ended["exit_code"]) == ("failed", 3)
