"""`pty-exec --no-tty`: one command inside a running job's allocation without a
terminal (`nvq job exec ID -- CMD` with stdin not a terminal, as `docker exec` without
`-t`): its stdout and stderr stay apart, its stdin is the caller's bytes unechoed.

The job's world (environment, directory, user) is ptyexec's. The command runs in a
session of its own, so it ends without touching the job; its exit code is this
process's. On stdin come ptyhost's frames (`d` data; an empty `d` is the end of the
input, and the command's stdin is closed); on stdout go frames of the same shape,
`o` for the command's stdout and `e` for its stderr. The caller going away (stdin
closed) or SIGTERM here hangs the command up (SIGHUP, SIGKILL after a grace)."""

from __future__ import annotations

import contextlib
import os
import pwd
import select
import signal
import subprocess
import time

from . import ptyhost
from .ptyexec import exec_world


def _as_user(uid: int) -> None:
    """In the child, before exec: the job's user, with their groups."""
    if uid == os.geteuid():
        return
    who = pwd.getpwuid(uid)
    os.initgroups(who.pw_name, who.pw_gid)
    os.setgid(who.pw_gid)
    os.setuid(uid)


def pipe_exec(pid: int, jobdir: str, command: str) -> int:
    world = exec_world(pid, jobdir, command, tty=False)
    if world is None:
        return 1
    argv, env, cwd, uid = world
    wake_r = ptyhost.wakeup_pipe()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd if os.path.isdir(cwd) else None, start_new_session=True,
            preexec_fn=lambda: _as_user(uid),  # one thread here: preexec_fn is safe
        )
    except OSError as exc:
        _write(1, ptyhost.frame(b"e", f"nvq: cannot start {argv[0]}: {exc}\n".encode()))
        return 127
    return _pump(proc, wake_r)


def _write(fd: int, data: bytes) -> bool:
    try:
        ptyhost._write_all(fd, data)
    except OSError:
        return False
    return True


def _pump(proc: subprocess.Popen[bytes], wake_r: int) -> int:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    outs = {proc.stdout.fileno(): b"o", proc.stderr.fileno(): b"e"}
    to_child = proc.stdin.fileno()
    os.set_blocking(to_child, False)
    pending = b""
    closing = False  # the input ended: close the child's stdin once `pending` is out
    inp: int | None = 0
    frames = ptyhost.Frames()
    hangup_at: float | None = None
    while outs or proc.poll() is None:
        readable_fds = [wake_r, *outs, *([inp] if inp is not None else [])]
        writable_fds = [to_child] if pending and to_child >= 0 else []
        timeout = 0.2 if not outs else None  # the streams closed: wait for its exit
        if hangup_at is not None:
            timeout = 0.2
        readable, writable, _ = select.select(readable_fds, writable_fds, [], timeout)
        if wake_r in readable:
            signals = os.read(wake_r, 512)
            if any(s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) for s in signals):
                hangup_at = hangup_at or _hang_up(proc)
        for fd in [f for f in outs if f in readable]:
            data = os.read(fd, ptyhost.BUF)
            if not data:
                del outs[fd]
            elif not _write(1, ptyhost.frame(outs[fd], data)):
                hangup_at = hangup_at or _hang_up(proc)
        if inp is not None and inp in readable:
            data = os.read(inp, ptyhost.BUF)
            if not data:  # the caller went away
                inp = None
                hangup_at = hangup_at or _hang_up(proc)
            for kind, payload in frames.feed(data):
                if kind != b"d":
                    continue  # a window size: no terminal to size
                if payload:
                    pending += payload
                else:
                    closing = True
        if to_child >= 0 and to_child in writable:
            try:
                pending = pending[os.write(to_child, pending):]
            except BlockingIOError:
                pass
            except OSError:  # it closed its stdin: the rest has nowhere to go
                pending = b""
        if closing and not pending and to_child >= 0:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            to_child = -1
        if hangup_at is not None and time.monotonic() >= hangup_at + ptyhost.HANGUP_GRACE:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
    status = proc.wait()
    return 128 - status if status < 0 else status


def _hang_up(proc: subprocess.Popen[bytes]) -> float:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGHUP)
        os.killpg(proc.pid, signal.SIGCONT)
    return time.monotonic()
