"""Reaching into a running job: `job exec` (a shell or command beside it, on its node,
with its environment) and `job forward` (a local port to a port on its node)."""

from __future__ import annotations

import shlex
import socket
import sys
from typing import Any

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.port_relay import pump, serve_forward
from nvq.cli.render.output import emit
from nvq.remote import FORWARD_FLAG

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("exec")
def job_exec(
    job_id: int = typer.Argument(..., help="A running job."),
    command: list[str] = typer.Argument(None, help="The command, after -- (default: a shell)."),
    tty: bool = typer.Option(
        False, "--tty", "-t", help="A terminal even when stdin is not one (as ssh -t)."
    ),
) -> int:
    """A shell, or one command, inside a running job: its node, cards, environment and
    directory. The job is not touched; this ends with the command's exit code.

    On a terminal (stdin is one, or -t) it runs on a pty; otherwise, as `docker exec`
    without -t, stdout and stderr stay apart and stdin is passed through as it is."""
    from nvq import control as c
    from nvq.cli.terminal import run_session, window
    from nvq.client import Client

    body = "" if not command else command[0] if len(command) == 1 else shlex.join(command)
    rows, cols = window()
    on_pty = tty or sys.stdin.isatty()
    sock = Client().open_stream(
        c.Exec(id=job_id, command=body, rows=rows, cols=cols, tty=on_pty)
    )
    done = run_session(sock, placed_at_once=True, quiet=True, pty=on_pty)
    if done.error:
        print(f"nvq: {done.error}", file=sys.stderr)
    return done.exit_code


@on_job.command("forward")
def job_forward(
    job_id: int = typer.Argument(..., help="A running job."),
    port: int = typer.Argument(0, help="The port on the job's node (default: its $NVQ_PORT)."),
    local: int = typer.Option(
        0, "--port-local", help="The port on this machine (default: any free one)."),
    # its name until `--local` became only the [remote] opt-out before the command words:
    # after them it is unambiguous, so scripts that give it still work
    old_local: int | None = typer.Option(None, "--local", hidden=True),
    stdio: bool = typer.Option(False, "--stdio", hidden=True),
    check: bool = typer.Option(False, "--check", hidden=True),
    over_remote: bool = typer.Option(False, FORWARD_FLAG, hidden=True),
    as_json: bool = JsonOpt,
) -> int:
    """Forward a local port to a port on a running job's node, until Ctrl-C."""
    from nvq import control as c
    from nvq.client import Client

    if old_local is not None:
        if local:
            raise CliError("give the port on this machine once, as --port-local", 2)
        local = old_local
    if not 0 <= port <= 65535 or not 0 <= local <= 65535:
        raise CliError("a port is a number from 1 to 65535", 2)
    if over_remote:
        from nvq.cli.forward_remote import forward_through_queue_host

        return forward_through_queue_host(job_id, port, local, as_json)
    client = Client()
    if stdio:  # one connection over stdin/stdout: what a [remote] forward runs
        return _relay_stdio(client.open_stream(c.Forward(id=job_id, port=port)))
    where: dict[str, Any] = client.request(c.Forward(id=job_id, port=port, check=True)).data
    if check:  # where it would go, as JSON: what a [remote] forward asks first
        emit(where, True)
        return 0
    try:
        listener = socket.create_server(("127.0.0.1", local))
    except OSError as exc:
        raise CliError(f"cannot listen on local port {local}: {exc.strerror}", 1) from None
    return serve_forward(listener, where, as_json,
                         lambda: client.open_stream(c.Forward(id=job_id, port=where["port"])))


def _relay_stdio(upstream: socket.socket) -> int:
    import os

    def read(n: int) -> bytes:
        return os.read(0, n)

    def write(data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    pump(read, write, None, upstream)
    return 0
