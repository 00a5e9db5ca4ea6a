"""Preemption through the real CLI: an urgent job (higher --priority) that no card
can take stops one --preemptible job, which gets its --signal, checkpoints to
$NVQ_ARTIFACTS, goes back to the queue (not a failure, no --retries spent) and later
resumes from its checkpoint; `job_preempted` names the urgent job."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_an_urgent_job_preempts_the_latest_preemptible_one(nvq: Nvq, tmp_path: Path) -> None:
    # A checkpoint only the USR1 trap writes: the resume proves the signal came.
    def sweep(n: int) -> str:
        gate = tmp_path / f"up{n}"
        return (
            'ck="$NVQ_ARTIFACTS/step"; '
            'if [ -f "$ck" ]; then echo "resumed at $(cat "$ck")"; exit 0; fi; '
            "trap 'echo 7 > \"$ck\"; exit 0' USR1; "
            f"touch {gate}; while :; do sleep 0.2; done"
        )

    flags = ("--gpus", "1", "--vram", "20GiB", "--preemptible", "--signal", "USR1")
    first = nvq.submit(*flags, "--", sweep(1))
    second = nvq.submit(*flags, "--", sweep(2))
    assert first["preemptible"] is True
    for job, n in ((first, 1), (second, 2)):
        up = tmp_path / f"up{n}"
        nvq.wait_for(job["id"], lambda j, up=up: j["state"] == "running" and up.exists())
    # Both cards are taken: the urgent job can start only by stopping one of them,
    # the one started last (it loses the least work).
    shown = [nvq.show(first["id"]), nvq.show(second["id"])]
    latest = max(shown, key=lambda j: (j["started_at"], -j["id"]))
    go = tmp_path / "go"
    urgent = nvq.submit(
        "--gpus", "1", "--vram", "20GiB", "--priority", "5", "--",
        f"while [ ! -f {go} ]; do sleep 0.1; done; echo urgent",
    )
    running = nvq.wait_for(urgent["id"], lambda j: j["state"] == "running")
    assert running["gpus"] == latest["gpus"]
    victim = nvq.show(latest["id"])
    assert victim["state"] == "pending", victim
    # `job show`: why it waits now, and (the reason kept) who preempted it.
    assert victim["reason_detail"].endswith(
        f"; preempted: by job {urgent['id']} (priority 5), which needs its cards on local"
    ), victim["reason_detail"]
    (ev,) = [e for e in victim["events"] if e["kind"] == "job_preempted"]
    assert (ev["data"]["by"], ev["data"]["attempt"]) == (urgent["id"], 1)
    other = first if latest["id"] == second["id"] else second
    assert nvq.show(other["id"])["state"] == "running"  # one was enough
    go.touch()
    code, (done,) = nvq.wait(latest["id"])
    assert code == 0 and (done["attempt"], done["retried"]) == (2, 0), done
    assert nvq.ok("job", "logs", str(latest["id"])).out == "resumed at 7\n"
    assert nvq.wait(urgent["id"])[0] == 0
    nvq.ok("job", "cancel", str(other["id"]))
