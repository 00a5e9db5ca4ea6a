"""One failure is one message on each channel, against a real HTTP server counting
POSTs: with the default `events` a failed job's webhook gets the job's message
(naming job, node, exit and output tail) and not its `job_failed` alert too; an
interactive session left with a non-zero status pages nobody, and raises no alert,
unless it asked; a held job's alert is a warning, not an error."""

from __future__ import annotations

import json
from typing import Any

from tests.cluster import Nvq
from tests.notify.test_webhooks import Hooks, eventually, hooks  # noqa: F401 - the fixture


def _posts(seen: Hooks) -> list[dict[str, Any]]:
    return [json.loads(body) for _, _, _, body in seen.to("/json")]


def _about(posts: list[dict[str, Any]], job_id: int) -> list[dict[str, Any]]:
    return [p for p in posts if (p.get("job") or p.get("alert") or {}).get(
        "id" if "job" in p else "job_id") == job_id]


def test_a_failure_is_one_message_per_channel(
    nvq: Nvq, hooks: tuple[Hooks, int],  # noqa: F811 - the fixture
) -> None:
    seen, port = hooks
    nvq.write_config(
        f"""
[notify]
retry_initial = "0.2s"
retry_max = "0.5s"

[[notify.webhook]]
url = "http://127.0.0.1:{port}/json"
format = "json"
"""
    )
    bad = nvq.submit("--gpus", "0", "--name", "bad", "--", "echo kaput >&2; exit 3")
    assert nvq.wait(bad["id"])[0] == 1
    shell = nvq.run("job", "shell", "--gpus", "0", "--", "sh", "-c", "exit 4")
    assert shell.code == 4, shell
    asked = nvq.run("job", "shell", "--gpus", "0", "--notify-on", "fail", "--",
                    "sh", "-c", "exit 5")
    assert asked.code == 5, asked
    held = nvq.submit("--gpus", "0", "--after", str(bad["id"]), "--", "true")
    # The notifier delivers in order: once the held job's alert is here, all that the
    # jobs before it were owed has been delivered.
    eventually(lambda: _about(_posts(seen), held["id"]), "the held job's alert")
    posts = _posts(seen)

    (failed,) = _about(posts, bad["id"])
    assert failed["type"] == "job" and failed["moment"] == "failed"
    job = failed["job"]
    assert (job["node"], job["exit_code"]) == ("local", 3) and "kaput" in job["stderr_tail"]

    shells = [p for p in posts if p["type"] == "job" and p["job"]["id"] != bad["id"]]
    assert [p["job"]["exit_code"] for p in shells] == [5], shells  # only the one that asked
    (alert,) = _about(posts, held["id"])
    assert alert["alert"]["kind"] == "job_held" and alert["alert"]["severity"] == "warning"
    listed = nvq.run("queue", "alerts", "--all", "--json")  # exits 1: some are open
    kinds = {a["job_id"]: a["kind"] for a in json.loads(listed.out)["alerts"]}
    assert kinds == {bad["id"]: "job_failed", held["id"]: "job_held"}, kinds
