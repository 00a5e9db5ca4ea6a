"""Pure decisions of the operating side: alerts from events, what is owed to which
channel, backoff, backup naming and rotation, manifests, the remote command line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nvq import backup, keeper, manifest, remote
from nvq.config import Config, EmailChannel, NotifyConfig, RemoteConfig, UserConfig
from nvq.domain import alerts
from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobSpec, JobState, NewEvent
from nvq.notify import plan
from nvq.store import MIGRATIONS
from nvq.store import alerts as alert_rows


def job(**kw: object) -> JobRecord:
    base: dict[str, object] = dict(
        id=7,
        name="train",
        state=JobState.FAILED,
        command="x",
        user="alice",
        submitter="alice",
        created_at=0.0,
        attempt=2,
        node="n1",
        reason="exited with code 1",
        stderr_tail="Traceback",
    )
    base.update(kw)
    return record_of(Job(**base))  # type: ignore[arg-type]


def test_failed_job_alert_names_the_attempt_and_carries_stderr() -> None:
    j = job()
    (a,) = alerts.derive([NewEvent("job_failed", 7, "n1", {"attempt": 2})], {7: j})
    assert (a.kind, a.severity, a.key, a.attempt) == (
        "job_failed",
        "error",
        "job_failed:job:7:2",
        2,
    )
    assert a.detail == "Traceback" and a.message == "job 7 (train) failed on n1: exited with code 1"


def test_only_alert_kinds_raise_alerts_and_severity_follows_kind() -> None:
    j = job(state=JobState.PENDING)
    evs = [
        NewEvent("job_dispatched", 7, "n1", {"attempt": 3}),
        NewEvent("job_completed", 7, "n1", {"attempt": 2}),
        alerts.alert_event("job_retried", j, "n1", "node rebooted", retry=1, of=2),
        alerts.alert_event("job_reassigned", j, "n1", "n1 went down"),
        alerts.alert_event("job_preempted", j, "n1", "a higher priority job"),
    ]
    got = alerts.derive(evs, {7: j})
    assert [(a.kind, a.severity) for a in got] == [
        ("job_retried", "warning"),
        ("job_reassigned", "info"),
        ("job_preempted", "info"),
    ]
    assert (
        got[0].message == "job 7 (train) is retried (1 of 2) after attempt 2 on n1: node rebooted"
    )
    with pytest.raises(ValueError):
        alerts.alert_event("job_completed", j, None, "")


def test_node_down_key_names_the_outage() -> None:
    a1 = alerts.derive(
        [NewEvent("node_down", None, "n2", {"error": "timeout", "last_seen": 5.0})], {}
    )
    a2 = alerts.derive([NewEvent("node_down", None, "n2", {"error": "x", "last_seen": 5.0})], {})
    a3 = alerts.derive([NewEvent("node_down", None, "n2", {"error": "x", "last_seen": 9.0})], {})
    assert a1[0].key == a2[0].key != a3[0].key
    assert a1[0].message == "node n2 is down: timeout"


def test_held_key_includes_the_prerequisite() -> None:
    j = job(state=JobState.HELD, attempt=0)
    (a,) = alerts.derive([NewEvent("job_held", 7, None, {"after": 3, "state": "failed"})], {7: j})
    assert a.key == "job_held:job:7:0:3"


def _config(**notify: object) -> Config:
    email = EmailChannel(host="smtp", sender="nvq@x", to=["ops@x"])
    return Config(
        notify=NotifyConfig(email=email, file="", **notify),  # type: ignore[arg-type]
        users={"alice": UserConfig(email="alice@x")},
    )


def test_plan_sends_alerts_to_channels_at_or_above_severity() -> None:
    cfg = _config()
    j = job()
    raised = alerts.derive(
        [
            NewEvent("job_failed", 7, "n1", {"attempt": 2}),
            alerts.alert_event("job_reassigned", j, "n1", ""),
        ],
        {7: j},
    )
    items = plan.plan(raised, [], {7: j}, cfg, 1.0)
    assert sorted(i.key for i in items) == ["email:job_failed:job:7:2", "file:job_failed:job:7:2"]
    assert all(i.alert_key == "job_failed:job:7:2" for i in items)
    email = next(i for i in items if i.channel == "email")
    assert email.payload["to"] == ["ops@x"]
    info = plan.plan(raised, [], {7: j}, _config(severity="info"), 1.0)
    assert len(info) == 4


def test_plan_job_outcome_mail_per_job_flag_and_default() -> None:
    done = job(state=JobState.COMPLETED, email_on_success=True)
    ev = [NewEvent("job_completed", 7, "n1", {"attempt": 2})]
    (item,) = plan.plan([], ev, {7: done}, _config(), 1.0)
    assert item.key == "email:job:7:2:completed" and item.payload["to"] == ["alice@x"]
    assert plan.plan([], ev, {7: job(state=JobState.COMPLETED)}, _config(), 1.0) == []
    failed = job()
    fev = [NewEvent("job_failed", 7, "n1", {"attempt": 2})]
    assert len(plan.plan([], fev, {7: failed}, _config(email_on_failure=True), 1.0)) == 1
    off = job(email_on_failure=False)
    assert plan.plan([], fev, {7: off}, _config(email_on_failure=True), 1.0) == []
    stranger = job(user="bob", submitter="bob", email_on_failure=True)
    (item,) = plan.plan([], fev, {7: stranger}, _config(), 1.0)
    assert item.payload["to"] == ["ops@x"]
    assert plan.plan([], fev, {7: stranger}, Config(), 1.0) == []  # no [notify.email]


def test_backoff_doubles_to_a_cap() -> None:
    assert [plan.backoff(n, 10, 60) for n in (1, 2, 3, 4, 5)] == [10, 20, 40, 60, 60]


def test_outbox_and_alerts_are_written_once_per_key() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(MIGRATIONS[0] + ";" + MIGRATIONS[2].split("ALTER TABLE")[0])
    j = job()
    raised = alerts.derive([NewEvent("job_failed", 7, "n1", {"attempt": 2})], {7: j})
    items = plan.plan(raised, [], {7: j}, _config(), 1.0)
    for _ in range(3):  # a replayed event
        alert_rows.write(conn, raised, items, 1.0)
    assert len(alert_rows.alerts(conn, include_acked=False)) == 1
    due = alert_rows.due(conn, 2.0)
    assert len(due) == 2 and all(r.payload["alert"]["id"] == 1 for r in due)
    alert_rows.mark_failed(conn, due[0].id, "boom", 2.0, 5.0)
    alert_rows.mark_delivered(conn, due[1].id, 2.0)
    assert alert_rows.due(conn, 3.0) == [] and alert_rows.next_due(conn) == 5.0
    health = alert_rows.channel_health(conn)
    assert health[due[0].channel]["failing"] and health[due[1].channel]["delivered"] == 1
    with pytest.raises(LookupError):
        alert_rows.ack(conn, [1, 2], "me", 3.0)
    assert alert_rows.alerts(conn, include_acked=False)[0].acked_at is None
    assert [a.id for a in alert_rows.ack(conn, None, "me", 3.0)] == [1]


def test_backup_targets_and_rotation(tmp_path: Path) -> None:
    t = backup.target(None, tmp_path, 0.0)
    assert t.parent == tmp_path and backup.NAME_RE.fullmatch(t.name)
    t.touch()
    assert backup.target(None, tmp_path, 0.0).name.endswith("-2.db")
    assert backup.target(str(tmp_path / "x.db"), tmp_path, 0.0) == tmp_path / "x.db"
    names = [
        "queue-20260101-000000.db",
        "queue-20260102-000000.db",
        "queue-20260102-000000-2.db",
        "mine.db",
    ]
    assert backup.rotate(names, 2) == ["queue-20260101-000000.db"]
    assert backup.rotate(names, 5) == []
    assert backup.next_due(None, 1, 50.0) == 50.0
    assert backup.next_due(10.0, 1, 50.0) == 3610.0


def test_manifest_parse_and_merge() -> None:
    fields = manifest.parse(
        {
            "job": {
                "command": ["python", "a b.py"],
                "vram": "2GiB",
                "after": "3,4",
                "env": {"A": "1"},
            }
        },
        "m.toml",
    )
    assert fields == {
        "command": "python 'a b.py'",
        "vram_mb": 2048,
        "after": [3, 4],
        "env": {"A": "1"},
    }
    cli = JobSpec(command="", name="cli", env={"B": "2"})
    merged = manifest.merge(cli, fields, {"name", "env"})
    assert merged.name == "cli" and merged.command == "python 'a b.py'"
    assert merged.env == {"A": "1", "B": "2"}
    with pytest.raises(manifest.ManifestError, match=r"^m.toml: job.vrma: unknown key"):
        manifest.parse({"job": {"vrma": 1}}, "m.toml")
    with pytest.raises(manifest.ManifestError, match=r"job: missing"):
        manifest.parse({}, "m.toml")


def test_remote_argv_handling() -> None:
    assert remote.split_local(["--local", "job", "ls"]) == (["job", "ls"], True)
    # after the command words it is the command's (job forward's old name for its port)
    forward = ["job", "forward", "7", "--local", "9000"]
    assert remote.split_local(forward) == (forward, False)
    assert remote.split_local(["job", "submit", "--", "x", "--local"]) == (
        ["job", "submit", "--", "x", "--local"],
        False,
    )
    argv, f = remote.file_argument(["job", "submit", "--script", "a.sh", "--json"])
    assert argv == ["job", "submit", "--script", "-", "--json"] and f == Path("a.sh")
    argv, f = remote.file_argument(["job", "submit", "--manifest=m.toml"])
    assert argv == ["job", "submit", "--manifest=-"] and f == Path("m.toml")
    with pytest.raises(remote.RemoteError):
        remote.file_argument(["job", "submit", "--script", "a", "--manifest", "b"])
    cfg = RemoteConfig(
        host="q",
        port=2222,
        user="me",
        identity="/k",
        known_hosts="/kh",
        nvq="/opt/nvq",
        home="/h q",
    )
    cmd = remote.remote_command(cfg, ["job", "submit", "--", "echo", "a b"], "bot")
    assert cmd == "exec env NVQ_HOME='/h q' NVQ_SUBMITTER=bot /opt/nvq job submit -- echo 'a b'"
    ssh = remote.ssh_argv(cfg, cmd, stdin=False)
    assert ssh[:2] == ["ssh", "-T"] and ssh[-2:] == ["q", cmd]
    assert "-n" in ssh and "UserKnownHostsFile=/kh" in ssh and ssh[6:8] == ["-p", "2222"]


def test_keeper_backoff_and_unit(tmp_path: Path) -> None:
    assert [keeper.backoff(n) for n in (0, 1, 2, 8)] == [0.0, 0.5, 1.0, 60.0]
    text = keeper.unit_text(tmp_path, python="/py")
    assert f"ExecStart=/py -P -m nvq.daemon.main {tmp_path.resolve()}" in text
    assert keeper.state(tmp_path) is None
