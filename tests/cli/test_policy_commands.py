"""Scheduling policy through the real CLI (real daemon, runner and job processes; fake
GPUs): ordering, retries, pause/resume, permissions, matching, arrays and lanes. Every
test runs twice: on the queue host's own node, and on an sshd node (named "local"
there too) reached over SSH."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvq_runner.launcher import stop as stop_runner
from tests.cluster import Nvq, make_nvq, use_sshd_node

PY = sys.executable
BIG = ("--gpus", "2", "--vram", "20GiB")  # fills both fake cards: one at a time


@pytest.fixture(params=["local", "sshd"])
def nvq(request: pytest.FixtureRequest, tmp_path: Path, sshd_nodes: Any) -> Iterator[Nvq]:
    q = make_nvq(tmp_path)
    if request.param == "sshd":
        (node,) = sshd_nodes(1)
        use_sshd_node(q, node)
    try:
        yield q
    finally:
        q.shutdown()


def _until(pred: Any, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _until_gpus(nvq: Nvq, count: int) -> None:
    _until(
        lambda: len(nvq.json("queue", "nodes")["nodes"][0]["gpus"]) == count,
        what=f"the node reporting {count} GPU(s)",
    )


def _start_order(nvq: Nvq, ids: list[int]) -> list[int]:
    code, jobs = nvq.wait(*ids, timeout=60)
    assert code == 0, jobs
    return [j["id"] for j in sorted(jobs, key=lambda j: j["started_at"])]


def _drained(nvq: Nvq) -> None:
    nvq.ok("queue", "drain", "local")


def test_priority_set_adjust_and_move_change_the_dispatch_order(nvq: Nvq) -> None:
    _drained(nvq)
    ids = [nvq.submit(*BIG, "--", "true")["id"] for _ in range(5)]
    a, b, c, d, e = ids
    assert nvq.json("job", "priority", str(c), "5")["jobs"][0]["priority"] == 5
    assert nvq.json("job", "priority", str(c), "-2")["jobs"][0]["priority"] == 3  # c first
    assert nvq.json("job", "priority", str(d), "+3")["jobs"][0]["priority"] == 3  # d after c
    nvq.json("job", "priority", str(e), "--up", "2")  # e: c d e a b
    nvq.json("job", "priority", str(a), "--down", "1")  # c d e b a
    bad = nvq.run("job", "priority", str(a), "--up", "1", "--down", "1")
    assert bad.code == 2 and "exactly one" in bad.err
    nvq.ok("queue", "resume", "local")
    assert _start_order(nvq, ids) == [c, d, e, b, a]


def test_edit_keeps_identity_and_release_and_requeue_and_purge(nvq: Nvq) -> None:
    first = nvq.submit("--", "exit 3")
    ok = nvq.submit("--", "true")
    dep = nvq.submit(
        "--after", str(first["id"]), "--note", "keep me", "--priority", "2", "--", "true"
    )
    nvq.wait(first["id"], ok["id"])
    held = nvq.wait_for(dep["id"], lambda j: j["state"] == "held")
    assert f"prerequisite {first['id']} ended failed" in held["why"]
    assert "job release" in held["why"] and "--drop-after" in held["why"]
    edited = nvq.json(
        "job",
        "edit",
        str(dep["id"]),
        "--drop-after",
        str(first["id"]),
        "--add-after",
        str(ok["id"]),
    )
    assert edited["id"] == dep["id"] and edited["after"] == [ok["id"]]
    assert (edited["note"], edited["submitter"], edited["priority"], edited["rank"]) == (
        "keep me",
        dep["submitter"],
        2,
        dep["rank"],
    )
    code, (done,) = nvq.wait(dep["id"])
    assert code == 0 and done["state"] == "completed"
    bad = nvq.run("job", "edit", str(dep["id"]), "--add-after", "1")
    assert bad.code != 0 and "cannot be edited" in bad.err
    # requeue: a finished job runs again, same id and note, progress cleared
    again = nvq.json("job", "requeue", str(dep["id"]))["jobs"][0]
    assert again["state"] == "pending" and again["note"] == "keep me"
    code, (done2,) = nvq.wait(dep["id"])
    assert code == 0 and done2["attempt"] == 2
    kinds = [e["kind"] for e in nvq.show(dep["id"])["events"]]
    assert kinds.count("job_completed") == 2 and "job_requeued" in kinds and "job_edited" in kinds
    assert nvq.run("job", "requeue", "999").code != 0
    # purge forgets finished jobs (none ended before 2001), then all of them
    assert nvq.json("job", "purge", "--before", "2001-01-01")["purged"] == 0
    assert nvq.run("job", "purge", "--before", "yesterday-ish").code == 2
    purged = nvq.json("job", "purge", "--yes")
    assert set(purged["ids"]) == {first["id"], ok["id"], dep["id"]}
    assert nvq.run("job", "show", str(ok["id"])).code != 0
    assert nvq.submit("--", "true")["id"] > dep["id"]  # ids are never reused


def test_retries_bring_a_vanished_job_back_but_not_a_failed_one(nvq: Nvq, tmp_path: Path) -> None:
    ledger = tmp_path / "runs"
    job = nvq.submit("--retries", "1", "--", f"echo x >> {ledger}; sleep 30")
    running = nvq.wait_for(job["id"], lambda j: j["pid"] is not None)
    stop_runner(nvq.node_home)
    os.killpg(running["pid"], signal.SIGKILL)  # no exit record: the process vanished
    again = nvq.wait_for(job["id"], lambda j: j["attempt"] == 2 and j["state"] == "running", 60)
    assert again["retried"] == 1 and again["progress"] is None
    kinds = [e["kind"] for e in again["events"]]
    assert "job_retried" in kinds and "job_lost" not in kinds
    nvq.ok("job", "cancel", str(job["id"]))
    failing = nvq.submit("--retries", "3", "--", "exit 2")
    code, (done,) = nvq.wait(failing["id"])
    assert code == 1 and done["state"] == "failed" and done["attempt"] == 1


def test_pause_resume_pending_and_running(nvq: Nvq, tmp_path: Path) -> None:
    _drained(nvq)
    waiting = nvq.submit("--", "true")
    paused = nvq.json("job", "pause", str(waiting["id"]))["jobs"][0]
    assert paused["state"] == "paused"
    assert "job resume" in nvq.show(waiting["id"])["why"]
    nvq.ok("queue", "resume", "local")
    time.sleep(1.0)
    assert nvq.show(waiting["id"])["state"] == "paused"  # kept, not assigned
    nvq.json("job", "resume", str(waiting["id"]))
    code, _ = nvq.wait(waiting["id"])
    assert code == 0
    # a running job is stopped (TERM) and comes back paused, its artifacts kept
    marker = tmp_path / "term"
    body = (
        f"trap 'echo term > {marker}; exit 143' TERM; "
        'echo kept > "$NVQ_ARTIFACTS/a.txt"; sleep 30 & wait'
    )
    run = nvq.submit("--", body)
    live = nvq.wait_for(run["id"], lambda j: j["pid"] is not None)
    # The job's directory on the node is named by its identity: <queue>-<id>-<nonce>.
    (job_dir,) = Path(nvq.node_home, "jobs").glob(f"*-{run['id']}-{run['nonce'][:8]}")
    artifacts = job_dir / "artifacts"
    _until(lambda: (artifacts / "a.txt").exists(), what="artifact")
    stopped = nvq.json("job", "pause", str(run["id"]))["jobs"][0]
    assert stopped["state"] == "paused"
    _until(marker.exists, what="SIGTERM reached the job")
    _until(lambda: not _alive(live["pid"]), what="job process gone")
    assert (artifacts / "a.txt").read_text().strip() == "kept"
    assert nvq.show(run["id"])["state"] == "paused"
    assert nvq.run("job", "resume", str(run["id"])).code == 0
    nvq.wait_for(run["id"], lambda j: j["state"] == "running" and j["attempt"] == 2)
    assert nvq.run("job", "pause", "999").code != 0
    done = nvq.submit("--", "true")
    nvq.wait(done["id"])
    bad = nvq.run("job", "pause", str(done["id"]))
    assert bad.code != 0 and "cannot be paused" in bad.err
    nvq.ok("job", "cancel", str(run["id"]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_queue_owner_may_manage_anyones_job(nvq: Nvq) -> None:
    # The OS user the daemon runs as is always an admin (others are refused: see
    # tests/daemon/test_permissions.py and tests/daemon/test_members.py).
    _drained(nvq)
    job = nvq.submit("--", "true")
    nvq.ok("daemon", "stop")
    # Another user's job: rewrite its owner in the database while the daemon is down.
    db = sqlite3.connect(nvq.home / "queue.db")
    db.execute("UPDATE jobs SET user = 'alice' WHERE id = ?", (job["id"],))
    db.commit()
    db.close()
    nvq.json("job", "priority", str(job["id"]), "+1")
    assert nvq.json("job", "pause", str(job["id"]))["jobs"][0]["state"] == "paused"
    assert nvq.json("job", "cancel", str(job["id"]))["jobs"][0]["state"] == "cancelled"


def test_cuda_and_memory_matching_and_unschedulable_reasons(nvq: Nvq) -> None:
    ok = nvq.submit("--cuda", "12.4", "--memory", "64MiB", "--", "true")
    assert nvq.wait(ok["id"])[0] == 0
    # Once every node has reported, a request none could ever hold is refused at once.
    never = {
        "CUDA >= 14.0": ["--cuda", "14.0"],
        "host memory": ["--memory", "100000GiB"],
        "needs 3 GPUs": ["--gpus", "3"],
        "GPU memory": ["--vram", "30GiB"],
    }
    for why, flags in never.items():
        refused = nvq.run("job", "submit", *flags, "--", "true")
        assert refused.code == 2, why
        assert refused.err.startswith("nvq: no node can ever run this job: "), refused.err
        assert why in refused.err, refused.err
    # One the node could hold when it was submitted, but no longer can, fails when it
    # would be placed: unschedulable, with an event.
    blocker = nvq.submit("--gpus", "0", "--", "sleep 30")
    later = nvq.submit("--gpus", "2", "--after-any", str(blocker["id"]), "--", "true")
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Small"\nmemory = "16GiB"\n')
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    _until_gpus(nvq, 1)
    nvq.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = nvq.wait(later["id"])
    assert code == 1 and done["reason"].startswith("unschedulable"), done["reason"]
    events = [e for e in nvq.events() if e["kind"] == "job_unschedulable"]
    assert [e["job_id"] for e in events] == [later["id"]]
    assert all(e["data"]["reason"] for e in events)
    bad = nvq.run("job", "submit", "--cuda", "thirteen", "--", "true")
    assert bad.code == 2 and "CUDA" in bad.err


def test_memory_limit_is_enforced(nvq: Nvq) -> None:
    hog = f"{PY} -c \"x = bytearray(512 * 1024 * 1024); print('allocated')\""
    job = nvq.submit("--gpus", "0", "--memory", "256MiB", "--", hog)
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed"
    assert "exceeded its --memory limit of 256MiB" in done["reason"]
    fine = nvq.submit("--gpus", "0", "--memory", "2GiB", "--", hog)
    assert nvq.wait(fine["id"])[0] == 0


def test_array_members_limits_and_array_wide_commands(nvq: Nvq, tmp_path: Path) -> None:
    out = tmp_path / "arr"
    out.mkdir()
    body = f'echo "$NVQ_ARRAY_INDEX $NVQ_ARRAY_ID" > {out}/{{}}; sleep 0.5'
    first = nvq.submit("--gpus", "0", "--array", "0-8:2%2", "--", body)
    aid = first["id"]
    assert first == {"id": aid, "ids": list(range(aid, aid + 5)), "count": 5}
    members = nvq.json("job", "ls", "--array", str(aid))["jobs"]
    assert members[0]["array_id"] == aid and members[0]["array_index"] == 0
    assert [m["array_index"] for m in members] == [0, 2, 4, 6, 8]
    assert [m["id"] for m in members] == list(range(aid, aid + 5))
    code, jobs = nvq.wait(*(m["id"] for m in members), timeout=60)
    assert code == 0
    # %2: from the members' own start and end times, never more than 2 at once
    edges = sorted(
        [(j["started_at"], 1) for j in jobs] + [(j["ended_at"], -1) for j in jobs],
        key=lambda e: (e[0], e[1]),
    )
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert 1 <= peak <= 2
    for i in (0, 2, 4, 6, 8):
        assert (out / str(i)).read_text().split() == [str(i), str(aid)]
    # array-wide pause / priority / cancel touch only members not yet running
    _drained(nvq)
    second = nvq.submit("--gpus", "0", "--array", "1-3", "--", "true")["id"]
    assert {j["state"] for j in nvq.json("job", "pause", "--array", str(second))["jobs"]} == {"paused"}
    assert len(nvq.json("job", "resume", "--array", str(second))["jobs"]) == 3
    prios = nvq.json("job", "priority", "--array", str(second), "4")["jobs"]
    assert [j["priority"] for j in prios] == [4, 4, 4]
    cancelled = nvq.json("job", "cancel", "--array", str(second))["jobs"]
    assert [j["state"] for j in cancelled] == ["cancelled"] * 3
    assert nvq.run("job", "ls", "--array", "99999").code != 0
    bad = nvq.run("job", "submit", "--array", "5-1", "--", "true")
    assert bad.code == 2 and "before the start" in bad.err


def test_ten_thousand_array_members_are_one_request(nvq: Nvq) -> None:
    _drained(nvq)
    t0 = time.monotonic()
    first = nvq.submit("--gpus", "0", "--array", "0-9999", "--", "echo {}")
    took = time.monotonic() - t0
    members = nvq.json("job", "ls", "--array", str(first["id"]))["jobs"]
    assert len(members) == 10000 and members[-1]["command"] == "echo 9999"
    submitted = [e for e in nvq.events() if e["kind"] == "job_submitted"]
    assert len(submitted) == 10000
    print(f"10,000 array members submitted in {took:.2f}s")
    assert took < 20


def test_lanes_run_in_order_and_can_be_reordered(nvq: Nvq, tmp_path: Path) -> None:
    ledger = tmp_path / "lane"
    nvq.ok("queue", "status")  # daemon up
    nvq.nodes_up()
    nvq.ok("job", "submit", "--lane", "loc:1", "--", "sleep 1")  # resolves the prefix
    lane = nvq.json("queue", "lane", "local:1")
    assert lane["lane"] == "local:1"
    nvq.ok("queue", "lane", "local:1", "pause")
    ids = [
        nvq.submit("--lane", "local:1", "--vram", "20GiB", "--", f"echo $NVQ_JOB_ID >> {ledger}")[
            "id"
        ]
        for _ in range(4)
    ]
    a, b, c, d = ids
    nvq.ok("queue", "lane", "local:1", "move", str(d), "--to", "head")  # d a b c
    nvq.ok("queue", "lane", "local:1", "swap", str(a), str(c))  # d c b a
    nvq.ok("queue", "lane", "local:1", "skip")  # c b a d
    doc = nvq.json("queue", "lane", "local:1", "move", str(a), "--before", str(b))  # c a b d
    assert doc["paused"] and [j["id"] for j in doc["jobs"]][-4:] == [c, a, b, d]
    lanes = {x["lane"]: x for x in nvq.json("queue", "lanes")["lanes"]}
    assert set(lanes) >= {"local:0", "local:1"} and lanes["local:1"]["paused"]
    nvq.ok("queue", "lane", "local:1", "resume")
    code, jobs = nvq.wait(*ids, timeout=60)
    assert code == 0 and {j["gpus"][0] for j in jobs} == {1}
    assert [int(x) for x in ledger.read_text().split()] == [c, a, b, d]
    bad = nvq.run("queue", "lane", "local:1", "move", "999", "--to", "head")
    assert bad.code != 0 and "not queued in this lane" in bad.err


def test_lane_stops_at_a_held_head_and_cancel_lets_the_next_start(nvq: Nvq) -> None:
    nvq.nodes_up()
    bad = nvq.submit("--", "exit 1")
    nvq.wait(bad["id"])
    held = nvq.submit("--lane", "local:0", "--after", str(bad["id"]), "--", "true")
    behind = nvq.submit("--lane", "local:0", "--", "true")
    nvq.wait_for(held["id"], lambda j: j["state"] == "held")
    time.sleep(1.0)
    lanes = {x["lane"]: x for x in nvq.json("queue", "lanes")["lanes"]}
    assert lanes["local:0"]["blocked"] == f"held:{held['id']}"
    assert nvq.show(behind["id"])["state"] == "pending"  # not stepped over
    nvq.ok("job", "cancel", str(held["id"]))
    assert nvq.wait(behind["id"])[0] == 0
    # a drained node's lanes start nothing
    nvq.ok("queue", "drain", "local")
    waiting = nvq.submit("--lane", "local:0", "--", "true")
    time.sleep(1.0)
    assert nvq.show(waiting["id"])["state"] == "pending"
    nvq.ok("queue", "resume", "local")
    assert nvq.wait(waiting["id"])[0] == 0


def test_lane_jobs_share_the_vram_budget(nvq: Nvq) -> None:
    nvq.nodes_up()
    hog = nvq.submit("--vram", "20GiB", "--node", "local", "--", "sleep 30")
    running = nvq.wait_for(hog["id"], lambda j: j["state"] == "running")
    card = running["gpus"][0]
    lane = nvq.submit("--lane", f"local:{card}", "--vram", "10GiB", "--", "true")
    time.sleep(1.5)
    assert nvq.show(lane["id"])["state"] == "pending"  # the card has no room
    nvq.ok("job", "cancel", str(hog["id"]))
    assert nvq.wait(lane["id"])[0] == 0
