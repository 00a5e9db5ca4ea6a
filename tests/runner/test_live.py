"""The runner as a real process in a temporary home, spoken to over its socket."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from nvq_runner.jobfiles import JobDir
from nvq_runner.launcher import connect, runner_pid
from nvq_runner.protocol import (
    Ack,
    DaemonMsg,
    FrameReader,
    Hello,
    JobExited,
    JobLost,
    JobStarted,
    Kill,
    LaunchFailed,
    LogData,
    RunnerMsg,
    Sample,
    Start,
    Tail,
    decode_runner_payload,
    encode_frame,
)

PY = sys.executable
T = TypeVar("T")


class Client:
    """A blocking stand-in for the daemon's end of a runner connection."""

    def __init__(self, home: Path) -> None:
        self.sock = connect(home)
        self.frames = FrameReader()
        self.pending: list[RunnerMsg] = []

    def send(self, msg: DaemonMsg) -> None:
        self.sock.sendall(encode_frame(msg))

    # Deadlines only stop a hung test: on a loaded machine a frame can take seconds.
    def recv(self, timeout: float = 30.0) -> RunnerMsg:
        deadline = time.monotonic() + timeout
        while not self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame from the runner")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("runner closed the connection")
            self.pending += [decode_runner_payload(p) for p in self.frames.feed(data)]
        return self.pending.pop(0)

    def expect(self, kind: type[T], timeout: float = 30.0, **match: Any) -> T:
        """The next frame of `kind` whose fields equal `match`; others are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if isinstance(msg, kind) and all(getattr(msg, k) == v for k, v in match.items()):
                return msg

    def events(self, duration: float) -> list[RunnerMsg]:
        """Everything but samples that arrives within `duration` seconds."""
        out: list[RunnerMsg] = []
        deadline = time.monotonic() + duration
        with contextlib.suppress(TimeoutError):
            while True:
                msg = self.recv(max(0.01, deadline - time.monotonic()))
                if not isinstance(msg, Sample):
                    out.append(msg)
        return out

    def close(self) -> None:
        self.sock.close()


def start_runner(home: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [PY, "-m", "nvq_runner", "start", "--home", str(home)],
        env={**os.environ, **env},
        check=True,
        timeout=20,
        capture_output=True,
    )


def stop_runner(home: Path) -> None:
    subprocess.run(
        [PY, "-m", "nvq_runner", "stop", "--home", str(home)],
        check=False,
        timeout=30,
        capture_output=True,
    )


def kill_jobs(home: Path) -> None:
    for pidfile in (home / "jobs").glob("*/wrapper.pid"):
        try:
            pid = int(pidfile.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if str(pidfile.parent).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


class Node:
    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.clients: list[Client] = []

    def start(self) -> None:
        start_runner(self.home, self.env)

    def client(self) -> Client:
        c = Client(self.home)
        self.clients.append(c)
        return c

    def hello(self) -> tuple[Client, Hello]:
        c = self.client()
        hello = c.recv()
        assert isinstance(hello, Hello)
        return c, hello


@pytest.fixture
def node() -> Iterator[Node]:
    # Short, so the socket path fits in sockaddr_un.
    home = Path(tempfile.mkdtemp(prefix="nvqr", dir="/tmp"))
    n = Node(home, {"NVQ_SAMPLE_INTERVAL": "0.3", "NVQ_GPU_BACKEND": "none"})
    yield n
    for c in n.clients:
        c.close()
    stop_runner(home)
    kill_jobs(home)
    log = (home / "runner.log").read_text() if (home / "runner.log").exists() else ""
    shutil.rmtree(home, ignore_errors=True)
    assert "Traceback" not in log, log


def until(check: Any, what: str, timeout: float = 30) -> None:
    """Wait for `check()`; the deadline only stops a hung test."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def acked(home: Path) -> int:
    try:
        return int(json.loads((home / "journal" / "meta.json").read_text())["acked"])
    except (OSError, ValueError, KeyError):
        return 0


