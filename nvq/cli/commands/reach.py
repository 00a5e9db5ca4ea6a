"""Reaching into a running job: `job exec` (a shell or command beside it, on its node,
with its environment) and `job forward` (a local port to a port on its node)."""

from __future__ import annotations

import shlex
import socket
import sys
import threading
from typing import Any

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.remote import FORWARD_FLAG

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("exec")
def job_exec(
    job_id: int = typer.Argument(..., help="A running job."),
    command: list[str] = typer.Argument(None, help="The command, after -- (default: a shell)."),
) -> int:
    """A shell, or one command, inside a running job: its node, cards, environment and
    directory. The job is not touched; this ends with the command's exit code."""
    from nvq import control as c
    from nvq.cli.terminal import run_session, window
    from nvq.client import Client

    body = "" if not command else command[0] if len(command) == 1 else shlex.join(command)
    rows, cols = window()
    sock = Client().open_stream(c.Exec(id=job_id, command=body, rows=rows, cols=cols))
    done = run_session(sock, placed_at_once=True, quiet=True)
    if done.error:
        print(f"nvq: {done.error}", file=sys.stderr)
    return done.exit_code


@on_job.command("forward")
def job_forward(
    job_id: int = typer.Argument(..., help="A running job."),
    port: int = typer.Argument(0, help="The port on the job's node (default: its $NVQ_PORT)."),
    local: int = typer.Option(0, "--local", help="The local port (default: any free one)."),
    stdio: bool = typer.Option(False, "--stdio", hidden=True),
    check: bool = typer.Option(False, "--check", hidden=True),
    over_remote: bool = typer.Option(False, FORWARD_FLAG, hidden=True),
    as_json: bool = JsonOpt,
) -> int:
    """Forward a local port to a port on a running job's node, until Ctrl-C."""
    from nvq import control as c
    from nvq.client import Client

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


def serve_forward(
    listener: socket.socket, where: dict[str, Any], as_json: bool, open_one: Any,
    relay: Any = None,
) -> int:
    """Accept local connections until Ctrl-C; each is relayed by `open_one()`'s stream
    (a daemon connection; with `relay`, whatever `relay(conn, upstream)` pumps)."""
    lport = listener.getsockname()[1]
    doc = {**where, "local_port": lport, "url": f"http://127.0.0.1:{lport}/"}
    emit(doc, as_json, f"forwarding {doc['url']} to port {where['port']} on {where['node']} "
         f"(job {where['job']}); Ctrl-C stops")
    sys.stdout.flush()
    try:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=_relay_one, args=(conn, open_one, relay), daemon=True).start()
    except KeyboardInterrupt:
        return 0
    finally:
        listener.close()


def _relay_one(conn: socket.socket, open_one: Any, relay: Any) -> None:
    try:
        upstream = open_one()
    except Exception:  # the daemon refused (job ended): drop this connection
        conn.close()
        return
    if relay is not None:
        relay(conn, upstream)
        return
    _pump(conn.recv, conn.sendall, conn, upstream)


def _relay_stdio(upstream: socket.socket) -> int:
    import os

    def read(n: int) -> bytes:
        return os.read(0, n)

    def write(data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    _pump(read, write, None, upstream)
    return 0


def _pump(read: Any, write: Any, conn: socket.socket | None, upstream: socket.socket) -> None:
    """Local bytes → TermInput frames; the daemon's Chunks → local, until either ends."""
    from nvq import control as c
    from nvq.cli.terminal import send
    from nvq_runner.protocol import FrameReader

    def up() -> None:
        try:
            while data := read(65536):
                send(upstream, c.TermInput(data))
        except OSError:
            pass
        # End of the local side's input: the node's side sees end of input too.
        with_suppress(lambda: upstream.shutdown(socket.SHUT_WR))

    threading.Thread(target=up, daemon=True).start()
    frames = FrameReader()
    try:
        while data := upstream.recv(65536):
            for payload in frames.feed(data):
                reply = c.reply_decoder.decode(payload)
                if isinstance(reply, c.Chunk):
                    write(reply.data)
                elif isinstance(reply, c.Done):
                    return
    except OSError:
        pass
    finally:
        upstream.close()
        if conn is not None:
            # shutdown first: it wakes the reading thread, which close alone does not
            with_suppress(lambda: conn.shutdown(socket.SHUT_RDWR))
            conn.close()


def with_suppress(fn: Any) -> None:
    try:
        fn()
    except OSError:
        pass
