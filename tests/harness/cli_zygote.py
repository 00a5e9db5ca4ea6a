"""A process that has imported the `nvq` CLI once and forks one CLI call after another
(run as a script by tests.harness.cli_calls, never imported by the tests).

A fresh interpreter per call spent 0.06-0.3 s of CPU importing the CLI before it ran
(and tests make thousands of calls); a fork of this process spends milliseconds. The
child is then an `nvq` process like any other: it gets its own argv, environment,
working directory, stdin/stdout/stderr (the caller's pipes, passed as descriptors),
user where asked, and runs `nvq/__main__.py` as `python -m nvq` would, and exits as
the interpreter would (run_as_main says how). The status its parent (this process)
reaps is sent back to the caller.

Fork safety: this process starts no thread and no event loop and sets no signal
handler (it was started as the call's own process would have been, so the
dispositions are those); the child reopens its stdio on the new descriptors the way
the interpreter does at start-up, and `random` reseeds itself after a fork. It imports
only stdlib and nvq: nothing of pytest or the tests is in the child's `sys.modules`.

Protocol, one connection per call on the Unix socket given as argv[1]: the caller
sends one JSON request (argv, env, cwd, user) with its three stdio descriptors
attached; the answer is two lines, the child's pid and then its raw wait status.
The zygote exits when its own stdin (a pipe from the caller) closes."""

from __future__ import annotations

import array
import atexit
import faulthandler
import gc
import importlib
import importlib.util
import io
import json
import os
import pkgutil
import runpy
import select
import signal
import socket
import sys
import threading
from typing import Any, NoReturn

MAX_REQUEST = 1 << 20


def preload(everything: bool) -> None:
    """Import what a CLI call imports before it reaches its command: the CLI's own
    modules (the fast path, typer and every command's module). `everything` imports
    every module of nvq and nvq_runner as well, and the stdlib modules they may load
    late: a call that becomes another OS user cannot read root's Python afterwards."""
    import nvq
    import nvq.cli

    packages = [nvq.cli]
    if everything:
        import nvq_runner

        packages = [nvq, nvq_runner]
    for pkg in packages:
        for found in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not found.name.endswith("__main__"):
                importlib.import_module(found.name)
    for name in ("nvq.client", "nvq.config", "nvq.remote", "nvq.cli.main"):
        importlib.import_module(name)
    if everything:
        for name in ("encodings.idna", "shlex", "socket", "email.utils"):
            importlib.import_module(name)


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        chunk, ancdata, _, _ = conn.recvmsg(MAX_REQUEST, socket.CMSG_LEN(3 * fds.itemsize))
        if not chunk:
            raise EOFError("the caller hung up before its request was whole")
        data += chunk
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return json.loads(data), list(fds)


def serve(listener: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Fork a child per request; return only in a child, with its request and stdio."""
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd → (pid, connection)
    while True:
        ready, _, _ = select.select([listener, sys.stdin, *waiting], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            os._exit(0)  # the caller is gone
        for pidfd in [fd for fd in ready if isinstance(fd, int)]:
            pid, conn = waiting.pop(pidfd)
            _, status = os.waitpid(pid, 0)
            os.close(pidfd)
            with conn:
                conn.sendall(f"{status}\n".encode())
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        try:
            request, fds = _recv_request(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        if threading.active_count() != 1:
            raise RuntimeError("a thread in the zygote: forking it would be unsafe")
        pid = os.fork()
        if pid == 0:
            listener.close()
            conn.close()
            for pidfd, (_, other) in waiting.items():
                os.close(pidfd)
                other.close()
            return request, fds
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        waiting[os.pidfd_open(pid)] = (pid, conn)


def _stdio(fd: int, like: Any) -> io.TextIOWrapper:
    """A stream on `fd` as the interpreter makes its own at start-up (create_stdio in
    pylifecycle.c), with the encoding, errors and buffering of this process's `like`
    (chosen from the same environment)."""
    write = fd != 0
    buffered = not like.write_through  # PYTHONUNBUFFERED (or -u) makes them write through
    buffering = 0 if write and not buffered else -1
    buf: Any = open(fd, "wb" if write else "rb", buffering, closefd=False)  # noqa: SIM115
    raw = buf.raw if hasattr(buf, "raw") else buf
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    line_buffering = buffered and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(buf, like.encoding, like.errors, "\n", line_buffering,
                              not buffered)
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    return stream


def become(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this fresh fork into the process `python -m nvq ARGV` would be. Signal
    dispositions are left as they are: this process installed none, and was started
    by the caller as the call's own process would have been."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)  # dup2 makes 0-2 inheritable, as a spawned process has them
        os.close(fd)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        stream = _stdio(fd, getattr(sys, f"__{name}__"))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    user = request.get("user")
    if user is not None:
        os.setgroups(user["groups"])
        os.setgid(user["gid"])
        os.setuid(user["uid"])
    # A call that hangs is asked for its stack (tests.harness.cli_calls): every
    # thread's, on its stderr.
    faulthandler.register(signal.SIGUSR2, file=sys.stderr, all_threads=True)
    # `python -m` puts the working directory first on the path (this script's own
    # directory is there now)
    sys.path[0] = os.getcwd()
    sys.argv = ["-m", *request["argv"]]


def _exit_code(exc: SystemExit) -> int:
    """The status the interpreter makes of an uncaught SystemExit (_Py_HandleSystemExit)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def run_as_main() -> NoReturn:
    """Run nvq/__main__.py as `python -m nvq` runs it, and end as the interpreter ends
    (Py_RunMain, Py_FinalizeEx): the status from an uncaught SystemExit, or the
    traceback and 1; then non-daemon threads joined, atexit handlers run, stdout and
    stderr flushed (120 where that fails), and an uncaught KeyboardInterrupt ends the
    process by SIGINT. Only the teardown of the modules is left out: it writes to the
    reference count of every object the zygote loaded and so copies its whole heap,
    page by page (half the CPU of a call), for nothing a call shows."""
    code, interrupted = 0, False
    try:
        # What runpy.run_module("nvq", run_name="__main__", alter_sys=True) does, with
        # the code read before the call became another user (who may not be able to
        # read a checkout under a 0700 directory, as `mktemp -d` makes).
        spec, code = MAIN
        runpy._run_module_code(code, None, "__main__", spec)  # type: ignore[attr-defined]
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


MAIN: tuple[Any, Any] = (None, None)  # nvq.__main__'s spec and code, read once as root


def main() -> None:
    global MAIN
    everything = sys.argv[2] == "everything"
    preload(everything)
    spec = importlib.util.find_spec("nvq.__main__")
    assert spec is not None and spec.loader is not None
    MAIN = (spec, spec.loader.get_code("nvq.__main__"))  # type: ignore[attr-defined]
    gc.collect()
    gc.freeze()  # the children's collector leaves the preloaded objects alone: no copy
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    print("ready", flush=True)
    request, fds = serve(listener)
    become(request, fds)
    run_as_main()


if __name__ == "__main__":
    main()
