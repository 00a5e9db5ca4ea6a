"""A queue restored from a backup (or a fresh queue.db) against a node whose runner
already ran jobs: the node keeps taking work, ids are never reused, and each job's
logs are its own."""

from __future__ import annotations

import time

from tests.cluster import Nvq


def test_restore_against_a_used_node_keeps_the_node_working(nvq: Nvq) -> None:
    first = [nvq.submit("--gpus", "0", "--", "sh", "-c", f"echo old-{i}") for i in range(3)]
    code, _ = nvq.wait(*(j["id"] for j in first))
    assert code == 0
    backup = nvq.home / "backups" / "b.db"  # backups live under the home
    nvq.ok("queue", "backup", str(backup))
    late = nvq.submit("--gpus", "0", "--", "sh", "-c", "sleep 3; echo late; exit 4")
    nvq.wait_for(late["id"], lambda j: j["state"] == "running")
    nvq.ok("daemon", "stop")
    nvq.ok("queue", "restore", str(backup))

    fresh = nvq.submit("--gpus", "0", "--", "sh", "-c", "echo fresh")
    # Never the id of a job any node has seen.
    assert fresh["id"] > late["id"]
    code, jobs = nvq.wait(fresh["id"], timeout=60)
    assert code == 0, jobs
    assert nvq.ok("job", "logs", str(fresh["id"])).out.strip() == "fresh"
    # The store never saw job `late`: the node's record of it is reported. Which way
    # depends on timing (ids past the store's, or the orphan's end once it is killed),
    # so the alert is awaited rather than read once.
    deadline = time.monotonic() + 30
    while True:
        alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
        if any("restore" in a["message"] or "journal" in a["message"] for a in alerts):
            break
        assert time.monotonic() < deadline, alerts
        time.sleep(0.2)
