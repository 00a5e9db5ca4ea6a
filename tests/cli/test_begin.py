"""`--begin` through the real CLI: a job waits with reason BeginTime until its time
(a moment or a delay), then runs; a time that is neither is refused in one line."""

from __future__ import annotations

from tests.cluster import Nvq


def test_begin_waits_with_its_reason_then_runs(nvq: Nvq) -> None:
    later = nvq.submit("--gpus", "0", "--no-snapshot", "--begin", "2026-12-02T22:00", "--", "true")
    far = nvq.submit("--gpus", "0", "--no-snapshot", "--begin", "5h", "--", "true")
    soon = nvq.submit("--gpus", "0", "--no-snapshot", "--begin", "1s", "--", "true")
    assert far["begin_at"] > soon["begin_at"] > soon["created_at"]
    rows = {j["id"]: j for j in nvq.json("job", "ls", "--active")["jobs"]}
    assert rows[far["id"]]["reason"] == "BeginTime", rows[far["id"]]
    why = nvq.json("job", "why", str(far["id"]))
    assert why["reason_detail"].startswith("--begin: not before "), why
    code, (done,) = nvq.wait(soon["id"])
    assert code == 0 and done["started_at"] >= soon["begin_at"]
    assert nvq.show(far["id"])["state"] == "pending"
    assert nvq.show(later["id"])["begin_at"] is not None

    # the help's own form: "after 2h" (and "in 2h") is the delay 2h
    after = nvq.submit("--gpus", "0", "--no-snapshot", "--begin", "after 2h", "--", "true")
    inside = nvq.submit("--gpus", "0", "--no-snapshot", "--begin", "in 5h", "--", "true")
    assert soon["begin_at"] < after["begin_at"] < far["begin_at"] <= inside["begin_at"]
    assert nvq.show(after["id"])["reason"] == "BeginTime"

    bad = nvq.run("job", "submit", "--begin", "tomorrow", "--", "true")
    assert bad.code == 2
    assert bad.err == (
        "nvq: invalid --begin 'tomorrow': expected a time like 2026-12-02T22:00 or a delay like 2h\n"
    )
