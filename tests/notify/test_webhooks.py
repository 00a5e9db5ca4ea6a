"""Webhooks against a real HTTP server on loopback: Slack, ntfy and Matrix bodies,
the events and users filters, headers, a failed delivery retried with backoff, and
each item delivered once (across a daemon restart too)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nvq.config import ConfigError, load_config
from tests.cluster import Nvq


class Hooks:
    """What the endpoints received: (method, path, headers, body) of each request
    answered 200; the first request to /slack is answered 500."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str, dict[str, str], bytes]] = []
        self.refused = 0
        self.lock = threading.Lock()

    def to(self, prefix: str) -> list[tuple[str, str, dict[str, str], bytes]]:
        with self.lock:
            return [g for g in self.got if g[1].startswith(prefix)]


@pytest.fixture
def hooks() -> Iterator[tuple[Hooks, int]]:
    seen = Hooks()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with seen.lock:
                if self.path.startswith("/slack") and seen.refused == 0:
                    seen.refused += 1
                    code = 500
                else:
                    seen.got.append((self.command, self.path, dict(self.headers), data))
                    code = 200
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_POST = do_PUT = _any

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def eventually(pred: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)
    return value


def test_webhooks_deliver_each_event_once_in_each_format(
    nvq: Nvq, hooks: tuple[Hooks, int]
) -> None:
    seen, port = hooks
    base = f"http://127.0.0.1:{port}"
    nvq.write_config(
        f"""
[notify]
retry_initial = "0.2s"
retry_max = "0.5s"

[[notify.webhook]]
url = "{base}/slack"
format = "slack"
events = ["fail"]
headers = {{ Authorization = "Bearer s3cret" }}

[[notify.webhook]]
url = "{base}/ntfy/lab-runs"
format = "ntfy"
events = ["start", "end"]
users = ["alice"]

[[notify.webhook]]
url = "{base}/_matrix/client/v3/rooms/!r:lab/send/m.room.message"
format = "matrix"
events = ["end"]
"""
    )
    bad = nvq.submit("--gpus", "0", "--name", "bad", "--", "sh", "-c", "echo kaput >&2; exit 2")
    nvq.env["NVQ_SUBMITTER"] = "alice"
    good = nvq.submit("--gpus", "0", "--name", "good", "--", "true")
    nvq.wait(bad["id"], good["id"])

    # Slack: refused once (HTTP 500), retried, delivered once, with its header
    (slack,) = eventually(lambda: seen.to("/slack"), "the slack delivery")
    method, _, headers, data = slack
    assert method == "POST" and headers["Authorization"] == "Bearer s3cret"
    text = json.loads(data)["text"]
    assert f"[nvq] job {bad['id']} (bad) failed" in text and "kaput" in text
    assert seen.refused == 1
    # ntfy: alice's job only, its start and its end, as plain text with a title
    ntfy = eventually(lambda: len(seen.to("/ntfy")) >= 2 and seen.to("/ntfy"), "ntfy x2")
    titles = sorted(h["Title"] for _, _, h, _ in ntfy)
    assert titles == [f"[nvq] job {good['id']} (good) completed",
                      f"[nvq] job {good['id']} (good) running"]
    assert all(h["Content-Type"].startswith("text/plain") for _, _, h, _ in ntfy)
    # Matrix: every end, PUT under a transaction id of its own
    matrix = eventually(lambda: len(seen.to("/_matrix")) >= 2 and seen.to("/_matrix"), "matrix")
    assert {m for m, _, _, _ in matrix} == {"PUT"}
    assert len({p for _, p, _, _ in matrix}) == 2
    assert all(json.loads(d)["msgtype"] == "m.text" for _, _, _, d in matrix)
    status = nvq.json("queue", "status")["notify"]
    assert status["webhook"]["failing"] is False and status["webhook"]["waiting"] == 0

    # Across a restart nothing is sent again: the next failure is the next delivery.
    nvq.ok("daemon", "stop")
    nvq.env["NVQ_SUBMITTER"] = "bob"
    again = nvq.submit("--gpus", "0", "--name", "again", "--", "false")
    nvq.wait(again["id"])
    eventually(lambda: len(seen.to("/slack")) >= 2, "the second slack delivery")
    assert len(seen.to("/slack")) == 2 and f"job {again['id']} (again)" in json.loads(
        seen.to("/slack")[1][3])["text"]
    eventually(lambda: len(seen.to("/_matrix")) >= 3, "the third matrix delivery")
    assert len(seen.to("/_matrix")) == 3 and len(seen.to("/ntfy")) == 2


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('url = "ftp://x"', "notify.webhook.url: expected an http:// or https:// URL"),
        ('url = "http://x"\nformat = "teams"', "notify.webhook.format: expected one of json"),
        ('url = "http://x"\nevents = ["done"]', "notify.webhook.events[0]: expected one of"),
        ('format = "slack"', "notify.webhook.url: missing"),
        ('url = "http://x"\nheaders = { "A B" = "c" }', "not a valid HTTP header name"),
    ],
)
def test_a_bad_webhook_table_is_one_line_naming_the_key(
    tmp_path: Path, table: str, problem: str
) -> None:
    (tmp_path / "config.toml").write_text(f"[notify.webhook]\n{table}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_notify_on_picks_a_jobs_moments_and_time_limit_80_comes_before_the_kill(
    nvq: Nvq, hooks: tuple[Hooks, int]
) -> None:
    seen, port = hooks
    nvq.write_config(
        f"""
[[notify.webhook]]
url = "http://127.0.0.1:{port}/json"
format = "json"
events = ["fail"]
"""
    )
    bad = nvq.run("job", "submit", "--notify-on", "start,sometimes", "--", "true")
    assert bad.code == 2 and "'sometimes' is not one of start, end, fail, time-limit-80" in bad.err
    job = nvq.submit("--gpus", "0", "--timeout", "4s", "--notify-on", "start,time-limit-80",
                     "--", "sleep", "60")
    got = eventually(lambda: len(seen.to("/json")) >= 2 and seen.to("/json"), "two deliveries")
    docs = [json.loads(d) for _, _, _, d in got]
    assert [(d["job"]["id"], d["moment"]) for d in docs] == [
        (job["id"], "started"), (job["id"], "time-limit-80")]
    assert docs[1]["job"]["state"] == "running" and docs[1]["job"]["timeout"] == 4
    kinds = [e["kind"] for e in nvq.events() if e["job_id"] == job["id"]]
    assert "job_time_limit_80" in kinds
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "timeout"
    # its timeout is no `fail` it asked for; another job's failure is the next delivery
    other = nvq.submit("--gpus", "0", "--", "false")
    nvq.wait(other["id"])
    eventually(lambda: len(seen.to("/json")) >= 3, "the other job's failure")
    last = json.loads(seen.to("/json")[-1][3])
    assert len(seen.to("/json")) == 3 and last["job"]["id"] == other["id"]


def test_notify_on_changes_with_job_edit_while_the_job_runs(
    nvq: Nvq, hooks: tuple[Hooks, int], tmp_path: Path
) -> None:
    seen, port = hooks
    nvq.write_config(
        f"""
[[notify.webhook]]
url = "http://127.0.0.1:{port}/json"
format = "json"
events = ["fail"]
"""
    )
    go = tmp_path / "go"
    job = nvq.submit("--gpus", "0", "--", f"while [ ! -e {go} ]; do sleep 0.05; done")["id"]
    nvq.wait_for(job, lambda j: j["state"] == "running")
    bad = nvq.run("job", "edit", str(job), "--notify-on", "end,never")
    assert bad.code == 2 and "'never' is not one of" in bad.err and bad.out == ""
    assert nvq.show(job)["notify_on"] is None
    edited = nvq.json("job", "edit", str(job), "--notify-on", "end")
    assert edited["notify_on"] == ["end"] and edited["state"] == "running"
    go.touch()
    assert nvq.wait(job)[0] == 0
    got = eventually(lambda: seen.to("/json"), "the end it asked for")
    doc = json.loads(got[0][3])
    assert doc["job"]["id"] == job and doc["job"]["state"] == "completed"
