"""Making a job attempt's process: its directory, script, logs and environment, and
`/bin/sh wrapper.sh <jobdir> <umask>` as the leader of a new session."""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Optional

from . import container, memlimit, procfs
from .errors import NvqRunnerError
from .gpu.base import visible_devices
from .job_socket import BIN, SOCKET_NAME
from .jobfiles import AttemptRecord, JobDir
from .jobworld import Prepared
from .node_env import environ_with
from .protocol import Start
from .script_exec import Who, direct_argv, exec_form

WRAPPER = Path(__file__).with_name("wrapper.sh")
# A job run as another user runs this copy of the wrapper, in its job directory.
WRAPPER_COPY = ".nvq-wrapper.sh"
# An interactive job's leader (see ptyhost.py), and the copy another user runs.
PTYHOST = Path(__file__).with_name("ptyhost.py")
PTYHOST_COPY = ".nvq-ptyhost.py"


class LaunchError(NvqRunnerError):
    pass


def job_env(
    msg: Start, d: JobDir, base: dict[str, str] | None = None, port: int | None = None,
    end_time: float | None = None,
) -> dict[str, str]:
    """`base`: the environment the job's world prepared (it holds `msg.env` already);
    None: the runner's own plus `msg.env`."""
    # CUDA numbers cards fastest-first by default; NVML (and so the queue)
    # numbers them by PCI bus. Make CUDA agree unless the job says otherwise.
    if base is not None:
        env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", **base}
    else:
        env = dict(os.environ)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env.update(msg.env)
    if msg.user:
        who = pwd.getpwnam(msg.user)
        env.update(HOME=who.pw_dir, USER=who.pw_name, LOGNAME=who.pw_name)
    # Set last, so a job's own env can never move it to cards it was not given
    # or make it lie about its identity and files.
    env.update(
        CUDA_VISIBLE_DEVICES=visible_devices(msg.gpus),
        NVQ_JOB_ID=str(msg.job_id),
        NVQ_JOB_NAME=msg.name,
        NVQ_NODE=msg.node,
        NVQ_JOB_DIR=str(d.path),
        NVQ_STATUS_FILE=str(d.status),
        NVQ_ARTIFACTS=str(d.artifacts),
        NVQ_ATTEMPT=str(msg.attempt),
        # When the timeout ends it (epoch seconds), so it can plan a checkpoint.
        NVQ_END_TIME="" if end_time is None else str(int(end_time)),
    )
    if msg.inputs:  # read-only, one folder per prerequisite (input_views.py)
        env["NVQ_INPUTS"] = str(d.inputs)
    # A pilot's jobs run inside its Slurm allocation: they see it as a Slurm job step
    # would (SLURM_JOB_ID, the node list, the granted cards), whatever the submitter's
    # shell carried.
    env.update(environ_with("SLURM_"))
    if port is not None:
        env["NVQ_PORT"] = str(port)
        # torchrun and torch.distributed read it; a job that chose its own keeps it.
        env.setdefault("MASTER_PORT", str(port))
    return env


# Opens the attempt's `$NVQ_SOCKET` (job_socket.py); None when the daemon serves none.
Offer = Callable[[Start, JobDir], Optional[Path]]


