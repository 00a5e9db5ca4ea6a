"""Alerts and notifications through the real CLI: a real daemon and runner, real job
processes, and a real SMTP server (aiosmtpd) on loopback."""

from __future__ import annotations

import email
import json
import time
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from tests.cluster import Nvq
from tests.harness.sshd import free_port


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
        return "250 OK"

    def subjects(self) -> list[str]:
        return [str(m["Subject"]) for _, m in self.messages]


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
    return AuthResult(success=data.login == b"nvq" and data.password == b"s3cret")


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=free_port(),
        auth_require_tls=False,
        authenticator=_authenticate,
    )
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


def eventually(pred: Callable[[], Any], timeout: float = 20, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def test_failures_become_alerts_once_and_ack_clears_them(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_config("[notify.file]\n")
    nvq.nodes_up()  # --gpus 9 is refused at submit once the node has said hello
    failed = nvq.submit(
        "--gpus", "0", "--", "sh", "-c", "echo out; echo 'Traceback: boom' >&2; exit 3"
    )
    held = nvq.submit("--gpus", "0", "--after", str(failed["id"]), "--", "true")
    quiet = nvq.submit("--gpus", "0", "--", "sh", "-c", "echo only-stdout; exit 1")
    bad_dir = nvq.submit("--gpus", "0", "--workdir", str(tmp_path / "nope"), "--", "true")
    huge = nvq.run("job", "submit", "--gpus", "9", "--", "true")
    assert huge.code == 2 and "needs 9 GPUs" in huge.err, "refused at submit, not alerted"
    ok = nvq.submit("--gpus", "0", "--", "true")
    nvq.wait(failed["id"], quiet["id"], bad_dir["id"], ok["id"])
    nvq.wait_for(held["id"], lambda j: j["state"] == "held")

    r = nvq.run("queue", "alerts", "--json")
    assert r.code == 1, "open alerts must make `queue alerts` fail"
    alerts = {a["job_id"]: a for a in r.json()["alerts"]}
    assert alerts[failed["id"]]["kind"] == "job_failed"
    assert alerts[failed["id"]]["severity"] == "error"
    assert alerts[failed["id"]]["detail"] == "Traceback: boom"
    assert "exited with code 3" in alerts[failed["id"]]["message"]
    assert alerts[quiet["id"]]["detail"] == "only-stdout", "stdout is the fallback"
    assert alerts[held["id"]]["kind"] == "job_held"
    assert alerts[bad_dir["id"]]["kind"] == "launch_failed"
    assert ok["id"] not in alerts
    assert len(r.json()["alerts"]) == 4

    detail = nvq.run("queue", "alerts", "--detail")
    assert detail.code == 1 and "Traceback: boom" in detail.out
    status = nvq.ok("queue", "status").out
    assert status.startswith("4 open alerts"), status

    # Never twice: a daemon restart (the runner replays unacknowledged events, the
    # placement pass sees the held job again) raises nothing new.
    nvq.ok("daemon", "stop")
    nvq.ok("queue", "status")
    time.sleep(1.0)
    assert len(nvq.run("queue", "alerts", "--json").json()["alerts"]) == 4
    lines = (nvq.home / "alerts.log").read_text().splitlines()
    assert sorted(json.loads(ln)["alert"]["job_id"] for ln in lines) == sorted(alerts)

    first = alerts[failed["id"]]["id"]
    acked = nvq.json("queue", "ack", str(first))["alerts"]
    assert [a["id"] for a in acked] == [first] and acked[0]["acked_at"] is not None
    bad = nvq.run("queue", "ack", "999")
    assert bad.code != 0 and bad.err.strip() == "nvq: no alert with id 999"
    assert len(nvq.run("queue", "alerts", "--json").json()["alerts"]) == 3
    assert len(nvq.run("queue", "alerts", "--all", "--json").json()["alerts"]) == 4
    assert nvq.run("queue", "ack").code == 2
    nvq.ok("queue", "ack", "--all")
    r = nvq.run("queue", "alerts", "--json")
    assert r.code == 0 and r.json() == {"alerts": []}
    assert not nvq.ok("queue", "status").out.startswith("4 open")
    kinds = [e["kind"] for e in nvq.events()]
    assert kinds.count("alerts_acked") == 2


def test_email_and_command_channels_deliver_exactly_once(
    nvq: Nvq, tmp_path: Path, smtp: tuple[Inbox, int]
) -> None:
    inbox, port = smtp
    password = tmp_path / "smtp-password"
    password.write_text("s3cret\n")
    marker = tmp_path / "command-may-succeed"
    received = tmp_path / "received.jsonl"
    hook = tmp_path / "hook.sh"
    hook.write_text(
        f"#!/bin/sh\n[ -e {marker} ] || {{ echo 'hook: not yet' >&2; exit 7; }}\n"
        f"cat >> {received}; echo >> {received}\n"
    )
    hook.chmod(0o755)
    nvq.write_config(
        f"""
[notify]
retry_initial = "0.3s"
retry_max = "1s"
email_on_failure = true

[notify.email]
host = "127.0.0.1"
port = {port}
security = "none"
user = "nvq"
password_file = "{password}"
from = "nvq@queue.lab"
to = ["ops@lab"]

[notify.command]
run = ["{hook}"]

[users.root]
email = "root@lab"
"""
    )
    ok = nvq.submit("--gpus", "0", "--name", "good", "--email-on-success", "--", "true")
    bad = nvq.submit("--gpus", "0", "--name", "bad", "--", "sh", "-c", "echo kaput >&2; exit 2")
    silent = nvq.submit("--gpus", "0", "--no-email-on-failure", "--", "false")
    nvq.wait(ok["id"], bad["id"], silent["id"])

    # One job-outcome mail for `good` and one for `bad` (to the submitter), one alert
    # mail per failed job (to the [notify.email] list).
    eventually(lambda: len(inbox.messages) >= 4, what="four e-mails")
    time.sleep(0.5)
    by_subject = {str(m["Subject"]): (to, m) for to, m in inbox.messages}
    assert len(inbox.messages) == 4, inbox.subjects()
    to, msg = by_subject[f"[nvq] job {ok['id']} (good) completed"]
    assert to == ["root@lab"] and msg["From"] == "nvq@queue.lab"
    to, msg = by_subject[f"[nvq] job {bad['id']} (bad) failed"]
    assert to == ["root@lab"] and "kaput" in msg.get_payload()
    alert_mails = [(to, m) for to, m in inbox.messages if "error:" in str(m["Subject"])]
    assert sorted(to[0] for to, _ in alert_mails) == ["ops@lab", "ops@lab"]
    assert any("kaput" in m.get_payload() for _, m in alert_mails)

    # The command channel fails until the marker exists: retried with backoff, and
    # the failure is visible in `queue status`.
    status = eventually(
        lambda: (
            (d := nvq.json("queue", "status"))["notify"].get("command", {}).get("attempts", 0) >= 2
            and d
        ),
        what="two failed command deliveries",
    )
    health = status["notify"]["command"]
    assert health["failing"] and health["waiting"] == 2
    assert health["last_error"].endswith("exited 7: hook: not yet")
    assert "notify command FAILING" in nvq.ok("queue", "status").out
    assert status["notify"]["email"]["failing"] is False
    marker.touch()
    eventually(
        lambda: not nvq.json("queue", "status")["notify"]["command"]["failing"],
        what="the command channel recovering",
    )
    docs = [json.loads(ln) for ln in received.read_text().splitlines() if ln.strip()]
    assert sorted(d["alert"]["job_id"] for d in docs) == sorted([bad["id"], silent["id"]])
    assert all(d["type"] == "alert" and d["alert"]["id"] for d in docs)

    # Across a restart nothing is sent again.
    nvq.ok("daemon", "stop")
    nvq.ok("queue", "status")
    time.sleep(1.0)
    assert len(inbox.messages) == 4
    assert len(received.read_text().splitlines()) == len(docs)


def test_a_failing_smtp_server_is_retried_and_shown(nvq: Nvq, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    nvq.write_config(
        f"""
[notify]
retry_initial = "0.2s"
retry_max = "0.5s"

[notify.email]
host = "127.0.0.1"
port = {port}
security = "none"
user = "nvq"
password_env = "NVQ_TEST_SMTP_PASSWORD"
from = "nvq@queue.lab"
to = "ops@lab"
"""
    )
    nvq.env.pop("NVQ_TEST_SMTP_PASSWORD", None)
    job = nvq.submit("--gpus", "0", "--", "false")
    nvq.wait(job["id"])
    health = eventually(
        lambda: (
            (h := nvq.json("queue", "status")["notify"].get("email")) and h["attempts"] >= 2 and h
        ),
        what="failed e-mail deliveries",
    )
    assert health["failing"]
    assert health["last_error"] == "password_env NVQ_TEST_SMTP_PASSWORD is not set for the daemon"
    assert "notify email FAILING" in nvq.ok("queue", "status").out
    assert inbox.messages == []
    # With the password (a daemon restart picks up its environment): delivered once.
    nvq.ok("daemon", "stop")
    nvq.env["NVQ_TEST_SMTP_PASSWORD"] = "s3cret"
    nvq.ok("queue", "status")
    eventually(lambda: len(inbox.messages) == 1, what="the e-mail after the fix")
    assert nvq.json("queue", "status")["notify"]["email"]["failing"] is False
