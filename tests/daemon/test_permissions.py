"""Every request has one permission rule, checked by the control server before its
handler runs: reads are anyone's, a job's changes are its owner's (or an admin's),
queue-wide operations are an admin's. One case per row of the table."""

from __future__ import annotations

import typing
from pathlib import Path

import anyio
import pytest

from nvq import control as c
from nvq.daemon.core.errors import RequestError
from nvq.daemon.handlers import HANDLERS, PERMISSIONS
from nvq.daemon.serve.control_server import check_permission
from nvq.home import queue_owner
from nvq.model import JobSpec
from tests.fakes import daemon as fake

OWNER_OF_JOB = "tester"  # who tests.fakes.daemon.submit submits as
STRANGER = "mallory"

# (request, who may send it: "anyone" | "private" | "owner" | "admin"), job 1 being
# OWNER_OF_JOB's. "private": its owner and admins, and anyone with members_read = "all".
CASES: list[tuple[c.Request, str]] = [
    (c.Ping(), "anyone"),
    (c.Submit(spec=JobSpec(command="true")), "anyone"),
    (c.SubmitDry(spec=JobSpec(command="true")), "anyone"),
    (c.SubmitFromJob(argv=["--", "true"], id=1, cwd="/"), "owner"),
    (c.Clone(id=1), "owner"),
    (c.NodeStatus(node="local"), "anyone"),
    (c.NodeRestart(node="local"), "admin"),
    (c.ImagePush(image="x:1", image_manifest="0" * 64), "admin"),
    (c.ImageList(), "anyone"),
    (c.ListJobs(), "anyone"),
    (c.ShowJob(id=1), "anyone"),
    (c.ShowJob(id=1, logs=5), "private"),
    (c.ShowJob(id=1, reveal=True), "owner"),
    (c.Wait(ids=[1]), "anyone"),
    (c.Logs(id=1), "private"),
    (c.Status(), "anyone"),
    (c.Nodes(), "anyone"),
    (c.Events(), "anyone"),
    (c.Alerts(), "anyone"),
    (c.Lanes(), "anyone"),
    (c.ProgressLines(), "anyone"),
    (c.JobArtifacts(id=1), "private"),
    (c.Note(id=1), "anyone"),
    (c.Result(id=1), "private"),
    (c.Lane(lane="local:0"), "anyone"),
    (c.BusyMode(node="local"), "anyone"),
    (c.Cancel(ids=[1]), "owner"),
    (c.Release(ids=[1]), "owner"),
    (c.Note(id=1, text="mine now"), "owner"),
    (c.Note(id=1, clear=True), "owner"),
    (c.Result(id=1, set_json="{}"), "owner"),
    (c.Requeue(ids=[1]), "owner"),
    (c.Edit(id=1), "owner"),
    (c.Priority(ids=[1], change="5"), "owner"),
    (c.Pause(ids=[1]), "owner"),
    (c.Resume(ids=[1]), "owner"),
    (c.Lane(lane="local:0", action="move", ids=[1]), "owner"),
    (c.Lane(lane="local:0", action="pause"), "admin"),
    (c.NodeFlag(node="local", flag="drained", value=True), "admin"),
    (c.NodeFlag(node="local", flag="ignored", value=True), "admin"),
    (c.Bootstrap(node="local"), "admin"),
    (c.BusyMode(node="local", mode="on"), "admin"),
    (c.BusyAssign(forbid=True), "admin"),
    (c.Ack(), "admin"),
    (c.Backup(), "admin"),
    (c.StopDaemon(), "admin"),
    (c.Reload(), "admin"),
    (c.Purge(), "anyone"),  # a member purges their own (test_member_purge)
    (c.Cancel(ids=[], select=c.JobSelection(mine=True)), "anyone"),  # chooses what it may
    (c.Subscribe(), "anyone"),
    (c.Why(id=1), "anyone"),
    (c.GpuHistory(), "anyone"),
    (c.ClusterStatus(), "anyone"),
    (c.EditJob(id=1, changes={"name": "x"}), "owner"),
    (c.ClusterScale(name="hpc", pilots=1), "admin"),
    (c.ClusterDrain(name="hpc"), "admin"),
    (c.ClusterRetry(name="hpc"), "admin"),
    (c.Check(), "admin"),
    (c.Gc(), "admin"),
    (c.Pull(id=1), "private"),
    (c.JobWindow(), "anyone"),
    (c.Move(id=1, to="local"), "owner"),
    (c.NodeStop(node="local"), "admin"),
    (c.Shell(spec=JobSpec(command="bash")), "anyone"),
    (c.Exec(id=1), "owner"),
    (c.Forward(id=1), "owner"),
    (c.SubmitSettings(), "anyone"),  # a member's submit reads [submit] through the daemon
    (c.ReceiveSnapshot(), "anyone"),  # ... and stores its snapshot through it
    (c.Report(since=0.0, until=1.0), "anyone"),  # who used what, as sreport shows
    (c.ReserveAdd(name="r", cards=["local:0"], start=0.0, end=1.0), "admin"),
    (c.ReserveList(), "anyone"),
    (c.ReserveRemove(name="r"), "admin"),
]


