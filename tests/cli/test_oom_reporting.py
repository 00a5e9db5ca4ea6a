"""What a user sees of a job killed by signal 9: an OOM kill is named only where the
runner can tell (its memory cgroup's oom_kill counter), so a SIGKILL from anything
else stays a plain signal 9, and `--retries-on` does not retry it as an OOM kill."""

from __future__ import annotations

from tests.cluster import Nvq


def test_a_sigkill_is_reported_as_such_and_retries_on_is_checked(nvq: Nvq) -> None:
    job = nvq.submit(
        "--gpus", "0", "--memory", "1GiB", "--retries", "2", "--retries-on", "oom, lost",
        "--", "kill -9 $$",
    )  # fmt: skip
    assert job["retries_on"] == "lost,oom"
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed" and done["attempt"] == 1
    assert (done["exit_code"], done["signal"]) == (137, 9)
    assert done["reason"] == "killed by signal 9"
    bad = nvq.run("job", "submit", "--retries-on", "oom,crash", "--", "true")
    assert bad.code == 2
    assert bad.err == "nvq: --retries-on: unknown crash (choose from lost, oom)\n"
    assert nvq.json("job", "ls")["jobs"] == [done]
