"""`nvq queue events --follow --json`, read line by line as a watcher reads it (a
process whose stdout lines arrive while jobs end on a real daemon and an sshd node):
one compact JSON object a line, the daemon's filters, a job's end line with how it
ended, `--until-done`, what a member sees, the daemon stopping, and bad filters."""

from __future__ import annotations

import getpass
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from nvq.agents.skill import text as skill_text
from tests.cluster import Nvq
from tests.harness.cli_calls import start_nvq
from tests.harness.sshd import SshdNode
from tests.members import _user, _workdir, as_user, reachable_nvq, second_user

# A job that ends only once the test creates its gate: its end line must come after
# the follower has printed what came before (the stream is live, not a replay).
GATED = (
    "while [ ! -e {gate} ]; do sleep 0.05; done; "
    'echo \'{{"acc": 0.9}}\' > "$NVQ_JOB_DIR/result.json"; '
    "for i in $(seq 1 30); do echo line$i >&2; done"
)


class Follower:
    """`nvq ARGS` as a process of its own; its stdout lines as they come."""

    def __init__(self, nvq: Nvq, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nvq", *args], env=nvq.env, cwd=nvq.cwd,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self) -> Any:
        """The next stdout line as JSON (the deadline only stops a hung test)."""
        raw = self.lines.get(timeout=120)
        assert raw is not None, f"the stream ended: {self.finish()}"
        assert raw.endswith("\n") and "\n" not in raw[:-1], raw  # one line, one object
        return json.loads(raw)

    def finish(self) -> tuple[int, str]:
        """Its exit code and stderr, once it exits by itself."""
        code = self.proc.wait(timeout=120)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def follow(remote: tuple[Nvq, SshdNode]) -> Any:
    started: list[Follower] = []

    def start(*args: str) -> Follower:
        f = Follower(remote[0], "queue", "events", "--follow", "--json", *args)
        started.append(f)
        return f

    yield start
    for f in started:
        f.stop()


def test_a_watcher_gets_one_line_per_job_that_ended_then_the_stream_exits(
    remote: tuple[Nvq, SshdNode], follow: Any, tmp_path: Path
) -> None:
    nvq, _ = remote
    nvq.nodes_up()
    gate = tmp_path / "gate"
    slow = nvq.submit("--gpus", "0", "--", "sh", "-c", GATED.format(gate=gate))["id"]
    bad = nvq.submit("--gpus", "0", "--", "sh", "-c", "echo oops >&2; exit 3")["id"]
    f = follow("--job", str(slow), "--job", str(bad), "--kind", "end", "--until-done")

    first = f.line()  # the failed job's end, while the other still waits at its gate
    assert (first["job_id"], first["kind"], first["classes"]) == (
        bad, "job_failed", ["end", "fail", "alert"])
    assert first["end"] == {
        "state": "failed", "exit_code": 3, "signal": None, "reason": "exited with code 3",
        "result": None, "stderr_tail": "oops", "current": True,
    }
    assert f.proc.poll() is None  # one of its jobs has not ended: it goes on
    gate.touch()
    second = f.line()
    assert (second["job_id"], second["kind"]) == (slow, "job_completed")
    end = second["end"]
    assert (end["state"], end["exit_code"], end["result"]) == ("completed", 0, {"acc": 0.9})
    # The tail is capped to its last 10 lines.
    assert end["stderr_tail"] == "\n".join(f"line{i}" for i in range(21, 31))
    assert f.finish() == (0, "")
    assert f.lines.get(timeout=60) is None  # nothing after the last end line


def test_the_skills_watch_command_wakes_an_agent_once_per_job(
    remote: tuple[Nvq, SshdNode], tmp_path: Path
) -> None:
    """The command `nvq skill` tells an agent to leave running, as it prints it: one
    line for a job that ended before it started, one as the other ends, then exit 0."""
    (shown,) = [line for line in skill_text().splitlines()
                if line.startswith("nvq queue events --follow")]
    nvq, _ = remote
    nvq.nodes_up()
    gate = tmp_path / "gate"
    early = nvq.submit("--gpus", "0", "--", "sh", "-c", "exit 0")["id"]
    nvq.wait(early)
    late = nvq.submit("--gpus", "0", "--", "sh", "-c", GATED.format(gate=gate))["id"]
    argv = shlex.split(shown.replace("12", str(early)).replace("13", str(late)))
    assert argv[:4] == ["nvq", "queue", "events", "--follow"] and str(late) in argv
    f = Follower(nvq, *argv[1:])
    try:
        line = f.line()
        assert (line["job_id"], line["end"]["state"]) == (early, "completed")
        gate.touch()
        end = f.line()["end"]
        assert set(end) >= {"state", "exit_code", "reason", "result", "stderr_tail"}
        assert (end["state"], end["result"]) == ("completed", {"acc": 0.9})
        assert f.finish() == (0, "")
    finally:
        f.stop()


def test_until_done_on_jobs_that_already_ended_replays_their_end_lines(
    nvq: Nvq,
) -> None:
    """Submit, then follow: a job that ended before the follower started is not missed."""
    nvq.nodes_up()
    done = nvq.submit("--gpus", "0", "--", "true")["id"]
    assert nvq.wait(done)[0] == 0
    r = nvq.run("queue", "events", "--follow", "--json", "--job", str(done), "--kind", "end",
                "--until-done")
    assert r.code == 0, r
    (line,) = r.out.splitlines()
    assert json.loads(line)["end"]["state"] == "completed"


def test_an_end_that_no_longer_stands_does_not_end_the_wait(nvq: Nvq) -> None:
    """A job requeued after it ended: its first end line says it no longer stands
    (`current` false, no output), and `--until-done` waits for the end that does."""
    nvq.nodes_up()
    live = Follower(nvq, "queue", "events", "--follow", "--json", "--kind", "end")
    try:
        job = nvq.submit("--gpus", "0", "--", "sh", "-c", "echo again >&2; exit 5")["id"]
        assert live.line()["end"]["current"]  # while it was live, the end stood
    finally:
        live.stop()
    nvq.ok("job", "requeue", str(job))
    nvq.wait_for(job, lambda j: j["state"] == "failed" and j["attempt"] == 2)
    r = nvq.run("queue", "events", "--follow", "--json", "--job", str(job), "--kind", "end",
                "--until-done")
    assert r.code == 0, r
    first, second = (json.loads(line)["end"] for line in r.out.splitlines())
    assert first == {"state": "failed", "exit_code": 5, "signal": None, "reason": "exit",
                     "result": None, "stderr_tail": None, "current": False}
    assert (second["current"], second["exit_code"], second["stderr_tail"]) == (True, 5, "again")


def test_filters_are_the_daemons(remote: tuple[Nvq, SshdNode], follow: Any) -> None:
    """Each follower's lines are exactly the events its filter lets through: the jobs
    run one after another, and a last failing job closes each stream's list."""
    nvq, _ = remote
    nvq.nodes_up()
    starts = follow("--kind", "start")
    fails = follow("--kind", "fail")
    mine = follow("--submitter", getpass.getuser(), "--kind", "end")
    ids = []
    for command in ("true", "false", "exit 4"):
        ids.append(nvq.submit("--gpus", "0", "--", "sh", "-c", command)["id"])
        nvq.wait(ids[-1])
    ok, bad, last = ids
    assert [(line["job_id"], line["kind"]) for line in (starts.line() for _ in ids)] == [
        (i, "job_started") for i in ids]
    assert [(line["job_id"], line["end"]["exit_code"]) for line in (fails.line(), fails.line())] \
        == [(bad, 1), (last, 4)]
    assert [(line["job_id"], line["end"]["state"]) for line in (mine.line() for _ in ids)] == [
        (ok, "completed"), (bad, "failed"), (last, "failed")]


def test_the_daemon_stopping_ends_the_stream_with_one_line(
    remote: tuple[Nvq, SshdNode], follow: Any
) -> None:
    nvq, _ = remote
    nvq.nodes_up()
    f = follow()
    assert f.line()["id"] >= 1  # the backlog came: it is subscribed
    nvq.ok("daemon", "stop")
    last = None
    while True:  # the rest of the backlog, then the one error line
        line = f.line()
        if "error" in line:
            break
        last = line["id"]
    assert line["exit_code"] == 1
    assert line["error"].startswith("the daemon stopped: the stream ended after event")
    if last is not None:
        assert f"--since {last}" in line["error"]
    assert f.finish() == (1, "")
    text = nvq.run("queue", "events", "--follow")  # no daemon: it starts none
    assert text.code != 0 and text.err.count("\n") == 1, text


def test_a_job_the_other_filters_exclude_is_refused(nvq: Nvq) -> None:
    """`--job 1 --submitter someone-else` would print nothing and wait forever."""
    nvq.nodes_up()
    job = nvq.submit("--gpus", "0", "--", "true")["id"]
    r = nvq.run("queue", "events", "--follow", "--job", str(job), "--submitter", "ana",
                "--until-done")
    me = getpass.getuser()
    assert (r.code, r.out) == (2, ""), r
    assert r.err == (f"nvq: job {job} is {me}'s, and the stream asks for ana's jobs only "
                     "(--mine or --submitter)\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--follow", "--kind", "ends"], "--kind: 'ends' is not one of start, end, fail, alert"),
        (["--follow", "--job", "999"], "no job with id 999"),
        (["--follow", "--until-done"], "--until-done needs --job ID"),
        (["--kind", "end"], "--mine, --submitter, --kind, --until-done and several --job need"),
    ],
)
def test_bad_filters_say_so_in_one_line_and_exit_2(
    nvq: Nvq, args: list[str], message: str
) -> None:
    nvq.nodes_up()
    r = nvq.run("queue", "events", *args)
    assert (r.code, r.out) == (2, ""), r
    assert r.err.startswith(f"nvq: {message}") and r.err.count("\n") == 1, r.err
    r = nvq.run("queue", "events", *args, "--json")
    assert (r.code, r.err) == (2, ""), r
    doc = json.loads(r.out)
    assert doc["exit_code"] == 2 and doc["error"].startswith(message)
    if "--follow" in args:  # a stream's lines are one JSON object each, its error too
        assert len(r.out.splitlines()) == 1


