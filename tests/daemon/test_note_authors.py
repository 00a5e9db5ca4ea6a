"""Who wrote what about a job, through the real CLI with a second OS user: a note
event names its writer (a member, or the admin who changed the member's note); and
`job show` of a job back in line names the node its environment met, never `None`."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from tests.cluster import Nvq, use_sshd_node
from tests.members import as_user, reachable_nvq, second_user


def _note_writers(nvq: Nvq, job_id: int) -> list[str]:
    return [e["data"].get("by") for e in nvq.show(job_id)["events"] if e["kind"] == "job_note"]


def test_a_note_event_names_who_wrote_it() -> None:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        nvq.ok("queue", "status")  # the owner starts the daemon
        r = as_user(user, nvq, "job", "submit", "--gpus", "0", "--no-snapshot", "--begin", "1h",
                    "--json", "--", "true")
        assert r.code == 0, r.err
        job_id = r.json()["id"]
        assert as_user(user, nvq, "job", "note", str(job_id), "mine").code == 0
        nvq.ok("job", "note", str(job_id), "--append", "seen by the admin")
        assert _note_writers(nvq, job_id) == [user, getpass.getuser()]
        shown = nvq.ok("job", "show", str(job_id)).out
        assert f"by={user}" in shown or f"by {user}" in shown, shown
        nvq.ok("job", "cancel", str(job_id))


def test_a_job_back_in_line_says_which_node_left_its_environment_out(
    nvq: Nvq, tmp_path: Path, sshd_nodes: Any
) -> None:
    (node,) = sshd_nodes(1)
    use_sshd_node(nvq, node)  # a node that lacks the submitting shell's paths
    up, go = tmp_path / "up", tmp_path / "go"
    nvq.env["VIRTUAL_ENV"] = "/nonexistent/proj/.venv"  # not carried: no such path there
    victim = nvq.submit("--gpus", "2", "--preemptible", "--", f"touch {up}; sleep 600")
    nvq.wait_for(victim["id"], lambda j: j["state"] == "running" and up.exists())
    del nvq.env["VIRTUAL_ENV"]
    urgent = nvq.submit("--gpus", "2", "--priority", "5", "--",
                        f"while [ ! -f {go} ]; do sleep 0.1; done")
    nvq.wait_for(urgent["id"], lambda j: j["state"] == "running")
    waiting = nvq.wait_for(victim["id"], lambda j: j["state"] == "pending")
    assert waiting["node"] is None and waiting["env_dropped"], waiting
    text = nvq.ok("job", "show", str(victim["id"])).out
    assert "not carried to None" not in text, text
    assert "not carried to local: VIRTUAL_ENV=/nonexistent/proj/.venv" in text, text
    go.touch()
    nvq.wait(urgent["id"])
    nvq.ok("job", "cancel", str(victim["id"]))
