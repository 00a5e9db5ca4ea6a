"""`--signal SIG@DELAY` through the real CLI: the runner sends the signal DELAY before
the timeout, the job checkpoints to $NVQ_ARTIFACTS on it, the timeout still ends the
job, `NVQ_END_TIME` says when, and `job show` lists the `job_signalled` event. A bad
signal or a delay not shorter than the timeout is refused in one line."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_the_signal_comes_before_the_timeout(nvq: Nvq, tmp_path: Path) -> None:
    said = tmp_path / "said"
    # bash runs a trap between commands: the short sleeps let it run at once.
    body = (
        f"trap 'echo step7 > \"$NVQ_ARTIFACTS/ck\"; "
        f"echo \"checkpointed $NVQ_END_TIME\" > {said}' USR1; "
        "while :; do sleep 0.2; done"
    )
    job = nvq.submit("--gpus", "1", "--timeout", "8s", "--signal", "USR1@6s", "--", body)
    assert job["checkpoint_signal"] == "USR1@6"
    running = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and said.exists())
    assert said.read_text() == f"checkpointed {int(running['started_at'] + 8)}\n"
    code, (done,) = nvq.wait(job["id"])
    assert code != 0 and done["state"] == "timeout", done
    shown = nvq.show(job["id"])
    (sent,) = [e for e in shown["events"] if e["kind"] == "job_signalled"]
    assert (sent["data"]["signal"], sent["data"]["attempt"]) == ("SIGUSR1", 1)
    assert sent["data"]["end_at"] == running["started_at"] + 8
    # the attempt's end syncs $NVQ_ARTIFACTS after the job ends: wait for that sync
    nvq.wait_for(job["id"], lambda j: any(
        s["attempt"] == 1 and s["files"] >= 1 for s in j.get("artifact_syncs") or []))
    got = tmp_path / "got"
    nvq.ok("job", "artifacts", str(job["id"]), "--get", str(got))
    assert (got / "ck").read_text() == "step7\n"


def test_a_bad_signal_is_refused_in_one_line(nvq: Nvq) -> None:
    late = nvq.run("job", "submit", "--timeout", "1m", "--signal", "USR1@2m", "--", "true")
    assert late.code == 2
    assert late.err == (
        "nvq: --signal: is sent 120s before the end, but --timeout is 60s: "
        "the delay must be shorter than the timeout\n"
    )
    name = nvq.run("job", "submit", "--signal", "USR9@5m", "--", "true")
    assert (name.code, name.err) == (
        2, "nvq: invalid --signal 'USR9': not a signal name "
        "(one of USR1, USR2, TERM, INT, HUP, QUIT, ALRM, URG, WINCH)\n"
    )
    assert nvq.json("job", "ls")["jobs"] == []


def test_a_moved_job_gets_its_signal_and_resumes_from_its_checkpoint(
    nvq: Nvq, tmp_path: Path
) -> None:
    # Stopped to run elsewhere, the job is sent its --signal instead of SIGTERM: the
    # checkpoint is only written by the trap, so the resume proves the signal came.
    gate = tmp_path / "started"
    body = (
        'ck="$NVQ_ARTIFACTS/step"; '
        'if [ -f "$ck" ]; then echo "resumed at $(cat "$ck")"; exit 0; fi; '
        "trap 'echo 5 > \"$ck\"; exit 0' USR1; "
        f"touch {gate}; while :; do sleep 0.2; done"
    )
    job = nvq.submit("--gpus", "1", "--signal", "USR1", "--", body)
    running = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and gate.exists())
    other = 1 - running["gpus"][0]
    nvq.ok("job", "move", str(job["id"]), f"local:{other}")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and (done["gpus"], done["attempt"]) == ([other], 2)
    assert nvq.ok("job", "logs", str(job["id"])).out == "resumed at 5\n"
