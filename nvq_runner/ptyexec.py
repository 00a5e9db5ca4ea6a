"""`pty-exec --pid PID --dir JOBDIR [--cmd CMD]`: a shell or one command inside a
running job's allocation (`nvq job exec`), on a fresh pty, with stdin/stdout speaking
ptyhost.py's frames to the daemon.

It takes the job's world from its leader process itself (/proc/PID): the environment
the job was started with (CUDA_VISIBLE_DEVICES, NVQ_*, the job's own variables), its
directory and its user. The command runs in a session of its own, so it ends without
touching the job; its exit code is this process's. In an image job it runs inside the
job's container (`<runtime> exec`, by the name the attempt record holds)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import ptyhost
from .jobfiles import JobDir


def job_world(pid: int, jobdir: str) -> tuple[dict[str, str], str, int]:
    """(environment, directory, uid) of the job whose leader is `pid`; ValueError when
    `pid` is not that job's leader (it ended, or the pid was reused)."""
    proc = Path(f"/proc/{pid}")
    try:
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        raw = (proc / "environ").read_bytes()
        cwd = os.readlink(proc / "cwd")
        uid = proc.stat().st_uid
    except OSError as exc:
        raise ValueError(f"the job's process {pid} is gone ({exc.strerror})") from None
    if jobdir.encode() not in cmdline:
        raise ValueError(f"process {pid} is not this job's")
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env, cwd, uid


def in_container(jobdir: str, command: str, *, tty: bool = True) -> list[str] | None:
    """The runtime's `exec` into an image job's running container (its user, working
    directory and environment are the container's own); None for a bare job. `tty`:
    the runtime makes a terminal in the container (without, the streams stay pipes)."""
    rec = JobDir.load_record(Path(jobdir) / "attempt.json")
    if rec is None or not rec.container:
        return None
    shell = ["/bin/sh", "-c", command] if command else ["/bin/sh"]
    return [rec.runtime, "exec", "--interactive", *(["--tty"] if tty else []), rec.container,
            *shell]


def argv_for(jobdir: str, command: str, env: dict[str, str], *, tty: bool) -> list[str]:
    """What `job exec` runs: in an image job's container, else `bash -c COMMAND`, or
    with no command the user's shell."""
    contained = in_container(jobdir, command, tty=tty)
    if contained is not None:
        return contained
    if command:
        return ["bash", "-c", command]
    shell = env.get("SHELL") or "/bin/bash"
    return [shell if os.path.isfile(shell) else "/bin/bash"]


def exec_world(
    pid: int, jobdir: str, command: str, *, tty: bool
) -> tuple[list[str], dict[str, str], str, int] | None:
    """(argv, environment, directory, uid) of what `job exec` runs beside job `pid`;
    None (said on stderr) when that job's process is gone."""
    try:
        env, cwd, uid = job_world(pid, jobdir)
    except ValueError as exc:
        print(f"nvq_runner: {exc}", file=sys.stderr)
        return None
    # An image job's leader is the runtime's client, run as the runner with its
    # settings (CONTAINERS_CONF…): `exec` runs the same way, from its world.
    return argv_for(jobdir, command, env, tty=tty), env, cwd, uid


def pty_exec(pid: int, jobdir: str, command: str, rows: int, cols: int) -> int:
    world = exec_world(pid, jobdir, command, tty=True)
    if world is None:
        return 1
    argv, env, cwd, uid = world
    wake_r = ptyhost.wakeup_pipe()
    master, slave = os.openpty()
    ptyhost.set_size(master, rows, cols)
    child = os.fork()
    if child == 0:
        ptyhost.child(slave, argv, [master, wake_r], new_session=True, env=env, cwd=cwd, uid=uid)
    os.close(slave)
    return ptyhost.pump(master, child, 0, 1, wake_r)