def spawn(
    msg: Start, d: JobDir, rec: AttemptRecord, job_umask: int, prepared: Prepared | None = None,
    offer: Offer | None = None,
) -> subprocess.Popen[bytes]:
    d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
    d.artifacts.mkdir(mode=0o700, exist_ok=True)
    workdir = Path(msg.workdir).expanduser() if msg.workdir else d.path
    if prepared is not None and prepared.workdir is not None:
        workdir = prepared.workdir
    if not workdir.is_dir():
        raise LaunchError(f"workdir {workdir} is not a directory")
    d.make_way(msg.attempt)
    # Made here, private, so the job's `echo … > $NVQ_STATUS_FILE` keeps it so.
    os.close(os.open(d.status, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    command = msg.command if msg.command.endswith("\n") else msg.command + "\n"
    env = job_env(msg, d, prepared.env if prepared else None, rec.port, rec.deadline)
    words: list[str] = []
    if not (msg.image or msg.interactive):
        # A member's job gets the owner's process tree: judged as the member (who).
        judge = job_user(msg.user) if msg.user else None
        command = exec_form(command, env, workdir, judge)
        words = direct_argv(command, env, workdir, judge) or []
    if msg.image:
        # The wrapper runs the runtime (as the runner's user: rootful), which runs the
        # job's own script in the image as the job's user.
        d.inner_script.write_text(command)
        command = in_container(msg, d, rec, workdir, rec.port)
    d.script.write_text(command)
    # The record exists before the process does, so a runner that dies in between
    # finds the attempt (and the wrapper's pid file) when it restarts.
    d.write_record(rec)
    group = None
    if msg.memory_mb is not None:
        group = memlimit.make_cgroup(f"nvq-{msg.job_id}-{msg.attempt}", msg.memory_mb)
    # O_APPEND: when the runner cuts a log's middle (logcap), the job's next write
    # goes to the new end instead of leaving a hole where the cut-off part was.
    prefix = as_user(msg.user, d) if msg.user else []
    if msg.image:
        prefix = []  # the runtime switches user inside the container (--user)
    leader, copy = (PTYHOST, PTYHOST_COPY) if msg.interactive else (WRAPPER, WRAPPER_COPY)
    wrapper = leader
    if prefix:
        # The member may not reach the runner's own installed files (a 0700 home or
        # checkout): they run a copy of the wrapper in their job directory.
        wrapper = d.path / copy
        wrapper.write_bytes(leader.read_bytes())
        who = pwd.getpwnam(msg.user)
        os.chown(wrapper, who.pw_uid, who.pw_gid)
    # ptyhost.py needs only the standard library: the base interpreter, isolated,
    # runs it even for a member who cannot read the runner's venv.
    shell = [os.path.realpath(sys.executable), "-I"] if msg.interactive else ["/bin/sh"]
    # `words`: the wrapper runs the program itself, not `bash script` (script_exec.py).
    argv = [*prefix, *shell, str(wrapper), str(d.path), f"{job_umask:04o}", *words]
    sock = offer(msg, d) if offer is not None else None
    if sock is not None:  # set last: the job's own env cannot point it elsewhere
        env["NVQ_SOCKET"] = str(sock)
        env["PATH"] = f"{sock.parent / BIN}:{env.get('PATH') or os.defpath}"
    with _log_file(d.stdout) as out, _log_file(d.stderr) as err:
        return subprocess.Popen(
            argv,
            cwd=workdir, env=env,
            stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True, close_fds=True,
            preexec_fn=memlimit.preexec(msg.memory_mb, group),
        )


def launch(
    msg: Start, d: JobDir, rec: AttemptRecord, job_umask: int, prepared: Prepared | None,
    offer: Offer | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Spawn the attempt and open the pidfd that tells when it ends. A failure raises
    LaunchError in the words the daemon shows."""
    try:
        popen = spawn(msg, d, rec, job_umask, prepared, offer)
    except (OSError, LaunchError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            error = f"no space left on the node's disk ({d.path})"
        elif isinstance(exc, LaunchError):
            error = str(exc)
        else:
            error = f"{type(exc).__name__}: {exc}"
        raise LaunchError(error) from exc
    pid = popen.pid
    rec.pid = pid
    rec.start_ticks = procfs.start_ticks(pid)  # a zombie still has it; not yet reaped
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as exc:
        # Out of descriptors: a job we cannot watch must not run unseen.
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        popen.wait()
        raise LaunchError(f"cannot watch the job process: {exc}") from exc
    return popen, pidfd


def in_container(msg: Start, d: JobDir, rec: AttemptRecord, workdir: Path,
                 port: int | None) -> str:
    """The job's script when it runs in an image: `exec <runtime> run …` (see
    container.py), its environment in a private env file beside it."""
    runtime = msg.runtime or next(iter(container.found_runtimes()), "")
    if not runtime:
        raise LaunchError("this node has no container runtime (podman, docker, apptainer)")
    if shutil.which(runtime) is None:
        raise LaunchError(f"runtime {runtime!r} is not installed on this node")
    uid, gid = os.getuid(), os.getgid()
    if msg.user:
        who = pwd.getpwnam(msg.user)
        uid, gid = who.pw_uid, who.pw_gid
        os.chown(d.inner_script, uid, gid)
    env = {**msg.env, **container.card_env(runtime, msg.gpus), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
           "NVQ_JOB_ID": str(msg.job_id), "NVQ_JOB_NAME": msg.name, "NVQ_NODE": msg.node,
           "NVQ_JOB_DIR": str(d.path), "NVQ_STATUS_FILE": str(d.status),
           "NVQ_ARTIFACTS": container.ARTIFACTS, "NVQ_ATTEMPT": str(msg.attempt),
           "NVQ_IMAGE": msg.image,
           # inside the job directory, which the container sees at the same path
           **({"NVQ_INPUTS": str(d.inputs)} if msg.inputs else {}),
           "NVQ_END_TIME": "" if rec.deadline is None else str(int(rec.deadline))}
    if port is not None:
        env["NVQ_PORT"] = str(port)
        env.setdefault("MASTER_PORT", str(port))
    if msg.relay:
        # The socket (job_socket.py) is in the job directory, which the container sees
        # at the same path; its `nvq` goes first on the image's own PATH.
        env["NVQ_SOCKET"] = str(d.path / SOCKET_NAME)
        with d.inner_script.open("r+") as f:
            body = f.read()
            f.seek(0)
            f.write(f"PATH={shlex.quote(str(d.path / BIN))}:\"$PATH\"; export PATH\n{body}")
    fd = os.open(d.container_env, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(container.env_lines(env))
    rec.runtime = runtime
    rec.container = container.container_name(msg.queue_id, msg.job_id, msg.attempt)
    argv = container.run_argv(
        runtime=runtime, image=msg.image, name=rec.container, uid=uid, gid=gid,
        job_dir=str(d.path), workdir=str(workdir), artifacts=str(d.artifacts),
        # a shell without a command: the image's own, on the session's terminal
        script="" if msg.interactive and not msg.command.strip() else str(d.inner_script),
        env_file=str(d.container_env), gpus=msg.gpus,
        memory_mb=msg.memory_mb, cdi=container.has_cdi_gpus(), tty=msg.interactive)
    return "exec " + shlex.join(argv) + "\n"


def job_user(user: str) -> Who | None:
    """The uid and groups `user`'s job runs with; None for the runner's own user."""
    try:
        who = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"no user {user!r} on this node") from None
    if who.pw_uid == os.geteuid():
        return None
    return Who(who.pw_uid, frozenset(os.getgrouplist(who.pw_name, who.pw_gid)))


def as_user(user: str, d: JobDir) -> list[str]:
    """The prefix that runs the wrapper as `user` (exec, no fork: the pid stays the
    session leader the runner watches), with the job's directory made theirs. The
    runner itself keeps the logs (their descriptors are handed over)."""
    try:
        who = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"no user {user!r} on this node") from None
    if who.pw_uid == os.geteuid():
        return []
    if os.geteuid() != 0:
        raise LaunchError(f"the runner is not root, so it cannot run a job as {user}")
    for path in (d.path, d.artifacts, d.status, d.script):
        os.chown(path, who.pw_uid, who.pw_gid)
    # The job reaches its own directory through the runner's (0700) ones: let anyone
    # pass through them, still without listing them.
    for parent in (d.path.parent, d.path.parent.parent):
        mode = parent.stat().st_mode
        if mode & 0o011 != 0o011:
            parent.chmod((mode & 0o7777) | 0o011)
    return ["setpriv", f"--reuid={who.pw_uid}", f"--regid={who.pw_gid}", "--init-groups", "--"]


def _log_file(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    return os.fdopen(fd, "wb")