def gone(pid: int) -> bool:
    """Dead: no such process, or a zombie nobody has reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def job(job_id: int, command: str, attempt: int = 1, **kw: Any) -> Start:
    kw.setdefault("gpus", [])
    return Start(
        job_id=job_id, attempt=attempt, node="n1", name=f"job{job_id}", command=command, **kw
    )


# ---------------------------------------------------------------- basics


def test_hello(node: Node) -> None:
    node.start()
    _, hello = node.hello()
    assert hello.hostname == socket.gethostname()
    assert hello.protocol == 1 and hello.runner_version
    assert hello.backend == "none" and hello.gpus == []
    assert hello.mem_total_mb > 0 and hello.cpus >= 1
    assert hello.active == [] and hello.journal_head == 0
    assert hello.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert hello.pid == runner_pid(node.home)
    # a second start is a no-op on the running runner
    node.start()
    assert runner_pid(node.home) == hello.pid


def test_start_runs_job_with_env_and_reports_exit(node: Node, tmp_path: Path) -> None:
    node.start()
    c, _ = node.hello()
    out = tmp_path / "env.txt"
    script = (
        f"env > {out}\npwd >> {out}\n"
        'echo "step 1/2" > "$NVQ_STATUS_FILE"\necho "step 2/2" >> "$NVQ_STATUS_FILE"\n'
        'echo \'{"loss": 0.5}\' > "$NVQ_JOB_DIR/result.json"\n'
        'touch "$NVQ_ARTIFACTS/ckpt"\n'
        "echo to-stdout; echo oops >&2; exit 3"
    )
    c.send(
        job(1, script, gpus=[0, 2], workdir=str(tmp_path),
            env={"FOO": "bar", "NVQ_NODE": "over", "CUDA_VISIBLE_DEVICES": "1",
                 "NVQ_JOB_DIR": "/elsewhere", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    )
    started = c.expect(JobStarted, job_id=1)
    assert started.attempt == 1 and started.pid > 0 and started.seq == 1
    exited = c.expect(JobExited, job_id=1)
    assert (exited.exit_code, exited.signal, exited.reason) == (3, None, "exit")
    assert exited.seq == 2
    assert exited.progress == "step 2/2"
    assert (exited.stderr_tail, exited.stderr_tail_stream) == ("oops", "stderr")
    assert exited.result is not None and '"loss"' in exited.result
    lines = out.read_text().splitlines()
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    jobdir = node.home / "jobs" / "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,2"
    assert env["NVQ_JOB_ID"] == "1" and env["NVQ_JOB_NAME"] == "job1"
    # The queue's own variables win over the job's env; the rest is the job's.
    assert env["NVQ_NODE"] == "n1" and env["FOO"] == "bar"
    assert env["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"
    assert env["NVQ_ATTEMPT"] == "1" and env["NVQ_JOB_DIR"] == str(jobdir)
    assert env["NVQ_STATUS_FILE"] == str(jobdir / "status")
    assert env["NVQ_ARTIFACTS"] == str(jobdir / "artifacts")
    assert lines[-1] == str(tmp_path)
    assert (jobdir / "stdout.log").read_text() == "to-stdout\n"
    assert (jobdir / "artifacts" / "ckpt").exists()
    assert (jobdir / "exit").read_text().strip() == "3"


def test_cpu_job_gets_empty_cuda_devices_and_stdout_tail(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(2, 'echo "cvd=[$CUDA_VISIBLE_DEVICES]"; pwd'))
    exited = c.expect(JobExited, job_id=2)
    assert exited.exit_code == 0 and exited.result is None and exited.progress is None
    # stderr empty: the tail falls back to stdout
    assert exited.stderr_tail == f"cvd=[]\n{node.home / 'jobs' / '2'}"
    assert exited.stderr_tail_stream == "stdout"  # and says so


def test_launch_failure(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(3, "true", workdir="/nonexistent/dir"))
    failed = c.expect(LaunchFailed, job_id=3)
    assert "/nonexistent/dir" in failed.error and failed.seq == 1


def test_start_is_idempotent(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(4, "sleep 0.3"))
    c.send(job(4, "sleep 0.3"))
    c.expect(JobExited, job_id=4)
    c.send(job(4, "sleep 0.3"))  # finished attempt: still nothing
    evs = c.events(0.6)
    assert evs == []
    _, hello = node.hello()
    assert hello.journal_head == 2


def test_timeout(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(5, "sleep 30", timeout=0.5, kill_grace=5))
    exited = c.expect(JobExited, job_id=5)
    assert (exited.reason, exited.exit_code, exited.signal) == ("timeout", 143, 15)


def test_kill_escalates_to_sigkill(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    deaf = node.home / "deaf6"  # the trap is set: TERM cannot end it any more
    c.send(job(6, f"trap '' TERM; touch {deaf}; sleep 30"))
    c.expect(JobStarted, job_id=6)
    until(deaf.exists, "the job to ignore TERM")
    c.send(Kill(job_id=6, attempt=1, grace=0.5))
    exited = c.expect(JobExited, job_id=6)
    assert (exited.reason, exited.exit_code, exited.signal) == ("killed", 137, 9)


def test_kill_before_start_is_a_tombstone(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(Kill(job_id=7, attempt=1))
    lost = c.expect(JobLost, job_id=7)
    assert lost.reason == "killed before start"
    c.send(job(7, "true"))
    c.send(Kill(job_id=7, attempt=1))
    assert c.events(0.5) == []


def test_higher_attempt_ends_the_older_one(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(8, "sleep 30"))
    c.expect(JobStarted, job_id=8, attempt=1)
    c.send(job(8, "exit 0", attempt=2, kill_grace=1))
    first = c.expect(JobExited, job_id=8)
    assert (first.attempt, first.reason) == (1, "killed")
    c.expect(JobStarted, job_id=8, attempt=2)
    assert c.expect(JobExited, job_id=8).attempt == 2


# ---------------------------------------------------------------- journal over the wire


def test_replay_until_ack_and_connection_replacement(node: Node) -> None:
    node.start()
    c1, _ = node.hello()
    c1.send(job(10, "exit 1"))
    c1.expect(JobExited, job_id=10)
    c2, hello = node.hello()  # replaces c1
    with pytest.raises(EOFError):
        c1.events(2) and c1.recv(2)
    assert hello.journal_head == 2
    replay = [c2.recv(), c2.recv()]
    assert [type(m) for m in replay] == [JobStarted, JobExited]
    assert [m.seq for m in replay] == [1, 2]  # type: ignore[union-attr]
    c2.send(Ack(seq=2))
    until(lambda: acked(node.home) == 2, "the runner to record the ack")
    c3, hello = node.hello()
    assert hello.journal_head == 2
    assert c3.events(0.5) == []
    c3.send(job(11, "true"))
    assert c3.expect(JobStarted, job_id=11).seq == 3


def test_runner_killed_hard_adopts_running_job(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    gate = node.home / "gate20"  # job 20 outlives the restart however slow it is
    c.send(job(20, f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 7", timeout=60))
    c.send(job(21, "sleep 0.2; exit 5"))
    c.send(job(22, "sleep 30", timeout=1.5, kill_grace=5))
    for j in (20, 21, 22):
        c.expect(JobStarted, job_id=j)
    c.send(Ack(seq=3))
    pid = runner_pid(node.home)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    # job 21 ends while no runner runs: its wrapper writes the exit record
    until(lambda: (JobDir(node.home / "jobs", 21).exit).exists(), "job 21's exit record")
    node.start()
    c2, hello = node.hello()
    # 20 is adopted; 22 too, unless its 1.5 s ran out while the runner came back (a
    # loaded machine): then the new runner has already ended it, and says so below
    active = {a.job_id for a in hello.active}
    assert 20 in active and active <= {20, 22}, active
    gate.touch()
    got: dict[int, JobExited] = {}
    while len(got) < 3:  # 21's record replayed, 20 let go, 22 past its timeout
        e = c2.expect(JobExited, timeout=30)
        assert e.job_id not in got, f"job {e.job_id} reported twice"
        got[e.job_id] = e
    assert (got[21].exit_code, got[21].reason) == (5, "exit")
    assert (got[20].exit_code, got[20].reason) == (7, "exit")
    assert (got[22].reason, got[22].signal) == ("timeout", 15)
    # nothing is reported twice and nothing lost
    assert sorted(e.seq for e in got.values()) == [4, 5, 6]


def test_vanished_job_is_lost(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(30, "sleep 30"))
    started = c.expect(JobStarted, job_id=30)
    stop_runner(node.home)
    os.killpg(started.pid, signal.SIGKILL)  # the wrapper cannot record anything
    until(lambda: gone(started.pid), "the job's wrapper to die")
    node.start()
    c2, _ = node.hello()
    lost = c2.expect(JobLost, job_id=30)
    assert "exit record" in lost.reason


def test_stop_leaves_jobs_running(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    gate = node.home / "gate31"  # the job outlives the restart however slow it is
    c.send(job(31, f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 4"))
    started = c.expect(JobStarted, job_id=31)
    stop_runner(node.home)
    assert runner_pid(node.home) is None
    os.kill(started.pid, 0)  # still alive
    node.start()
    c2, hello = node.hello()
    assert [a.job_id for a in hello.active] == [31]
    gate.touch()
    assert c2.expect(JobExited, job_id=31).exit_code == 4


# ---------------------------------------------------------------- logs


def test_tail_and_follow(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(40, "for i in 1 2 3 4 5; do echo line$i; done"))
    c.expect(JobExited, job_id=40)
    c.send(Tail(req=1, job_id=40, lines=2))
    data = b""
    while not (m := c.expect(LogData, req=1)).eof:
        data += m.data
    assert data == b"line4\nline5\n" and m.error is None
    c.send(Tail(req=2, job_id=999))
    assert c.expect(LogData, req=2).error

    c.send(job(41, "echo a; sleep 0.6; echo b >&2; echo c; sleep 0.3"))
    c.expect(JobStarted, job_id=41)
    c.send(Tail(req=3, job_id=41, lines=-1, follow=True))
    c.send(Tail(req=4, job_id=41, stream="stderr", lines=-1, follow=True))
    got: dict[int, bytes] = {3: b"", 4: b""}
    done: set[int] = set()
    while done != {3, 4}:
        m = c.expect(LogData)
        got[m.req] += m.data
        if m.eof:
            done.add(m.req)
    assert got == {3: b"a\nc\n", 4: b"b\n"}


# ---------------------------------------------------------------- fake GPUs

GPUS = """
cuda = "13.0"
{extra}
[[gpu]]
name = "A100"
memory = "80GiB"
util = 35
[[gpu.process]]
pid = 999999
user = "alice"
used = "10GiB"

