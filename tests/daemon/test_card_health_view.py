"""Card health end to end, through the real CLI on a real sshd node with the fake
backend's fault injection: a card its runner reports unhealthy takes no new job and
stays out (after the fault stops being reported, and across a daemon restart) until
an admin returns it with `queue resume NODE:IDX`; a job that failed on a card whose
fault began while it ran goes back to the queue without spending its `--retries`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory

CARD = '[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n{}\n'


def _cards(*extra: str) -> str:
    return 'cuda = "13.0"\n' + "".join(CARD.format(e) for e in extra)


def _until(pred: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return got


def test_an_unhealthy_card_stays_out_until_an_admin_returns_it(
    tmp_path: Path, sshd_nodes: SshdNodesFactory
) -> None:
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    try:
        (gpu_file,) = write_mesh_config(nvq, [node], gpus=_cards("xid = 79", ""))

        def health() -> list[dict[str, Any]]:
            return nvq.json("node", "health")["cards"]  # type: ignore[no-any-return]

        def util(index: int) -> Any:
            (n0,) = nvq.json("queue", "nodes")["nodes"]
            return n0["gpus"][index]["util_percent"] if n0["gpus"] else None

        # the first sample after the Hello carries the runner's evidence
        sick, well = _until(lambda: (h := health()) and h[0]["faults"] and h, "evidence")
        assert (sick["card"], sick["health"], sick["faults"]) == ("n0:0", "unhealthy", ["xid 79"])
        assert not sick["schedulable"] and sick["since"] is not None
        assert (well["health"], well["schedulable"]) == ("ok", True)
        assert "n0:0 unhealthy: xid 79" in nvq.ok("queue", "nodes").out
        text = nvq.ok("node", "health").out
        assert "n0:0" in text and "unhealthy" in text and "queue resume NODE:IDX" in text
        (alert,) = [a for a in nvq.run("queue", "alerts", "--json").json()["alerts"]
                    if a["kind"] == "gpu_unhealthy"]
        assert alert["message"] == "card n0:0 is unhealthy (xid 79); it takes no new job"

        # A job on the good card; its card throws a fatal Xid while it runs, then it
        # fails: the card is to blame, so no retry is spent (it has none to spend).
        gate, once = tmp_path / "gate", tmp_path / "once"
        job = nvq.submit("--vram", "20GiB", "--retries", "0", "--",
                         f"while [ ! -e {gate} ]; do sleep 0.05; done; "
                         f"[ -e {once} ] && exit 0; touch {once}; exit 1")
        nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
        assert nvq.show(job["id"])["gpus"] == [1]
        # card 0's fault is no longer reported (util marks the sample that says so)
        new = gpu_file.with_suffix(".new")  # at once: a half-written file loses a card
        new.write_text(_cards("util = 55", "xid = 79"))
        new.replace(gpu_file)
        _until(lambda: util(0) == 55 and health()[1]["health"] == "unhealthy", "card 1 sick")
        assert health()[0]["health"] == "unhealthy"  # sticky: still out
        gate.touch()
        back = nvq.wait_for(job["id"], lambda j: j["state"] == "pending" and j["attempt"] == 1)
        assert back["retried"] == 0
        (failed,) = [e for e in back["events"] if e["kind"] == "job_card_failed"]
        assert failed["data"]["reason"] == "card failed (n0:1 xid 79)"
        assert back["attempts"][0]["outcome"] == "card failed (requeued)"

        # A daemon restart keeps both cards out (queue.db holds them).
        nvq.ok("daemon", "stop")
        after = _until(lambda: (h := health()) and h, "node back after restart")
        assert [c["health"] for c in after] == ["unhealthy", "unhealthy"]
        assert nvq.show(job["id"])["state"] == "pending"

        # Returning a card is an admin's act; bad cards are refused in one line.
        bad = nvq.run("queue", "resume", "n0:7")
        assert bad.code != 0 and bad.err.strip().splitlines() == [
            "nvq: n0 has no card 7 (its cards: n0:0, n0:1)"], bad.err
        assert nvq.ok("queue", "resume", "n0:0").out.strip() == "card n0:0 accepting jobs"
        code, (done,) = nvq.wait(job["id"], timeout=90)
        assert code == 0 and done["state"] == "completed" and done["gpus"] == [0], done
        assert done["retried"] == 0
        open_kinds = {(a["kind"], a["message"]) for a in nvq.run("queue", "alerts", "--json").json()["alerts"]}
        assert ("gpu_unhealthy", alert["message"]) not in open_kinds  # resolved by the resume

        # Drained by hand, and returned.
        assert nvq.ok("queue", "drain", "n0:0").out.strip() == "card n0:0 draining"
        first = health()[0]
        assert (first["health"], first["by"], first["schedulable"]) == ("drained", "root", False)
        nvq.ok("queue", "resume", "n0:0")
        assert health()[0]["health"] == "ok"
        refused = nvq.run("queue", "resume", "n0:0")
        assert refused.code != 0 and "card n0:0 is in service" in refused.err
    finally:
        nvq.shutdown()
