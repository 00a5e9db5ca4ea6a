"""What a reply shows of other users' jobs (nvq.daemon.handlers.visibility), decided in
process: the end-to-end rows, as a real second OS user, are in test_member_rights."""

from __future__ import annotations

from nvq.daemon.handlers.visibility import Viewer, event_job_ids, shown_to
from nvq.model import Alert, Event, Job, JobState, WrittenFile

ADMINS = frozenset({"root"})


def _job(user: str) -> Job:
    return Job(
        id=1, name="train", state=JobState.COMPLETED, command="python train.py", user=user,
        submitter=user, created_at=1.0, env={"WANDB_API_KEY": "k", "LR": "0.1"},
        env_captured={"HOME": "/home/" + user}, result={"acc": 0.9}, stderr_tail="oops",
        progress="epoch 3", written=[WrittenFile("model.pt", 1, 1.0)],
    )


def test_a_member_sees_metadata_only_of_another_users_job() -> None:
    job = _job("alice")
    shown = shown_to({"jobs": [job], "more": False}, Viewer("bob", ADMINS))["jobs"][0]
    assert (shown.id, shown.state, shown.name, shown.command) == (1, job.state, "train", job.command)
    assert shown.env == {"WANDB_API_KEY": "***", "LR": "***"}
    assert shown.env_captured == {"HOME": "***"}
    assert (shown.result, shown.stderr_tail, shown.progress, shown.written) == (None, None, None, [])


def test_owner_and_admins_see_it_all_and_members_read_all_hides_secrets_only() -> None:
    job = _job("alice")
    assert shown_to([job], Viewer("alice", ADMINS)) [0] is job
    assert shown_to([job], Viewer("root", ADMINS))[0] is job
    opened = shown_to([job], Viewer("bob", ADMINS, "all"))[0]
    assert opened.env == {"WANDB_API_KEY": "***", "LR": "0.1"}
    assert opened.result == {"acc": 0.9}


def test_events_and_alerts_of_another_users_job_lose_their_private_data() -> None:
    changed = Event(id=5, time=1.0, kind="job_changed", job_id=1, node=None,
                    data={"before": {"env": {"K": "old"}}, "after": {"env": {"K": "new"}}})
    plain = Event(id=6, time=1.0, kind="job_started", job_id=1, node="n", data={"pid": 3})
    alert = Alert(id=1, time=1.0, kind="job_failed", severity="error", job_id=1, node="n",
                  attempt=1, message="job 1 failed", detail="Traceback: secret", acked_at=None,
                  acked_by=None)
    reply = [changed, plain, alert]
    assert event_job_ids(reply) == {1}
    bob = shown_to(reply, Viewer("bob", ADMINS), {1: "alice"})
    assert bob[0].data == {"before": {"env": "***"}, "after": {"env": "***"}}
    assert bob[1] is plain
    assert bob[2].detail is None and bob[2].message == "job 1 failed"
    assert shown_to(reply, Viewer("alice", ADMINS), {1: "alice"}) is reply
