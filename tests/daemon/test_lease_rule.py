"""One rule ties a runner's lease to the reassignment of its jobs (nvq.config.lease),
on real sshd nodes with frozen links: a reload that shortens `node_grace` never lets
a job run twice, a `node_grace` that leaves no lease is refused with what to set,
and a node's jobs move when the rule allows, not when a connect attempt happens to
give up, with the same countdown in `queue nodes`, `job ls` and `job show`."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from tests.cluster import Nvq
from tests.daemon import test_ssh_nodes
from tests.daemon.test_partition import _ledger_body, _lifetimes
from tests.daemon.test_ssh_nodes import ONE_CARD, _until

mesh = test_ssh_nodes.mesh  # the fixture, shared with the other sshd-node tests


def _configure(nvq: Any, node_grace: str, extra: str = "") -> None:
    config = (nvq.home / "config.toml").read_text()
    config = re.sub(r'node_grace = "\w+"', f'node_grace = "{node_grace}"', config)
    for old, new in {'lease = "off"': extra, 'kill_grace = "2s"': 'kill_grace = "1s"'}.items():
        config = config.replace(old, new)
    nvq.write_config(config)


def _on_n1(nvq: Nvq, ledger: Path) -> dict[str, Any]:
    """A job whose first attempt runs on n1 until stopped; a later one ends soon."""
    nvq.ok("queue", "drain", "n0")
    body = _ledger_body(
        ledger,
        'if [ "$NVQ_ATTEMPT" = 1 ]; then while :; do sleep 0.05; done; else sleep 0.5; fi',
    )
    job = nvq.submit("--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    _until(lambda: ledger.exists() and "start" in ledger.read_text(), what="the job to start")
    nvq.ok("queue", "resume", "n0")
    return job


def _never_overlapped(ledger: Path, job_id: int) -> None:
    spans = sorted(_lifetimes(ledger, job_id).values())
    assert len(spans) >= 2, spans
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end is not None and end < start, f"attempts overlapped: {spans}"


def test_a_reload_that_shortens_node_grace_never_runs_a_job_twice(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    _configure(nvq, "40s")  # lease 40 - 1 - 4 = 35s
    ledger = tmp_path / "ledger"
    job = _on_n1(nvq, ledger)
    _configure(nvq, "10s")  # lease 10 - 1 - 2 = 7s
    said = nvq.ok("daemon", "reload").out
    assert "node_grace" in said, said
    # At once: n1's runner may or may not have its new, shorter lease yet. Either
    # way the daemon waits for the longest one it may still hold.
    nodes[1].pause()
    try:
        code, (done,) = nvq.wait(job["id"], timeout=180)
        assert code == 0 and done["node"] == "n0" and done["attempt"] >= 2, done
    finally:
        nodes[1].resume()
    _never_overlapped(ledger, job["id"])
    # The reason says the rule, in config.toml's words: the lease granted, then kill_grace.
    (moved,) = [e for e in nvq.events() if e["kind"] == "job_reassigned"]
    assert re.fullmatch(
        r"node n1 unreachable since \d\d:\d\d:\d\d(: | for node_grace 10s; )its lease ran "
        r"out at \d\d:\d\d:\d\d, then kill_grace 1s and margin 2s (had )?passed( \(.*\))?",
        moved["data"]["reason"],
    ), moved


def test_a_reload_that_lengthens_the_lease_fences_nothing(mesh: Any, tmp_path: Path) -> None:
    """Found by the soak: 2s -> 14s made the daemon speak on an idle link every 2.8s
    while the runner still held 2s, so the runner stopped its jobs in each lull."""
    nvq, _ = mesh(1, gpus=ONE_CARD)
    _configure(nvq, "7s", 'lease = "2s"')
    go = tmp_path / "go"
    job = nvq.submit("--", f"while [ ! -e {go} ]; do sleep 0.05; done; sleep 8")
    nvq.wait_for(job["id"], lambda x: x["state"] == "running")
    config = (nvq.home / "config.toml").read_text()
    config = re.sub(r'node_grace = "\w+"', 'node_grace = "20s"', config)
    nvq.write_config(config.replace('lease = "2s"', 'lease = "14s"'))
    said = nvq.ok("daemon", "reload").out
    assert "lease: 2s -> 14s" in said, said
    go.touch()  # idle lulls of 2-2.8s from here on, three of them at least
    done = nvq.wait_for(job["id"], lambda x: x["state"] != "running" or x["attempt"] > 1,
                        timeout=120)
    assert done["state"] == "completed" and done["attempt"] == 1, done
    assert not [e for e in nvq.events() if e["kind"] == "attempt_fenced"]


def test_a_node_grace_that_leaves_no_lease_is_refused_at_start_and_reload(
    mesh: Any,
) -> None:
    nvq, _ = mesh(1, gpus=ONE_CARD)
    nvq.nodes_up(1)
    config = (nvq.home / "config.toml").read_text()
    nvq.write_config(config.replace('lease = "off"', ""))  # node_grace 2s, kill_grace 2s
    r = nvq.run("daemon", "reload")
    assert r.code != 0 and r.err.count("\n") == 1, r
    assert 'node_grace 2s leaves no lease' in r.err and 'set node_grace = "5s"' in r.err, r.err
    nvq.ok("daemon", "stop")
    r = nvq.run("queue", "status")  # the daemon it would start refuses the config
    assert r.code == 2 and 'set node_grace = "5s"' in r.err, r
    assert "Traceback" not in r.err


def test_jobs_move_when_the_rule_allows_while_connects_hang(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    # A connect to the frozen node hangs for an hour: only the rule's own deadline
    # can move its job (before, the check came only after a connect gave up).
    _configure(nvq, "12s", 'lease = "off"\nssh_connect_timeout = "1h"')
    config = (nvq.home / "config.toml").read_text()
    nvq.write_config(config.replace('ssh_connect_timeout = "3s"\n', ""))
    ledger = tmp_path / "ledger"
    job = _on_n1(nvq, ledger)
    nodes[1].pause()
    try:
        (lost,) = [n for n in _wait_nodes(nvq, lambda n: n["name"] == "n1"
                                          and n["unreachable_since"])]
        assert lost["grace_ends_at"] >= lost["unreachable_since"] + 12
        shown = nvq.show(job["id"])
        assert shown["state"] == "running" and shown["reassign_at"] == lost["grace_ends_at"]
        text = nvq.ok("job", "show", str(job["id"])).out
        assert "[unreachable, reassign in " in text.splitlines()[0], text
        page = nvq.json("job", "ls")
        assert page["unreachable"] == {"n1": lost["grace_ends_at"]}
        (row,) = [ln for ln in nvq.ok("job", "ls").out.splitlines()
                  if ln.startswith(f"{job['id']} ")]
        assert row.split()[1] == "unreachable", row
        moved = nvq.wait_for(job["id"], lambda x: x["attempt"] >= 2, timeout=120)
        assert moved["attempt"] >= 2
        (ev,) = [e for e in nvq.events() if e["kind"] == "node_down" and e["node"] == "n1"]
        assert ev["time"] >= lost["grace_ends_at"]  # never before the rule allows
        (why,) = [e["data"]["reason"] for e in nvq.events() if e["kind"] == "job_reassigned"]
        assert re.fullmatch(
            r"node n1 unreachable since \d\d:\d\d:\d\d for node_grace 12s "
            r"\(it held no lease\)( \(.*\))?",
            why,
        ), why
    finally:
        nodes[1].resume()


def _wait_nodes(nvq: Any, pred: Any) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    def seen() -> bool:
        got[:] = [n for n in nvq.json("queue", "nodes")["nodes"] if pred(n)]
        return bool(got)

    _until(seen, timeout=60, what="the node to be unreachable")
    return got
