"""Interactive work on an idle sshd node.

* `placed_to_prompt`: `job shell` sessions one after another (the default login shell,
  its rc files read), from the daemon's `job_dispatched` event to the first byte of
  the shell's prompt at the client (through the control socket: the runner starts
  ptyhost.py, the daemon opens a channel on the node's SSH connection to its socket).
  `submit_to_prompt`: from the Shell request's send. Goal: placed → prompt ≤ 1 s.
* `forward_mib_s`: bytes a job sends over one connection (`--mib` MiB), read through
  `nvq job forward`'s local port, beside the same through a plain `ssh -L` to the
  same node (one sshd, the same key and cipher defaults).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ONE_CARD, emit, machine, summary_ms, wait_nodes_up

from nvq import control as c
from nvq.cli.terminal import send
from nvq.client import Client
from nvq.model import JobSpec
from nvq_runner.protocol import FrameReader
from tests.cluster import make_nvq, write_mesh_config
from tests.harness.sshd import start_sshd_nodes

SERVER = """\
import os, socket
s = socket.create_server(("127.0.0.1", int(os.environ["NVQ_PORT"])))
block = bytes(1 << 20)
print("listening", flush=True)
while True:
    conn, _ = s.accept()
    try:
        for _ in range({mib}):
            conn.sendall(block)
    except OSError:
        pass
    conn.close()
"""


def one_shell(client: Client, command: str) -> tuple[int, float, float]:
    """(job id, time the request was sent, time the first output arrived)."""
    spec = JobSpec(command=command, gpus=1, vram_mb=1024, interactive=True)
    sent = time.time()
    sock = client.open_stream(c.Shell(spec=spec))
    frames = FrameReader()
    first = 0.0
    while True:
        data = sock.recv(65536)
        assert data, "the daemon closed the session"
        for payload in frames.feed(data):
            reply = c.reply_decoder.decode(payload)
            if isinstance(reply, c.Chunk) and not first:
                first = time.time()
                send(sock, c.TermInput(b"exit 0\n"))
            elif isinstance(reply, c.Progress) and "job" in reply.data:
                job_id = int(reply.data["job"])
            elif isinstance(reply, c.Done):
                sock.close()
                return job_id, sent, first


def read_all(port: int, mib: int) -> float:
    """Seconds to read everything the server sends on one connection."""
    t0 = time.monotonic()
    got = 0
    with socket.create_connection(("127.0.0.1", port)) as s:
        while data := s.recv(1 << 20):
            got += len(data)
    assert got == mib << 20, f"read {got} bytes of {mib} MiB"
    return time.monotonic() - t0


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--reads", type=int, default=3)
    # e.g. "exec bash --norc -i": the prompt without the login shell's rc files
    ap.add_argument("--command", default="", help="the session's command (default: login shell)")
    args = ap.parse_args()
    doc: dict[str, Any] = {"bench": "interactive", "machine": machine(), **vars(args)}
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-interactive-"))
    nvq = make_nvq(tmp, gpus=ONE_CARD, sample_interval=2.0)
    (node,) = start_sshd_nodes(tmp / "sshd", 1)
    try:
        write_mesh_config(nvq, [node], gpus=ONE_CARD, sample_interval=2.0, keepalive="5s")
        nvq.ok("queue", "status")
        wait_nodes_up(nvq)
        client = Client(nvq.home)
        placed, submitted, started = [], [], []
        for _ in range(args.sessions):
            job_id, sent, first = one_shell(client, args.command)
            events = nvq.json("queue", "events", "--job", str(job_id))["events"]
            dispatched = next(e["time"] for e in events if e["kind"] == "job_dispatched")
            began = next(e["time"] for e in events if e["kind"] == "job_started")
            placed.append(first - dispatched)
            started.append(first - began)
            submitted.append(first - sent)
        doc["placed_to_prompt"] = summary_ms(placed)
        doc["submit_to_prompt"] = summary_ms(submitted)
        # the runner's word that the shell's leader runs → the prompt at the client
        doc["started_to_prompt"] = summary_ms(started)

        assert nvq.cwd is not None
        (nvq.cwd / "serve.py").write_text(SERVER.format(mib=args.mib))
        job = nvq.submit("--gpus", "0", "--", "python3 -u serve.py")
        while "listening" not in nvq.run("job", "logs", str(job["id"])).out:
            time.sleep(0.1)
        port = nvq.show(job["id"])["port"]
        fwd = subprocess.Popen(
            [sys.executable, "-m", "nvq", "job", "forward", str(job["id"])],
            env=nvq.env, stdout=subprocess.PIPE, text=True,
        )
        lport = free_port()
        plain = subprocess.Popen([
            "ssh", "-N", "-p", str(node.port), "-i", str(node.identity),
            "-o", f"UserKnownHostsFile={node.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", "-L", f"{lport}:127.0.0.1:{port}",
            f"{node.user}@{node.host}",
        ])
        try:
            assert fwd.stdout is not None
            nvq_port = int(fwd.stdout.readline().split()[1].rsplit(":", 1)[1].strip("/"))
            wait_port(lport)
            figures: dict[str, list[float]] = {"nvq_forward": [], "ssh_L": []}
            for _ in range(args.reads):  # alternated, so both see the same machine
                figures["nvq_forward"].append(args.mib / read_all(nvq_port, args.mib))
                figures["ssh_L"].append(args.mib / read_all(lport, args.mib))
            doc["forward_mib_s"] = {k: round(sorted(v)[len(v) // 2], 1) for k, v in figures.items()}
        finally:
            fwd.terminate()
            plain.terminate()
            fwd.wait()
            plain.wait()
    finally:
        nvq.shutdown()
        node.close()
        shutil.rmtree(tmp, ignore_errors=True)
    emit(doc)


if __name__ == "__main__":
    main()
