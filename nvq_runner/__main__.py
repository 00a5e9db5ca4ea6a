"""`python -m nvq_runner serve|start|attach|stop --home DIR`. Imports are deferred so
`attach` (run on every SSH connection) starts fast."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvq_runner",
                                     description="nvq node runner")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("serve", "run the runner in the foreground"),
        ("start", "start the runner in the background unless it runs"),
        ("attach", "start the runner if needed and splice stdin/stdout to its socket"),
        ("stop", "stop the runner (jobs keep running)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--home", default="~/.nvq", help="runner state directory")
        if name == "serve":
            p.add_argument("--detach", action="store_true", help=argparse.SUPPRESS)
    pty = sub.add_parser("pty-attach", help="splice stdin/stdout to a session's terminal")
    pty.add_argument("--sock", required=True, help="the session's pty.sock")
    pty.add_argument("--wait", type=float, default=30.0, help="seconds to wait for it")
    pk = sub.add_parser("pack", help="write a file or directory to stdout as a tar stream")
    pk.add_argument("--path", required=True)
    port = sub.add_parser("port-connect", help="splice stdin/stdout to a local TCP port")
    port.add_argument("--port", type=int, required=True)
    ex = sub.add_parser("pty-exec", help="a shell or command inside a running job, on a pty")
    ex.add_argument("--pid", type=int, required=True, help="the job's leader process")
    ex.add_argument("--dir", required=True, help="the job's directory")
    ex.add_argument("--cmd", default="", help="the command (default: a shell)")
    ex.add_argument("--rows", type=int, default=24)
    ex.add_argument("--cols", type=int, default=80)
    ex.add_argument("--no-tty", action="store_true", help="pipes, stdout and stderr apart")
    args = parser.parse_args(argv)
    if args.command == "pty-exec" and args.no_tty:
        from .pipeexec import pipe_exec

        return pipe_exec(args.pid, str(Path(args.dir).expanduser()), args.cmd)
    if args.command == "pty-exec":
        from .ptyexec import pty_exec

        return pty_exec(args.pid, str(Path(args.dir).expanduser()), args.cmd, args.rows, args.cols)
    if args.command == "pack":
        from .pack import pack

        return pack(str(Path(args.path).expanduser()))
    if args.command == "port-connect":
        from .port_connect import port_connect

        return port_connect(args.port)
    if args.command == "pty-attach":
        from .ptyattach import pty_attach

        return pty_attach(Path(args.sock).expanduser(), args.wait)
    home = Path(args.home).expanduser().absolute()

    if args.command == "attach":
        from .attach import attach

        return attach(home)
    if args.command == "serve":
        from .process import serve

        return serve(home, detach=args.detach)

    from .launcher import RunnerError, ensure_running, stop

    if args.command == "start":
        try:
            print(ensure_running(home))
        except RunnerError as exc:
            print(f"nvq_runner: {exc}", file=sys.stderr)
            return 1
        return 0
    if not stop(home):
        print("nvq_runner: no runner running", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
