"""The exit code table (README "Agents"): 2 for bad input, the same mistake the same
code in every command; `job wait` exits 1 when any job ended badly, even while others
still run, and 2 only when none did and its timeout ran out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cluster import Nvq, make_nvq

# Two nodes whose names share a prefix; nothing listens on their port, so they never
# report, and every command below is refused on the name alone.
TWO_NODES = """
[[nodes]]
name = "bx1"
host = "127.0.0.1"
port = 9

[[nodes]]
name = "bx2"
host = "127.0.0.1"
port = 9
"""


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[Nvq]:
    q = make_nvq(tmp_path)
    q.write_config(TWO_NODES)
    try:
        yield q
    finally:
        q.shutdown()


def code_of(nvq: Nvq, *args: str) -> tuple[int, int]:
    """(exit code bare, exit code with --json), checking the JSON error document."""
    bare = nvq.run(*args)
    i = args.index("--") if "--" in args else len(args)
    as_json = nvq.run(*args[:i], "--json", *args[i:])
    assert json.loads(as_json.out)["exit_code"] == as_json.code, as_json.out
    return bare.code, as_json.code


def test_the_same_mistake_is_exit_2_in_every_command(queue: Nvq) -> None:
    mistakes = [
        ("job", "show", "999"),
        ("job", "why", "999"),
        ("job", "wait", "999"),
        ("job", "cancel", "999"),
        ("job", "result", "999"),
        ("job", "note", "999", "--append", "x"),
        ("job", "ls", "--array", "999"),
        ("job", "submit", "--node", "nowhere", "--", "true"),
        ("job", "submit", "--node", "bx", "--", "true"),  # two nodes: ambiguous
        ("job", "submit", "--lane", "nowhere:0", "--", "true"),
        ("job", "submit", "--lane", "bx:0", "--", "true"),
        ("queue", "drain", "nowhere"),
        ("queue", "drain", "bx"),
        ("queue", "lane", "bx:0"),
        ("queue", "lane", "local:0", "frobnicate"),  # an action the command does not know
        ("queue", "lane", "local:0", "swap", "1"),
        ("job", "submit", "--vram", "20GB", "--", "true"),
        ("job", "ls", "--state", "sleeping"),
    ]
    codes = {" ".join(m): code_of(queue, *m) for m in mistakes}
    assert codes == {k: (2, 2) for k in codes}
    # nothing was stored; `--no-tick` (the reference skill's) is taken and changes nothing
    assert queue.json("job", "ls", "--no-tick") == {"jobs": [], "more": False}
    assert queue.json("queue", "status", "--no-tick")["counts"] is not None


def test_a_refusal_on_its_merits_is_exit_1(queue: Nvq) -> None:
    job = queue.submit("--gpus", "0", "--", "true")["id"]
    queue.wait(job)
    assert code_of(queue, "job", "release", str(job)) == (1, 1)  # it is not held
    held = queue.submit("--gpus", "0", "--after", str(job), "--node", "bx1", "--", "true")
    assert code_of(queue, "job", "edit", str(held["id"]), "--node", "bx") == (2, 2)
    queue.ok("job", "cancel", str(held["id"]))


def test_wait_never_hides_a_failure_behind_its_timeout(queue: Nvq) -> None:
    bad = queue.submit("--gpus", "0", "--", "false")["id"]
    slow = queue.submit("--gpus", "0", "--", "sleep", "600")["id"]
    queue.wait(bad)
    queue.wait_for(slow, lambda j: j["state"] == "running")
    r = queue.run("job", "wait", str(bad), str(slow), "--timeout", "1", "--json")
    assert r.code == 1
    doc = r.json()
    assert doc["still_going"] == [slow]
    assert [j["state"] for j in doc["jobs"]] == ["failed", "running"]
    # none ended badly: the timeout is exit 2, and still_going says what runs
    r = queue.run("job", "wait", str(slow), "--timeout", "1", "--json")
    assert (r.code, r.json()["still_going"]) == (2, [slow])
    queue.ok("job", "cancel", str(slow))


def test_wait_answers_at_the_first_bad_end(queue: Nvq, tmp_path: Path) -> None:
    """No --timeout: the answer comes when a job ends badly (already, or while the
    wait runs), not when every job has ended."""
    bad = queue.submit("--gpus", "0", "--", "false")["id"]
    slow = queue.submit("--gpus", "0", "--", "sleep", "600")["id"]
    queue.wait(bad)
    r = queue.run("job", "wait", str(bad), str(slow), "--json")
    assert (r.code, r.json()["still_going"]) == (1, [slow]), r.out
    r = queue.run("job", "wait", str(slow), str(bad))
    assert r.code == 1 and r.out.endswith(f"(still going: {slow})\n"), r.out

    gate = tmp_path / "go"
    gated = queue.submit("--gpus", "0", "--", f"until [ -e {gate} ]; do sleep 0.1; done; false")
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(queue.run, "job", "wait", str(slow), str(gated["id"]), "--json")
        gate.touch()
        r = waiting.result()
    assert (r.code, r.json()["still_going"]) == (1, [slow]), r.out

    # an array: member 0 fails, the others run on
    member = "if [ {} = 0 ]; then false; else sleep 600; fi"
    first = queue.submit("--gpus", "0", "--array", "0-2", "--", member)["id"]
    r = queue.run("job", "wait", "--array", str(first), "--json")
    assert (r.code, r.json()["still_going"]) == (1, [first + 1, first + 2]), r.out
    queue.ok("job", "cancel", str(slow), str(first + 1), str(first + 2))


def test_a_pin_to_no_configured_node_is_refused_before_any_node_reports(
    tmp_path: Path,
) -> None:
    """No node here ever reports its cards, so no placement check can run; a name that
    no configured node bears is refused from the config alone, at submit and at edit."""
    q = make_nvq(tmp_path)
    q.write_config("[queue]\nlocal_node = false\n" + TWO_NODES)
    try:
        r = q.run("job", "submit", "--node", "nowhere", "--", "true")
        assert (r.code, r.err.strip()) == (
            2, "nvq: --node 'nowhere' matches no node (nodes: bx1, bx2)"
        )
        # a lane job waits to hear from its lane's node only, and names it
        assert q.submit("--lane", "bx1:0", "--", "true")["unreported"] == ["bx1"]
        held = q.submit("--node", "bx1", "--", "true")["id"]  # waits for bx1: never
        assert code_of(q, "job", "edit", str(held), "--node", "nowhere") == (2, 2)
        assert q.show(held)["node_request"] == "bx1"
    finally:
        q.shutdown()