def test_every_request_has_a_rule_and_a_case() -> None:
    every = set(typing.get_args(c.Request))
    assert every == set(PERMISSIONS)
    streams = {c.Logs, c.Subscribe, c.Shell, c.Exec, c.Forward, c.ReceiveSnapshot}
    assert set(HANDLERS) | streams == every
    assert {type(req) for req, _ in CASES} == every


def _allowed(tmp_path: Path, request: c.Request, user: str, config: str = "") -> bool:
    async def main() -> bool:
        async with fake.running_daemon(tmp_path / "home", {}, config) as state:
            await fake.submit(state)
            try:
                await check_permission(fake._contexts[id(state)], request, user)
            except RequestError:
                return False
            return True

    return anyio.run(main)


@pytest.mark.parametrize(("request_", "who"), CASES, ids=lambda v: v.__class__.__name__)
def test_the_rule_of_each_request(tmp_path: Path, request_: c.Request, who: str) -> None:
    assert _allowed(tmp_path, request_, STRANGER) is (who == "anyone")
    assert _allowed(tmp_path, request_, OWNER_OF_JOB) is (who != "admin")
    # The queue's owner, the OS user the daemon runs as, is always an admin.
    assert _allowed(tmp_path, request_, queue_owner()) is True


def test_members_read_all_opens_what_a_job_holds_and_nothing_else(tmp_path: Path) -> None:
    config = '[queue]\nmembers_read = "all"\n'
    for request, who in CASES:
        if who in ("private", "owner"):
            assert _allowed(tmp_path, request, STRANGER, config) is (who == "private"), request


def test_configured_admins_may_do_everything(tmp_path: Path) -> None:
    config = f'[queue]\nadmins = ["{STRANGER}"]\n'
    for request, _who in CASES:
        assert _allowed(tmp_path, request, STRANGER, config), request


def test_a_refusal_says_who_may(tmp_path: Path) -> None:
    async def main() -> list[str]:
        async with fake.running_daemon(tmp_path / "home", {}) as state:
            await fake.submit(state)
            ctx = fake._contexts[id(state)]
            out = []
            for request in (c.Note(id=1, text="x"), c.StopDaemon()):
                with pytest.raises(RequestError) as info:
                    await check_permission(ctx, request, STRANGER)
                out.append(str(info.value))
            return out

    note, stop = anyio.run(main)
    assert note == (
        f"job 1 belongs to {OWNER_OF_JOB}: only its owner or a queue admin ([queue] admins) "
        "may change the note of it"
    )
    assert stop == (
        f"only a queue admin may stop the daemon ([queue] admins, or the queue's owner); "
        f"{STRANGER} is not one"
    )


def test_a_daemon_that_cannot_switch_user_refuses_other_users_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr("nvq.daemon.serve.control_server.os.geteuid", lambda: 1000)
    submit = c.Submit(spec=JobSpec(command="true"))
    assert _allowed(tmp_path, submit, queue_owner()) is True
    assert _allowed(tmp_path, submit, STRANGER) is False
