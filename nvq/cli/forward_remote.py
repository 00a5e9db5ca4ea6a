"""`job forward` over `[remote]`: the local port is opened on this machine; each
connection to it runs `nvq job forward ID PORT --stdio` on the queue host over its own
ssh call, whose stdin/stdout then carry the connection's bytes (the queue host relays
them to the job's node over the node's link, as for a local forward)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from typing import Any

from nvq.cli.params import CliError
from nvq.cli.port_relay import serve_forward
from nvq.config import load_config
from nvq.home import default_root
from nvq.remote import SSH_UNREACHABLE, remote_command, shared_connection, ssh_argv


def forward_through_queue_host(job_id: int, port: int, local: int, as_json: bool) -> int:
    home = default_root()
    cfg = load_config(home).remote
    if cfg is None:
        raise CliError("job forward --over-remote: this machine has no [remote] section", 2)
    control = shared_connection(cfg, home)
    submitter = os.environ.get("NVQ_SUBMITTER")
    check = remote_command(cfg, ["job", "forward", str(job_id), str(port), "--check"], submitter)
    try:
        proc = subprocess.run(ssh_argv(cfg, check, stdin=False, control=control),
                              capture_output=True, check=False)
    except FileNotFoundError:
        raise CliError("[remote] needs the ssh client, and none is installed", 2) from None
    if proc.returncode != 0:
        if proc.returncode == SSH_UNREACHABLE:
            raise CliError(f"cannot reach the queue host {cfg.host} over ssh", SSH_UNREACHABLE)
        sys.stderr.buffer.write(proc.stderr)
        return proc.returncode
    where: dict[str, Any] = json.loads(proc.stdout)
    relay = remote_command(
        cfg, ["job", "forward", str(job_id), str(where["port"]), "--stdio"], submitter)
    argv = ssh_argv(cfg, relay, stdin=True, control=control)
    try:
        listener = socket.create_server(("127.0.0.1", local))
    except OSError as exc:
        raise CliError(f"cannot listen on local port {local}: {exc.strerror}", 1) from None

    def open_one() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    return serve_forward(listener, where, as_json, open_one, relay=_relay_process)


def _relay_process(conn: socket.socket, proc: subprocess.Popen[bytes]) -> None:
    """The connection's bytes to the ssh call's stdin, its stdout back, until either ends."""
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def up() -> None:
        try:
            while data := conn.recv(65536):
                stdin.write(data)
                stdin.flush()
        except OSError:
            pass
        try:
            stdin.close()
        except OSError:
            pass

    threading.Thread(target=up, daemon=True).start()
    try:
        while data := os.read(stdout.fileno(), 65536):
            conn.sendall(data)
    except OSError:
        pass
    finally:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()
        proc.wait()
