"""`nvq report` through the real CLI: its GPU-hours are the jobs' own run times (part
of a card counted as its part), with outcomes, failure rate and waits; CSV and bad
input."""

from __future__ import annotations

import csv
import io
import time

import pytest

from tests.cluster import Nvq


def test_the_reports_gpu_hours_match_the_jobs_run_times(nvq: Nvq) -> None:
    whole = nvq.submit("--tag", "sweep", "--no-snapshot", "--", "sleep", "0.5")
    part = nvq.submit("--tag", "sweep", "--vram", "6GiB", "--no-snapshot", "--", "sleep", "0.5")
    bad = nvq.submit("--tag", "debug", "--no-snapshot", "--", "false")
    cpu = nvq.submit("--gpus", "0", "--no-snapshot", "--", "true")
    nvq.wait(whole["id"], part["id"], bad["id"], cpu["id"])
    jobs = {j["id"]: nvq.show(j["id"]) for j in (whole, part, bad, cpu)}

    def ran(job_id: int) -> float:
        return float(jobs[job_id]["ended_at"] - jobs[job_id]["started_at"])

    doc = nvq.json("report", "--since", "1h", "--by", "tag")
    rows = {r["key"]: r for r in doc["rows"]}
    # One whole card, a quarter of a 24 GiB card (6 GiB), a failed whole card; CPU: none.
    sweep_used = (ran(whole["id"]) + 0.25 * ran(part["id"])) / 3600
    assert rows["sweep"]["gpu_hours_used"] == pytest.approx(sweep_used, abs=1e-6)
    assert rows["debug"]["gpu_hours_used"] == pytest.approx(ran(bad["id"]) / 3600, abs=1e-6)
    assert rows["(none)"]["gpu_hours_used"] == 0.0
    # Reserved: whole cards from dispatch, so never less than used.
    assert rows["sweep"]["gpu_hours_reserved"] >= ran(whole["id"]) / 3600 + ran(part["id"]) / 3600
    assert rows["sweep"]["jobs"]["completed"] == 2 and rows["sweep"]["failure_rate"] == 0.0
    assert rows["debug"]["jobs"]["failed"] == 1 and rows["debug"]["failure_rate"] == 1.0
    total = doc["total"]
    assert total["attempts"] == 4 and sum(total["jobs"].values()) == 4
    assert total["failure_rate"] == 0.25
    assert total["wait_mean_s"] is not None and total["wait_p90_s"] is not None
    assert total["preemptions"] == 0
    text = nvq.ok("report", "--by", "tag").out.splitlines()
    assert text[0].startswith("usage from ") and text[1].split()[:3] == ["TAG", "GPU-H", "RESERVED"]
    assert text[-1].split()[0] == "total"

    by_user = nvq.json("report", "--by", "user")
    assert [r["key"] for r in by_user["rows"]] == ["root"]
    day = time.strftime("%Y-%m-%d", time.localtime(jobs[cpu["id"]]["ended_at"]))
    assert nvq.json("report", "--by", "day")["rows"][0]["key"] == day

    table = list(csv.reader(io.StringIO(nvq.ok("report", "--by", "tag", "--csv").out)))
    assert table[0][:3] == ["tag", "gpu_hours_reserved", "gpu_hours_used"]
    assert {row[0] for row in table[1:]} == {"sweep", "debug", "(none)", "total"}

    for args, message in (
        (
            ("--by", "project"),
            "nvq: --by 'project': expected one of user, submitter, tag, node, day\n",
        ),
        (
            ("--since", "last week"),
            "nvq: invalid --since 'last week': expected a time like "
            "2026-11-24T09:00 or a span like 7d (that long ago)\n",
        ),
    ):
        r = nvq.run("report", *args)
        assert (r.code, r.err) == (2, message)
