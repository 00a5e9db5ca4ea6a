"""What a user sees of why jobs wait: the REASON column of `job ls`, the top of
`job show`, `job why` node by node, and no stale WHERE after a pause."""

from __future__ import annotations

import getpass
from typing import Any

from tests.cluster import Nvq, use_sshd_node


def test_ls_show_and_why_say_why_a_job_waits(nvq: Nvq) -> None:
    big = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep", "60")
    nvq.wait_for(big["id"], lambda j: j["state"] == "running")
    waits = nvq.submit("--vram", "20GiB", "--", "true")
    shown = nvq.wait_for(waits["id"], lambda j: j["reason"] == "Resources")
    assert shown["reason_detail"] == "best candidate: local:0 (24GiB) has 3.5GiB free, needs 20GiB (queue jobs hold 20GiB)"
    table = nvq.ok("job", "ls").out.splitlines()
    assert table[0].split() == [
        "ID",
        "STATE",
        "NAME",
        "USER",
        "WHERE",
        "VRAM",
        "RUNTIME",
        "REASON",
        "PROGRESS",
    ]
    row = next(line for line in table if line.startswith(str(waits["id"])))
    assert "Resources" in row and "best candidate: local:0 (24GiB)" in row
    text = nvq.ok("job", "show", str(waits["id"])).out.splitlines()
    assert (
        text[1] == "  waits       Resources: best candidate: local:0 (24GiB) has 3.5GiB free, needs 20GiB (queue jobs hold 20GiB)"
    )
    why = nvq.ok("job", "why", str(waits["id"])).out.splitlines()
    assert why == [
        f"job {waits['id']} is pending: Resources: best candidate: local:0 (24GiB) has 3.5GiB "
        "free, needs 20GiB (queue jobs hold 20GiB)",
        f"estimated start: it cannot be known: running job {big['id']} has no time limit, "
        "progress or finished runs of their command to tell when they end",
        "  local  memory per card: local:0 (24GiB) has 3.5GiB free, needs 20GiB (queue jobs hold 20GiB)",
    ]
    doc = nvq.json("job", "why", str(waits["id"]))
    assert [c["constraint"] for c in doc["nodes"][0]["checks"]] == [
        "state",
        "cards",
        "memory per card",
    ]
    assert "not waiting" in nvq.ok("job", "why", str(big["id"])).out


def test_a_resumed_job_shows_no_stale_where(nvq: Nvq) -> None:
    big = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep", "60")
    nvq.wait_for(big["id"], lambda j: j["state"] == "running")
    nvq.ok("job", "pause", str(big["id"]))
    nvq.wait_for(big["id"], lambda j: j["state"] == "paused")
    other = nvq.submit("--vram", "20GiB", "--", "sleep", "60")
    nvq.wait_for(other["id"], lambda j: j["state"] == "running")
    nvq.ok("job", "resume", str(big["id"]))
    nvq.wait_for(big["id"], lambda j: j["reason"] == "Resources")
    row = next(
        line.split()
        for line in nvq.ok("job", "ls").out.splitlines()
        if line.startswith(str(big["id"]))
    )
    assert row[1:5] == ["pending", "sleep", getpass.getuser(), "-"]


def test_why_names_a_card_that_could_ever_hold_the_job(nvq: Nvq) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\n[[gpu]]\nname = "Small"\nmemory = "24GiB"\n'
        '[[gpu]]\nname = "Big"\nmemory = "80GiB"\n'
    )
    big = nvq.submit("--vram", "60GiB", "--", "sleep", "60")
    nvq.wait_for(big["id"], lambda j: j["state"] == "running")
    waits = nvq.submit("--vram", "70GiB", "--", "true")
    shown = nvq.wait_for(waits["id"], lambda j: j["reason"] == "Resources")
    # not the 24 GiB card with more free: it can never hold 70 GiB
    assert shown["reason_detail"] == (
        "best candidate: local:1 (80GiB) has 19.5GiB free, needs 70GiB (queue jobs hold 60GiB)"
    )
    nvq.ok("job", "cancel", str(big["id"]))



def test_reasons_count_what_the_same_pass_placed(nvq: Nvq, sshd_nodes: Any) -> None:
    # The node hangs (SIGSTOP): the pass's dispatches reach it but nothing comes back,
    # so no later pass refreshes the reasons; those the pass left must already count
    # the two cards it filled.
    (node,) = sshd_nodes(1)
    use_sshd_node(nvq, node)
    config = nvq.home / "config.toml"
    text = config.read_text().replace('node_grace = "2s"', 'node_grace = "10m"')
    config.write_text(text.replace('ssh_keepalive = "0.5s"', 'ssh_keepalive = "10m"'))
    nvq.nodes_up()
    node.pause()
    try:
        sweep = nvq.submit("--array", "1-3", "--vram", "20GiB", "--", "sleep 600")
        first = sweep["id"] if "id" in sweep else sweep["jobs"][0]
        placed = [nvq.wait_for(first + i, lambda j: j["node"] is not None) for i in (0, 1)]
        assert sorted(j["gpus"][0] for j in placed) == [0, 1]
        left = nvq.show(first + 2)
        assert (left["state"], left["reason"]) == ("pending", "Resources"), left
        assert "needs 20GiB (queue jobs hold 20GiB)" in left["reason_detail"], left
        why = nvq.ok("job", "why", str(first + 2)).out
        assert "fits on" not in why and "could start" not in why, why
    finally:
        node.resume()
    nvq.ok("job", "cancel", "--mine")
