"""The leader of an interactive job (`nvq job shell`): what wrapper.sh is to a batch job,
plus a terminal.

The runner starts this, instead of wrapper.sh, as the leader of the job's new session
(`python -I ptyhost.py <jobdir> <umask>`; stdlib only, so a job run as another user
can run a copy from its own directory with the system interpreter). Being the session
leader it can make a fresh pty the session's controlling terminal, so the shell runs
in the job's own session: its GPU processes are the job's, as a batch job's are.

It listens on `<jobdir>/pty.sock` for one client (the daemon's relay, through
`nvq_runner pty-attach`), then runs the job's script with bash on the pty (or, for an
empty script, the user's shell), and pumps bytes: pty output goes to the client as
it is; the client sends frames (`d` data, `w` window size), each a kind byte and a
4-byte big-endian length before the payload. The session ends when the shell exits;
its status is recorded in `<jobdir>/exit` exactly as the wrapper records a batch job's.
When the client goes away, or the runner ends the job (SIGTERM to this process group),
the shell is hung up (SIGHUP to its process groups, SIGKILL if it lingers).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import select
import signal
import socket
import struct
import sys
import termios
import time

SOCK = "pty.sock"
HEADER = struct.Struct(">cI")
WINSIZE = struct.Struct(">HH")  # rows, cols
ATTACH_TIMEOUT = 120.0  # nobody came for the terminal: the session is not used
HANGUP_GRACE = 5.0  # after SIGHUP, before SIGKILL
IDLE_STEP = 20.0  # how often the idle line may change (it counts whole minutes)
BUF = 65536
ENDED_BY_QUEUE = b"\r\n[nvq] the queue ended this session\r\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [], 1.0)


def _send(wfd: int | None, data: bytes) -> int | None:
    """Write all of `data` to the client; None once it is gone."""
    if wfd is None:
        return None
    try:
        _write_all(wfd, data)
    except OSError:
        return None
    return wfd


def _listen(jobdir: str) -> socket.socket:
    """Bound relative to the job directory: its absolute path may be too long for
    sockaddr_un."""
    here = os.getcwd()
    os.chdir(jobdir)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SOCK)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(SOCK)
        finally:
            os.umask(old)
        sock.listen(1)
    finally:
        os.chdir(here)
    return sock


def _argv(jobdir: str) -> list[str]:
    script = os.path.join(jobdir, "script")
    with open(script, "rb") as f:
        body = f.read().strip()
    if body:
        return ["bash", script]
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell or "/bin/bash"
    except KeyError:
        shell = "/bin/bash"
    return [shell if os.path.isfile(shell) else "/bin/bash"]


def child(
    slave: int, argv: list[str], closing: list[int], *, new_session: bool = False,
    env: dict[str, str] | None = None, cwd: str | None = None, uid: int | None = None,
) -> None:
    """In the forked child: own process group in the foreground of the pty, the pty as
    stdin/out/err, default signal dispositions, then exec. `new_session` (job exec):
    a session of its own with the pty as its terminal, as `uid` when that differs."""
    try:
        if new_session:
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        else:
            os.setpgid(0, 0)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # tcsetpgrp from the background
        os.tcsetpgrp(slave, os.getpid())
        for sig in (signal.SIGTTOU, signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                    signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for fd in closing:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target in (0, 1, 2):
            os.dup2(slave, target)
        if slave > 2:
            os.close(slave)
        if uid is not None and uid != os.geteuid():
            who = pwd.getpwuid(uid)
            os.initgroups(who.pw_name, who.pw_gid)
            os.setgid(who.pw_gid)
            os.setuid(uid)
        if cwd is not None:
            with contextlib.suppress(OSError):
                os.chdir(cwd)
        if env is None:
            os.execvp(argv[0], argv)
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:  # nothing may return into the parent's code
        with contextlib.suppress(Exception):
            os.write(2, f"nvq: cannot start {argv[0]}: {exc}\r\n".encode())
    os._exit(127)


class Frames:
    """The client's frames, as they arrive in pieces."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self.buf += data
        out = []
        while len(self.buf) >= HEADER.size:
            kind, size = HEADER.unpack_from(self.buf)
            if len(self.buf) < HEADER.size + size:
                break
            out.append((kind, self.buf[HEADER.size:HEADER.size + size]))
            self.buf = self.buf[HEADER.size + size:]
        return out


