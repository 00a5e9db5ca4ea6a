"""A real partition, not a kill: a node's link frozen (its sshd listener, sessions and
the `attach` they run SIGSTOPped) while its runner and jobs live on. The runner's
lease lapses, it stops the reassignable job itself before the daemon runs it
elsewhere, and the job's own ledger shows the two attempts never overlapped. A
`--no-reassign` job runs on through the partition and is running again after it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tests.daemon import test_ssh_nodes
from tests.daemon.test_ssh_nodes import ONE_CARD, _until

mesh = test_ssh_nodes.mesh  # the fixture, shared with the other sshd-node tests

# lease 4s + kill_grace 1s + margin 2s < node_grace 10s (nvq.config.lease)
TIMES = {'node_grace = "2s"': 'node_grace = "10s"', 'lease = "off"': 'lease = "4s"',
         'kill_grace = "2s"': 'kill_grace = "1s"'}


def _ledger_body(ledger: Path, tail: str) -> str:
    """Start and end lines (attempt, wall time) written by the job itself; SIGTERM
    writes the end line too."""
    stamp = f'echo "$1 $NVQ_JOB_ID $NVQ_ATTEMPT $(date +%s.%N)" >> {ledger}'
    return (
        f"mark() {{ {stamp}; }}; mark start; "
        "trap 'mark end; exit 143' TERM; "
        f"{tail}; mark end"
    )


def _lifetimes(ledger: Path, job_id: int) -> dict[int, tuple[float, float | None]]:
    spans: dict[int, tuple[float, float | None]] = {}
    for line in ledger.read_text().splitlines():
        what, job, attempt, at = line.split()
        if int(job) != job_id:
            continue
        if what == "start":
            assert int(attempt) not in spans, f"attempt {attempt} started twice"
            spans[int(attempt)] = (float(at), None)
        else:
            spans[int(attempt)] = (spans[int(attempt)][0], float(at))
    return spans


def test_a_partitioned_node_stops_its_job_before_it_runs_elsewhere(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    config = (nvq.home / "config.toml").read_text()
    for old, new in TIMES.items():
        config = config.replace(old, new)
    nvq.write_config(config)
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    nvq.ok("queue", "drain", "n0")
    # Attempt 1 runs until stopped; attempt 2 (elsewhere) runs a moment and ends.
    body = _ledger_body(
        ledger,
        'if [ "$NVQ_ATTEMPT" = 1 ]; then while :; do sleep 0.05; done; else sleep 0.5; fi',
    )
    job = nvq.submit("--", body)
    stay = nvq.submit(
        "--no-reassign", "--gpus", "0", "--node", "n1", "--",
        _ledger_body(ledger, f"while [ ! -e {gate} ]; do sleep 0.05; done"),
    )
    for j in (job, stay):
        nvq.wait_for(j["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    _until(lambda: ledger.exists() and ledger.read_text().count("start") == 2, what="both to start")
    nvq.ok("queue", "resume", "n0")

    nodes[1].pause()  # the partition: nothing dies
    try:
        # Past node_grace the job runs again elsewhere (and, with --no-reassign, the
        # other is called lost but left alone).
        code, (done,) = nvq.wait(job["id"], timeout=90)
        assert code == 0 and done["node"] != "n1" and done["attempt"] >= 2, done
        nvq.wait_for(stay["id"], lambda x: x["state"] == "lost")
    finally:
        nodes[1].resume()

    # From the job's own ledger: each attempt ended before the next began. (A daemon
    # starved past the lease on a loaded machine may get more attempts fenced; they
    # must not overlap either.)
    spans = sorted(_lifetimes(ledger, job["id"]).values())
    assert len(spans) >= 2, spans
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end is not None and end < start, f"attempts overlapped: {spans}"

    # Healed: the daemon learns what n1's runner did, as an event and a log line.
    def fenced() -> list[dict[str, Any]]:
        return [e for e in nvq.events() if e["kind"] == "attempt_fenced" and e["node"] == "n1"]

    _until(lambda: fenced() != [], timeout=60, what="attempt_fenced to reach the daemon")
    ev = fenced()[-1]
    assert ev["job_id"] == job["id"] and ev["data"]["lease"] == 4.0
    assert "was stopped by its runner" in (nvq.home / "daemon.log").read_text()
    assert nvq.show(job["id"])["state"] == "completed"  # the kill's exit changed nothing

    # The --no-reassign job ran on through it all, and is running again.
    nvq.wait_for(stay["id"], lambda x: x["state"] == "running", timeout=60)
    assert _lifetimes(ledger, stay["id"])[1][1] is None  # never stopped
    gate.touch()
    code, (last,) = nvq.wait(stay["id"])
    assert code == 0 and last["state"] == "completed" and last["attempt"] == 1
    kinds = [e["kind"] for e in nvq.events() if e["job_id"] == stay["id"]]
    assert "job_found" in kinds and "owed_kill" not in kinds
