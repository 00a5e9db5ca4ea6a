"""Alerts resolve themselves when what they were about is over, and `queue status`
shows how many are open and the newest three, not all of them."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_a_failure_is_resolved_when_the_requeued_job_completes(nvq: Nvq, tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    job = nvq.submit("--gpus", "0", "--", f"test -f {flag}")
    assert nvq.wait(job["id"])[0] == 1
    r = nvq.run("queue", "alerts", "--json")
    assert [(a["kind"], a["job_id"]) for a in r.json()["alerts"]] == [("job_failed", job["id"])]
    flag.touch()
    nvq.ok("job", "requeue", str(job["id"]))
    assert nvq.wait(job["id"])[0] == 0
    r = nvq.run("queue", "alerts", "--json")
    assert r.code == 0 and r.json() == {"alerts": []}
    (kept,) = nvq.json("queue", "alerts", "--all")["alerts"]
    assert kept["kind"] == "job_failed"
    assert kept["acked_by"] == f"resolved: job {job['id']} completed"


def test_status_shows_the_count_and_the_newest_three(nvq: Nvq) -> None:
    ids = [nvq.submit("--gpus", "0", "--name", f"f{n}", "--", "false")["id"] for n in range(5)]
    nvq.wait(*ids)
    alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
    lines = nvq.ok("queue", "status").out.splitlines()
    assert lines[0].startswith("5 open alerts")
    shown = lines[1:5]
    newest = sorted(alerts, key=lambda a: -a["id"])[:3]
    assert [ln.split()[0] for ln in shown[:3]] == [f"#{a['id']}" for a in newest]
    assert shown[3] == "  … and 2 older (nvq queue alerts)"