[[gpu]]
name = "A100"
memory = "80GiB"
"""


def test_fake_backend(node: Node, tmp_path: Path) -> None:
    toml = tmp_path / "gpus.toml"
    toml.write_text(GPUS.format(extra=""))
    node.env = {"NVQ_SAMPLE_INTERVAL": "0.2", "NVQ_FAKE_GPUS": str(toml)}
    node.start()
    c, hello = node.hello()
    assert hello.backend == "fake" and hello.cuda == "13.0"
    assert [(g.index, g.name, g.total_mb) for g in hello.gpus] == [
        (0, "A100", 81920),
        (1, "A100", 81920),
    ]
    s = c.expect(Sample)
    assert s.mem_free_mb > 0
    g0, g1 = s.gpus
    assert (g0.used_mb, g0.util_percent, g0.blind) == (10240, 35, False)
    assert [(p.pid, p.user, p.used_mb, p.job_id) for p in g0.processes] == [
        (999999, "alice", 10240, None)
    ]
    assert g1.processes == [] and g1.used_mb == 0

    c.send(
        job(
            50,
            f"echo warming > $NVQ_STATUS_FILE\n"
            f"exec {PY} -m nvq_runner.fakeload --mib 1000 --seconds 30",
            gpus=[1],
        )
    )
    started = c.expect(JobStarted, job_id=50)
    deadline = time.monotonic() + 5
    while True:
        s = c.expect(Sample)
        if s.gpus[1].processes or time.monotonic() > deadline:
            break
    (p,) = s.gpus[1].processes
    assert (p.used_mb, p.job_id) == (1000, 50)
    assert p.pid == started.pid or os.getsid(p.pid) == started.pid
    assert s.gpus[1].used_mb == 1000 and s.progress == {50: "warming"}

    toml.write_text(GPUS.format(extra="blind = true"))  # re-read live
    while not (s := c.expect(Sample)).gpus[0].blind:
        pass
    assert [pr.used_mb for pr in s.gpus[0].processes] == [None]
    assert s.gpus[0].used_mb == 10240
    assert [(pr.used_mb, pr.job_id) for pr in s.gpus[1].processes] == [(None, 50)]
    assert s.gpus[1].used_mb == 1000

    c.send(Kill(job_id=50, attempt=1, grace=2))
    assert c.expect(JobExited, job_id=50).reason == "killed"
    s = c.expect(Sample, timeout=1)  # one is sent at once after the exit
    if s.gpus[1].processes:  # that one may have been under way already
        s = c.expect(Sample, timeout=1)
    assert s.gpus[1].processes == [] and s.progress == {}


# ---------------------------------------------------------------- commands


def test_attach_splices_and_second_serve_exits_quietly(node: Node) -> None:
    env = {**os.environ, **node.env}
    # attach starts the runner itself
    proc = subprocess.Popen([PY, "-m", "nvq_runner", "attach", "--home", str(node.home)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        frames = FrameReader()
        msgs: list[RunnerMsg] = []
        while not msgs:
            msgs += [decode_runner_payload(p) for p in frames.feed(os.read(proc.stdout.fileno(), 65536))]
        assert isinstance(msgs[0], Hello)
        proc.stdin.write(encode_frame(job(60, "exit 2")))
        proc.stdin.flush()
        while not any(isinstance(m, JobExited) for m in msgs):
            msgs += [decode_runner_payload(p) for p in frames.feed(os.read(proc.stdout.fileno(), 65536))]
        assert [m.exit_code for m in msgs if isinstance(m, JobExited)] == [2]
        serve = subprocess.run([PY, "-m", "nvq_runner", "serve", "--home", str(node.home)],
                               env=env, timeout=60, capture_output=True)
        assert serve.returncode == 0
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0