def test_a_members_stream_holds_no_other_users_private_data(
    member_queue: tuple[Nvq, str],
) -> None:
    """A member follows the owner's failed job and their own: the owner's end line says
    how it ended (metadata) but not its result or output; `--mine` leaves it out."""
    nvq, user = member_queue
    theirs = nvq.submit("--gpus", "0", "--", "sh", "-c",
                        'echo \'{"owner": 1}\' > "$NVQ_JOB_DIR/result.json"; '
                        "echo owner-private >&2; exit 3")["id"]
    nvq.wait(theirs)
    r = as_user(user, nvq, "job", "submit", "--gpus", "0", "--json", "--", "sh", "-c",
                'echo \'{"member": 1}\' > "$NVQ_JOB_DIR/result.json"; echo member-own >&2')
    assert r.code == 0, r.err
    own = r.json()["id"]
    assert as_user(user, nvq, "job", "wait", str(own)).code == 0

    r = as_user(user, nvq, "queue", "events", "--follow", "--json", "--job", str(theirs),
                "--job", str(own), "--kind", "end", "--until-done")
    assert r.code == 0, r
    assert "owner-private" not in r.out and '"owner"' not in r.out
    owners, members = (json.loads(line) for line in r.out.splitlines())
    assert owners["job_id"] == theirs and owners["end"] == {
        "state": "failed", "exit_code": 3, "signal": None, "reason": "exited with code 3",
        "result": None, "stderr_tail": None, "current": True,
    }
    assert members["end"]["result"] == {"member": 1}
    assert members["end"]["stderr_tail"] == "member-own"

    # --mine: the first end line is the member's own, though the owner's came first.
    read, write = os.pipe()
    started = start_nvq(["queue", "events", "--follow", "--json", "--mine", "--kind", "end"],
                        env=nvq.env, cwd=_workdir(user), user=_user(user),
                        stdio=(os.open(os.devnull, os.O_RDONLY), write, write))
    os.close(write)
    try:
        with os.fdopen(read) as lines:
            assert json.loads(lines.readline())["job_id"] == own
    finally:
        os.kill(started.pid, signal.SIGTERM)
        started.wait()


@pytest.fixture
def member_queue() -> Any:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        nvq.nodes_up()
        yield nvq, user
