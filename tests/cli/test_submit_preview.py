"""`job submit --dry-run`: every check a submit makes, then where the job would start
now or why it would wait (the `job why` analysis), and nothing stored."""

from __future__ import annotations

from typing import Any

from tests.cluster import Nvq


def dry(nvq: Nvq, *args: str) -> Any:
    return nvq.ok("job", "submit", "--dry-run", "--json", *args).json()


def test_a_dry_run_says_where_or_why_and_stores_nothing(nvq: Nvq) -> None:
    # a job that ran: the node has reported and placement uses it (else a dry run
    # rightly says it would wait for the node to connect)
    first = nvq.submit("--gpus", "0", "--", "true")["id"]
    nvq.wait(first)
    submitted = len([e for e in nvq.events() if e["kind"] == "job_submitted"])
    free = dry(nvq, "--vram", "10GiB", "--", "true")
    assert (free["dry_run"], free["would_start"], free["node"]) == (True, True, "local")
    assert len(free["gpus"]) == 1 and free["reason"] is None
    assert [f["node"] for f in free["nodes"]] == ["local"] and free["nodes"][0]["fits"]
    assert [j["id"] for j in nvq.json("job", "ls")["jobs"]] == [first]
    assert len([e for e in nvq.events() if e["kind"] == "job_submitted"]) == submitted

    big = nvq.submit("--vram", "20GiB", "--gpus", "2", "--", "sleep", "600")["id"]
    nvq.wait_for(big, lambda j: j["state"] == "running")
    full = dry(nvq, "--vram", "10GiB", "--", "true")
    assert (full["would_start"], full["node"], full["reason"]) == (False, None, "Resources")
    (local,) = full["nodes"]
    failing = [c["constraint"] for c in local["checks"] if not c["ok"]]
    assert not local["fits"] and failing == ["memory per card"]
    text = nvq.ok("job", "submit", "--dry-run", "--vram", "10GiB", "--", "true").out
    assert text.startswith("dry run, nothing stored: the job would wait: Resources: ")

    after = dry(nvq, "--gpus", "0", "--after", str(big), "--", "true")
    assert (after["reason"], after["reason_detail"]) == (
        "Dependency", f"waits for job {big} (running) to complete")
    arms = dry(nvq, "--gpus", "0", "--array", "0-2", "--", "true")
    assert (arms["count"], arms["would_start"]) == (3, True)

    # refused exactly as a submit is: exit 2, one line, still nothing stored
    never = nvq.run("job", "submit", "--dry-run", "--vram", "30GiB", "--", "true")
    assert never.code == 2 and "no node can ever run this job" in never.err
    assert nvq.run("job", "submit", "--dry-run", "--after", "999", "--", "true").code == 2
    assert [j["id"] for j in nvq.json("job", "ls")["jobs"]] == [first, big]
    nvq.ok("job", "cancel", str(big))