def frame(kind: bytes, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def _status_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def set_size(master: int, rows: int, cols: int) -> None:
    """The terminal's size (the kernel tells its foreground group with SIGWINCH)."""
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def wakeup_pipe() -> int:
    """Signals arrive as bytes on the returned fd (select wakes on them): TERM, INT
    and HUP are handled (so the child gets them back at their defaults), CHLD wakes
    the loop when the shell ends."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    return wake_r


def run(jobdir: str, umask: int) -> int:
    with open(os.path.join(jobdir, "wrapper.pid"), "w") as f:
        f.write(f"{os.getpid()}\n")
    wake_r = wakeup_pipe()
    listener = _listen(jobdir)
    ready, _, _ = select.select([listener], [], [], ATTACH_TIMEOUT)
    if not ready:
        print("nvq: nobody attached to the session's terminal", file=sys.stderr)
        return _finish(jobdir, 1, listener)
    conn = listener.accept()[0]
    os.umask(umask)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)  # this session's controlling terminal
    pid = os.fork()
    if pid == 0:
        child(slave, _argv(jobdir), [master, wake_r, listener.fileno(), conn.fileno()])
    os.close(slave)
    code = pump(master, pid, conn.fileno(), conn.fileno(), wake_r,
                status_file=os.path.join(jobdir, "status"))
    conn.close()
    return _finish(jobdir, code, listener)


def idle_line(seconds: float) -> str:
    """The session's progress line: how long its terminal has had no keystroke, in
    whole minutes (`job ls`, the TUI and the web page show it)."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "interactive: active"
    return f"interactive: idle {minutes}m" if minutes < 120 else f"interactive: idle {minutes // 60}h"


def pump(master: int, pid: int, rfd: int, wfd: int, wake_r: int,
         status_file: str | None = None) -> int:
    """Relay between the client (frames in on `rfd`, raw bytes out on `wfd`) and the
    pty until the child `pid` ends; its exit code in the shell's convention. The
    client leaving, or SIGTERM/INT/HUP here, hangs the child up. `status_file`: where
    to keep the session's idle line (idle_line)."""
    os.set_blocking(master, False)
    last_input = time.monotonic()
    shown = ""
    frames = Frames()
    hangup_at: float | None = None
    status: int | None = None
    master_open = True
    out: int | None = wfd
    inp: int | None = rfd
    while status is None:
        if status_file is not None:
            line = idle_line(time.monotonic() - last_input)
            if line != shown:
                shown = line
                with contextlib.suppress(OSError), open(status_file, "w") as f:
                    f.write(line + "\n")
        watch = [wake_r] + ([master] if master_open else []) + ([inp] if inp is not None else [])
        timeout = None if hangup_at is None else max(0.0, hangup_at + HANGUP_GRACE - time.monotonic())
        if status_file is not None:
            timeout = IDLE_STEP if timeout is None else min(timeout, IDLE_STEP)
        readable, _, _ = select.select(watch, [], [], timeout)
        if wake_r in readable:
            signals = os.read(wake_r, 512)
            if any(s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) for s in signals):
                out = _send(out, ENDED_BY_QUEUE)
                hangup_at = hangup_at or _hang_up(pid, master)
        if master_open and master in readable:
            try:
                data = os.read(master, BUF)
            except BlockingIOError:
                data = None
            except OSError as exc:  # EIO: every slave descriptor is closed
                if exc.errno != errno.EIO:
                    raise
                data = b""
            if data == b"":
                master_open = False
            elif data is not None:
                out = _send(out, data)
        if inp is not None and inp in readable:
            try:
                data = os.read(inp, BUF)
            except OSError:
                data = b""
            if not data:
                inp = None
                hangup_at = hangup_at or _hang_up(pid, master)
            for kind, payload in frames.feed(data):
                if kind == b"d":
                    last_input = time.monotonic()
                    _write_all(master, payload)
                elif kind == b"w" and len(payload) == WINSIZE.size:
                    set_size(master, *WINSIZE.unpack(payload))
        if hangup_at is not None and time.monotonic() >= hangup_at + HANGUP_GRACE:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
    # The child is gone: what it wrote last still reaches the client.
    with contextlib.suppress(OSError):
        while out is not None:
            data = os.read(master, BUF)
            if not data:
                break
            out = _send(out, data)
    os.close(master)
    return _status_code(status)


def _hang_up(pid: int, master: int) -> float:
    """SIGHUP to the shell's group and to the terminal's foreground group (what a
    terminal that goes away does); the caller SIGKILLs after the grace."""
    groups = {pid}
    with contextlib.suppress(OSError):
        groups.add(os.tcgetpgrp(master))
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGHUP)
            os.killpg(group, signal.SIGCONT)
    return time.monotonic()


def _finish(jobdir: str, code: int, listener: socket.socket) -> int:
    listener.close()
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(jobdir, SOCK))
    os.umask(0o077)
    with open(os.path.join(jobdir, "exit"), "w") as f:
        f.write(f"{code}\n")
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], int(sys.argv[2], 8) if len(sys.argv) > 2 and sys.argv[2] else 0o022))
