"""Planned downtime kills nothing: `nvq daemon stop` first grants every runner it
reaches a lease of `[queue] max_downtime`, so a stop longer than the usual lease
stops no job; and a daemon that starts again honours that grant for a node it cannot
reach (a queue-host reboot that lost every link): nothing of it moves before the
grant runs out. Real sshd nodes; the job's own ledger says whether it was stopped."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from tests.daemon import test_ssh_nodes
from tests.daemon.test_ssh_nodes import ONE_CARD, _until

mesh = test_ssh_nodes.mesh  # the fixture, shared with the other sshd-node tests

# lease 10 - 1 - 2 = 7s: a stop of the daemon lasts longer than that below.
SHORT = {'lease = "off"': "", 'kill_grace = "2s"': 'kill_grace = "1s"'}


def _short_lease(nvq: Any) -> None:
    config = re.sub(r'node_grace = "\w+"', 'node_grace = "10s"',
                    (nvq.home / "config.toml").read_text())
    for old, new in SHORT.items():
        config = config.replace(old, new)
    nvq.write_config(config)


def test_a_stop_longer_than_the_lease_kills_no_job(mesh: Any, tmp_path: Path) -> None:
    nvq, _ = mesh(1, gpus=ONE_CARD)
    _short_lease(nvq)
    ledger = tmp_path / "ledger"
    # The job outlives three leases by its own clock, and says how it ended.
    body = (f"trap 'echo killed >> {ledger}; exit 143' TERM; echo start >> {ledger}; "
            f"sleep 25 & wait $!; echo survived >> {ledger}")
    job = nvq.submit("--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running")
    _until(lambda: ledger.exists() and "start" in ledger.read_text(), what="the job to start")
    said = nvq.ok("daemon", "stop").out
    assert "1 running job(s) go on for 1h" in said, said
    _until(lambda: len(ledger.read_text().split()) >= 2, timeout=120, what="the job to end")
    assert ledger.read_text().split() == ["start", "survived"]
    code, (done,) = nvq.wait(job["id"], timeout=120)  # a new daemon hears how it ended
    assert code == 0 and done["attempt"] == 1, done
    assert not [e for e in nvq.events() if e["kind"] == "attempt_fenced"]


def test_a_daemon_started_again_honours_the_stops_grant(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    _short_lease(nvq)
    gate = tmp_path / "gate"
    nvq.ok("queue", "drain", "n0")
    job = nvq.submit("--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    nvq.ok("queue", "resume", "n0")
    stopped_at = time.time()
    nvq.ok("daemon", "stop")
    nodes[1].kill_all()  # the queue host comes back without its link to n1
    try:
        def n1_away() -> list[dict[str, Any]]:
            return [n for n in nvq.json("queue", "nodes")["nodes"]
                    if n["name"] == "n1" and n["unreachable_since"]]

        _until(n1_away, timeout=60, what="n1 out of reach")
        (lost,) = n1_away()
        # Not node_grace (10s) from now: the hour the stop granted, from the stop.
        assert lost["grace_ends_at"] >= stopped_at + 3600, lost
        assert nvq.show(job["id"])["attempt"] == 1
    finally:
        nodes[1].start()
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    gate.touch()
    code, (done,) = nvq.wait(job["id"], timeout=120)
    assert code == 0 and done["attempt"] == 1, done
