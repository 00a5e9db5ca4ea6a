"""An earlier attempt's output is always readable, through the real CLI: a preempted
job waiting to run again answers `job logs ID --attempt 1` (and `job logs ID`, its
latest attempt's) with what that attempt wrote."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_a_preempted_jobs_first_attempt_logs_read_while_it_waits(
    nvq: Nvq, tmp_path: Path
) -> None:
    up, go = tmp_path / "up", tmp_path / "go"
    victim = nvq.submit(
        "--gpus", "2", "--vram", "20GiB", "--preemptible", "--",
        f"echo attempt-$NVQ_ATTEMPT-wrote; echo to-stderr >&2; touch {up}; sleep 600",
    )
    nvq.wait_for(victim["id"], lambda j: j["state"] == "running" and up.exists())
    urgent = nvq.submit(
        "--gpus", "2", "--vram", "20GiB", "--priority", "5", "--",
        f"while [ ! -f {go} ]; do sleep 0.1; done",
    )
    nvq.wait_for(urgent["id"], lambda j: j["state"] == "running")
    waiting = nvq.wait_for(victim["id"], lambda j: j["state"] == "pending")
    assert waiting["attempt"] == 1, waiting

    r = nvq.run("job", "logs", str(victim["id"]), "--attempt", "1", "--stdout")
    assert (r.code, r.out) == (0, "attempt-1-wrote\n"), (r.out, r.err)
    r = nvq.run("job", "logs", str(victim["id"]), "--attempt", "1", "--stderr")
    # (then the shell's own word for the signal that stopped it)
    assert r.code == 0 and r.out.startswith("to-stderr\n"), (r.out, r.err)
    r = nvq.run("job", "logs", str(victim["id"]))  # both streams, as written
    assert r.code == 0 and r.out.startswith("attempt-1-wrote\nto-stderr\n"), (r.out, r.err)
    go.touch()
    nvq.wait(urgent["id"])
    nvq.ok("job", "cancel", str(victim["id"]))
