"""`nvq node status|restart`: the runner as the daemon knows it, and a restart that
never touches a running job (the new runner adopts it and still learns how it ended);
`queue lanes` says why a lane whose node will not start it is blocked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cluster import Nvq


def test_a_restarted_runner_adopts_the_job_it_did_not_start(nvq: Nvq, tmp_path: Path) -> None:
    go = tmp_path / "go"
    shown = tmp_path / "shown.json"
    # after the restart the job still talks to its queue: its socket is served again
    body = (f"while [ ! -e {go} ]; do sleep 0.05; done; echo finished; "
            f"nvq job show $NVQ_JOB_ID --json > {shown}")
    job = nvq.submit("--gpus", "0", "--", "sh", "-c", body)["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")

    before = nvq.json("node", "status", "local")
    assert (before["runner_up"], before["state"], before["jobs"]) == (True, "up", [job])
    assert before["pid"] > 0 and before["version"] and before["uptime_s"] >= 0
    assert nvq.ok("node", "status", "local").out.startswith("node local: runner up")

    after = nvq.json("node", "restart", "local")
    assert after["runner_up"] and after["pid"] != before["pid"]
    assert after["jobs"] == [job] and after["journal_id"] == before["journal_id"]
    assert nvq.show(job)["state"] == "running"  # not touched

    go.touch()
    code, (done,) = nvq.wait(job)
    assert (code, done["state"], done["exit_code"]) == (0, "completed", 0)
    assert nvq.ok("job", "logs", str(job)).out == "finished\n"
    assert json.loads(shown.read_text())["state"] == "running"
    assert nvq.run("node", "status", "nowhere").code == 2


def test_a_lane_says_its_node_is_why_it_waits(nvq: Nvq) -> None:
    nvq.nodes_up()  # a node still connecting is that, before it is draining
    nvq.ok("queue", "drain", "local")
    job = nvq.submit("--lane", "local:0", "--", "true")["id"]
    (lane,) = [d for d in nvq.json("queue", "lanes")["lanes"] if d["lane"] == "local:0"]
    assert (lane["next"], lane["blocked"]) == ([job], "node draining")
    nvq.ok("queue", "resume", "local")
    code, _ = nvq.wait(job)
    assert code == 0
