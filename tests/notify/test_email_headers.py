"""A job's name goes into an e-mail's Subject: a newline or an escape in it cannot
break the header (the channel would fail on that message forever)."""

from __future__ import annotations

import time

from nvq.notify.channels import header_text, subject
from tests.cluster import Nvq
from tests.daemon.test_alerts_and_notify import Inbox, eventually, smtp  # noqa: F401 - the fixture


def test_a_header_is_one_printable_line() -> None:
    payload = {"type": "job", "job": {"id": 3, "name": "a\nBcc: x@y\r\x1b[31m", "state": "failed"}}
    assert subject(payload) == "[nvq] job 3 (a Bcc: x@y [31m) failed"
    assert header_text("plain  text") == "plain text"


def test_a_newline_never_reaches_a_mail_header(nvq: Nvq, smtp: tuple[Inbox, int]) -> None:  # noqa: F811
    inbox, port = smtp
    nvq.write_config(
        f"""
[notify.email]
host = "127.0.0.1"
port = {port}
security = "none"
from = "nvq@queue.lab"
to = ["ops@lab"]

[users.root]
email = "root@lab"
"""
    )
    # A name with a newline is refused at submit; one from the command is printable.
    refused = nvq.run("job", "submit", "--gpus", "0", "--name", "two\nlines", "--", "true")
    assert refused.code == 2 and "control character" in refused.err
    job = nvq.submit("--gpus", "0", "--name", "two lines", "--email-on-success", "--", "true")
    nvq.wait(job["id"])
    eventually(lambda: inbox.messages, what="the job's e-mail")
    time.sleep(0.3)
    assert inbox.subjects() == [f"[nvq] job {job['id']} (two lines) completed"]
    status = nvq.json("queue", "status")
    assert status["notify"]["email"]["failing"] is False
