"""The job's whole path on the local node, through the real CLI: a real daemon, a real
runner, real job processes, fake GPUs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.cluster import Nvq

PY = sys.executable


def test_submit_runs_to_completion_with_its_environment(nvq: Nvq, tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    job = nvq.submit(
        "--name",
        "envdump",
        "--env",
        "FOO=bar baz",
        "--tag",
        "t1",
        "--",
        "sh",
        "-c",
        f"env > {out}; pwd >> {out}",
    )
    assert job["state"] == "pending"
    assert job["name"] == "envdump" and job["tags"] == ["t1"]
    code, (done,) = nvq.wait(job["id"])
    assert code == 0
    assert done["state"] == "completed" and done["exit_code"] == 0
    assert done["node"] == "local" and len(done["gpus"]) == 1
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["CUDA_VISIBLE_DEVICES"] == str(done["gpus"][0])
    assert env["NVQ_JOB_ID"] == str(job["id"])
    assert env["NVQ_JOB_NAME"] == "envdump"
    assert env["NVQ_NODE"] == "local"
    assert env["FOO"] == "bar baz"
    job_dir = Path(env["NVQ_JOB_DIR"])
    assert env["NVQ_STATUS_FILE"] == str(job_dir / "status")
    assert Path(env["NVQ_ARTIFACTS"]).is_dir()
    # runs in the snapshot of its submit directory, inside its job dir
    assert out.read_text().splitlines()[-1] == str(job_dir / "work")
    for field in (
        "id",
        "name",
        "state",
        "command",
        "node",
        "gpus",
        "vram_mb",
        "priority",
        "note",
        "progress",
        "tags",
        "submitter",
        "exit_code",
        "created_at",
        "started_at",
        "ended_at",
        "result",
    ):
        assert field in done
    assert done["created_at"] <= done["started_at"] <= done["ended_at"]


def test_cpu_job_gets_no_gpu_and_workdir_is_honoured(nvq: Nvq, tmp_path: Path) -> None:
    out = tmp_path / "cpu.txt"
    job = nvq.submit(
        "--gpus",
        "0",
        "--workdir",
        str(tmp_path),
        "--",
        f'echo "[$CUDA_VISIBLE_DEVICES]" > {out}; pwd >> {out}',
    )
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["gpus"] == []
    assert out.read_text().splitlines() == ["[]", str(tmp_path)]


def test_jobs_that_do_not_both_fit_run_one_after_the_other(nvq: Nvq) -> None:
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Small"\nmemory = "16GiB"\n')
    a = nvq.submit(
        "--vram",
        "10GiB",
        "--",
        PY,
        "-m",
        "nvq_runner.fakeload",
        "--mib",
        "9000",
        "--seconds",
        "1.5",
    )
    b = nvq.submit("--vram", "10G", "--", "true")
    code, (ja, jb) = nvq.wait(a["id"], b["id"])
    assert code == 0
    assert ja["gpus"] == jb["gpus"] == [0]
    assert jb["started_at"] >= ja["ended_at"], "the second job started before the first ended"


def test_jobs_that_fit_together_share_the_cards(nvq: Nvq, tmp_path: Path) -> None:
    marker = tmp_path / "go"
    jobs = [
        nvq.submit("--vram", "10GiB", "--", f"while [ ! -e {marker} ]; do sleep 0.05; done")
        for _ in range(4)
    ]
    running = [nvq.wait_for(j["id"], lambda x: x["state"] == "running") for j in jobs]
    per_card: dict[int, int] = {}
    for j in running:
        per_card[j["gpus"][0]] = per_card.get(j["gpus"][0], 0) + 1
    assert per_card == {0: 2, 1: 2}  # 2 × 10 GiB fit a 24 GiB card with 512 MiB headroom
    fifth = nvq.submit("--vram", "10GiB", "--", "true")
    time.sleep(1.0)
    assert nvq.show(fifth["id"])["state"] == "pending"
    marker.touch()
    code, _ = nvq.wait(*(j["id"] for j in jobs), fifth["id"])
    assert code == 0


def test_failing_job_reports_exit_code_and_stderr(nvq: Nvq) -> None:
    job = nvq.submit("--name", "bad", "--", "echo starting; echo 'Traceback: boom' >&2; exit 3")
    code, (done,) = nvq.wait(job["id"])
    assert code == 1
    assert done["state"] == "failed" and done["exit_code"] == 3
    assert "Traceback: boom" in done["stderr_tail"] and done["stderr_tail_stream"] == "stderr"
    quiet = nvq.submit("--", "echo only-stdout; exit 4")
    _, (out,) = nvq.wait(quiet["id"])
    assert (out["stderr_tail"], out["stderr_tail_stream"]) == ("only-stdout", "stdout")
    assert "  stdout tail:" in nvq.ok("job", "show", str(quiet["id"])).out
    kinds = [e["kind"] for e in nvq.show(job["id"])["events"]]
    assert kinds == ["job_submitted", "job_dispatched", "job_started", "job_failed"]


def test_job_killed_by_a_signal_is_failed_with_the_signal(nvq: Nvq) -> None:
    job = nvq.submit("--", "kill -KILL $$")
    _, (done,) = nvq.wait(job["id"])
    assert done["state"] == "failed" and done["signal"] == 9


def test_timeout_kills_the_process_group(nvq: Nvq, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    job = nvq.submit("--timeout", "1", "--", f"sleep 60 & echo $! > {pidfile}; wait")
    code, (done,) = nvq.wait(job["id"])
    assert code == 1
    assert done["state"] == "timeout"
    child = int(pidfile.read_text())
    assert not _alive(child), "the job's child outlived the timeout"


def test_cancel_kills_a_running_job_and_frees_its_card(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Small"\nmemory = "16GiB"\n')
    pidfile = tmp_path / "pid"
    long = nvq.submit("--vram", "12GiB", "--", f"sleep 300 & echo $! > {pidfile}; wait")
    nxt = nvq.submit("--vram", "12GiB", "--", "true")
    nvq.wait_for(
        long["id"],
        lambda j: (
            j["state"] == "running" and pidfile.exists() and pidfile.read_text().strip() != ""
        ),
    )
    cancelled = nvq.json("job", "cancel", str(long["id"]))["jobs"]
    assert cancelled[0]["state"] == "cancelled"
    code, (done,) = nvq.wait(nxt["id"])
    assert code == 0 and done["state"] == "completed"
    assert not _alive(int(pidfile.read_text()))
    assert nvq.show(long["id"])["state"] == "cancelled"
    # cancelling it again is an error, and changes nothing
    again = nvq.run("job", "cancel", str(long["id"]))
    assert again.code != 0 and "already ended" in again.err


def test_cancel_pending_job_never_runs(nvq: Nvq) -> None:
    # A request no node could ever hold is refused at submit once the node has reported
    # its cards (3 GPUs: never fits here)...
    nvq.nodes_up()
    refused = nvq.run("job", "submit", "--gpus", "3", "--", "true")
    assert refused.code == 2 and "needs 3 GPUs" in refused.err
    assert nvq.json("job", "ls")["jobs"] == []
    # ...and a pending one that only waits for room can be cancelled.
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Small"\nmemory = "16GiB"\n')
    blocker = nvq.submit("--vram", "15G", "--", "sleep 30")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    waiting = nvq.submit("--vram", "15G", "--", "true")
    nvq.ok("job", "cancel", str(waiting["id"]), str(blocker["id"]))
    _code, jobs = nvq.wait(waiting["id"], blocker["id"])
    assert [j["state"] for j in jobs] == ["cancelled", "cancelled"]
    assert jobs[0]["started_at"] is None


def test_submit_wait_returns_the_outcome(nvq: Nvq) -> None:
    ok = nvq.run("job", "submit", "--wait", "--json", "--", "true")
    assert ok.code == 0 and ok.json()["state"] == "completed"
    bad = nvq.run("job", "submit", "--wait", "--json", "--", "false")
    assert bad.code == 1 and bad.json()["state"] == "failed"


def test_wait_timeout_exits_2_with_work_still_going(nvq: Nvq) -> None:
    job = nvq.submit("--", "sleep 20")
    r = nvq.run("job", "wait", str(job["id"]), "--timeout", "0.5", "--json")
    assert r.code == 2
    assert r.json()["jobs"][0]["state"] in ("pending", "running")


def test_result_and_progress_are_collected(nvq: Nvq, tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # the job waits in epoch 1 until the test has seen it
    job = nvq.submit(
        "--",
        f"echo 'epoch 1/2' > $NVQ_STATUS_FILE; while [ ! -e {gate} ]; do sleep 0.05; done; "
        "printf 'epoch 2/2 loss 0.1\\n' > $NVQ_STATUS_FILE; "
        "echo '{\"acc\": 0.93}' > $NVQ_JOB_DIR/result.json",
    )
    seen = nvq.wait_for(job["id"], lambda j: j["progress"] == "epoch 1/2")
    assert seen["state"] == "running"
    gate.touch()
    code, (done,) = nvq.wait(job["id"])
    assert code == 0
    assert done["progress"] == "epoch 2/2 loss 0.1"
    assert done["result"] == {"acc": 0.93}
    assert nvq.json("job", "result", str(job["id"]))["result"] == {"acc": 0.93}
    nvq.ok("job", "result", str(job["id"]), "--set", '{"chosen": 1}')
    assert nvq.json("job", "result", str(job["id"]))["result"] == {"chosen": 1}


def test_notes(nvq: Nvq) -> None:
    job = nvq.submit("--note", "first", "--", "true")
    nvq.ok("job", "note", str(job["id"]), "--append", "second")
    assert nvq.show(job["id"])["note"] == "first\nsecond"
    nvq.ok("job", "note", str(job["id"]), "replaced")
    assert nvq.show(job["id"])["note"] == "replaced"
    nvq.ok("job", "note", str(job["id"]), "--clear")
    assert nvq.show(job["id"])["note"] == ""


def test_logs_follow_waits_for_a_pending_job_to_start(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "One"\nmemory = "16GiB"\n')
    gate = tmp_path / "gate"
    blocker = nvq.submit("--vram", "15G", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    waiting = nvq.submit("--vram", "15G", "--", "echo from-the-waiting-job")
    plain = nvq.run("job", "logs", str(waiting["id"]))
    assert plain.code != 0 and "has not started yet" in plain.err
    follower = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "logs", str(waiting["id"]), "-f"],
        env=nvq.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(0.5)
    gate.touch()
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert out == "from-the-waiting-job\n"


def test_logs_tail_follow_and_stderr(nvq: Nvq) -> None:
    job = nvq.submit(
        "--", "for i in 1 2 3 4 5; do echo line $i; done; echo err >&2; sleep 1; echo late"
    )
    follow = nvq.run("job", "logs", str(job["id"]), "-f", "--stdout", timeout=30)
    nvq.wait(job["id"])
    assert follow.code == 0
    assert follow.out.splitlines() == ["line 1", "line 2", "line 3", "line 4", "line 5", "late"]
    tail = nvq.run("job", "logs", str(job["id"]), "-n", "2", "--stdout")
    assert tail.out.splitlines() == ["line 5", "late"]
    both = nvq.run("job", "logs", str(job["id"]), "-n", "2")
    # Both streams, as written: `late` a second after the rest is last. `err` and
    # `line 5`, written a microsecond apart to two pipes, may be read in either order.
    last = both.out.splitlines()
    assert last[-1] == "late" and last[0] in ("err", "line 5"), last
    every = nvq.run("job", "logs", str(job["id"])).out.splitlines()
    assert sorted(every) == sorted([f"line {i}" for i in range(1, 6)] + ["err", "late"])
    assert every[-1] == "late" and every.index("line 1") < every.index("line 5")
    assert nvq.run("job", "logs", str(job["id"]), "--stderr").out == "err\n"
    doc = nvq.json("job", "show", str(job["id"]), "--logs", "1")
    assert doc["logs"] == "late\n"


def test_events_replay_since(nvq: Nvq) -> None:
    first = nvq.submit("--", "true")
    nvq.wait(first["id"])
    events = nvq.events()
    mark = events[-1]["id"]
    second = nvq.submit("--", "true")
    nvq.wait(second["id"])
    newer = nvq.events(since=mark)
    assert all(e["id"] > mark for e in newer)
    assert [e["kind"] for e in newer if e["job_id"] == second["id"]] == [
        "job_submitted",
        "job_dispatched",
        "job_started",
        "job_completed",
    ]
    for e in newer:
        assert set(e) >= {"id", "time", "kind", "job_id", "node", "data"}


def test_queue_nodes_reports_the_cards(nvq: Nvq) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\n'
        '[[gpu]]\nname = "Fake H100"\nmemory = "80GiB"\nutil = 35\n'
        '[[gpu.process]]\npid = 999999\nuser = "alice"\nused = "10GiB"\n'
    )
    job = nvq.submit(
        "--vram",
        "20GiB",
        "--",
        PY,
        "-m",
        "nvq_runner.fakeload",
        "--mib",
        "30720",
        "--seconds",
        "30",
    )
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    deadline = time.monotonic() + 15
    while True:
        (node,) = nvq.json("queue", "nodes")["nodes"]
        (gpu,) = node["gpus"]
        if any(p["managed"] for p in gpu["processes"]) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert node["name"] == "local" and node["state"] == "up"
    assert gpu["mem_total_mb"] == 81920
    assert gpu["util_percent"] == 35
    assert gpu["external_mem_mb"] == 10240
    assert gpu["queue_mem_mb"] == 30720
    assert gpu["reserved_mb"] == 20480
    assert gpu["mem_used_mb"] == 40960
    assert gpu["mem_used_percent"] == 50.0
    # free = total − foreign − max(reserved, actual) − headroom
    assert gpu["free_mb"] == 81920 - 10240 - 30720 - 512
    assert gpu["attribution"] == "measured"
    procs = {p["pid"]: p for p in gpu["processes"]}
    assert procs[999999] == {
        "pid": 999999,
        "user": "alice",
        "used_mb": 10240,
        "managed": False,
        "job_id": None,
    }
    (mine,) = [p for p in gpu["processes"] if p["managed"]]
    assert mine["job_id"] == job["id"] and mine["used_mb"] == 30720
    nvq.ok("job", "cancel", str(job["id"]))


def test_blind_cards_infer_the_split_from_reservations(nvq: Nvq) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\nblind = true\n'
        '[[gpu]]\nname = "WSL card"\nmemory = "24GiB"\n'
        '[[gpu.process]]\npid = 4242\nuser = "bob"\nused = "12GiB"\n'
    )
    job = nvq.submit("--vram", "8GiB", "--", "sleep 30")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")

    def card() -> dict[str, Any]:
        (node,) = nvq.json("queue", "nodes")["nodes"]
        (gpu,) = node["gpus"]
        return gpu  # type: ignore[no-any-return]

    deadline = time.monotonic() + 30  # a sample taken since the job started
    while (gpu := card())["queue_mem_mb"] != 8192:
        assert time.monotonic() < deadline, gpu
        time.sleep(0.1)
    assert gpu["attribution"] == "blind"
    assert gpu["reserved_mb"] == 8192
    # nothing is measured per process: the queue is taken to use its reservation
    # and the rest of the card's use is foreign
    assert gpu["mem_used_mb"] == 12288
    assert gpu["queue_mem_mb"] == 8192
    assert gpu["external_mem_mb"] == 4096
    assert gpu["free_mb"] == 24576 - 4096 - 8192 - 512
    assert all(p["used_mb"] is None for p in gpu["processes"])
    nvq.ok("job", "cancel", str(job["id"]))


def test_foreign_work_counts_against_capacity(nvq: Nvq) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\n[[gpu]]\nname = "Busy"\nmemory = "24GiB"\n'
        '[[gpu.process]]\npid = 1234\nuser = "carol"\nused = "20GiB"\n'
    )
    job = nvq.submit("--vram", "8GiB", "--", "true")
    time.sleep(1.5)
    assert nvq.show(job["id"])["state"] == "pending"
    # the foreign work ends: the file is re-read live and the job starts
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "Busy"\nmemory = "24GiB"\n')
    code, _ = nvq.wait(job["id"], timeout=20)
    assert code == 0


def test_daemon_stop_leaves_jobs_running_and_restart_settles_them(nvq: Nvq, tmp_path: Path) -> None:
    marker = tmp_path / "go"
    job = nvq.submit("--", f"while [ ! -e {marker} ]; do sleep 0.05; done; exit 7")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    nvq.ok("daemon", "stop")
    marker.touch()  # the job ends while no daemon runs
    time.sleep(0.5)
    code, (done,) = nvq.wait(job["id"])  # this starts a new daemon
    assert code == 1 and done["state"] == "failed" and done["exit_code"] == 7
    kinds = [e["kind"] for e in nvq.show(job["id"])["events"]]
    assert kinds.count("job_failed") == 1 and kinds.count("job_started") == 1


def test_priority_then_age_orders_the_queue(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus('cuda = "13.0"\n[[gpu]]\nname = "One"\nmemory = "16GiB"\n')
    marker = tmp_path / "go"
    blocker = nvq.submit("--vram", "15G", "--", f"while [ ! -e {marker} ]; do sleep 0.05; done")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    low = nvq.submit("--vram", "15G", "--", "true")
    high = nvq.submit("--vram", "15G", "--priority", "5", "--", "true")
    marker.touch()
    code, (jl, jh) = nvq.wait(low["id"], high["id"])
    assert code == 0
    assert jh["started_at"] < jl["started_at"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
