"""`$NVQ_SOCKET`: the socket in each running attempt's directory on which the job's own
`nvq` reaches its queue. Every connection is carried, byte for byte, over the runner's
link to the daemon (protocol.py), which answers as the job's owner while the attempt
runs. The socket lives exactly as long as the attempt: made before the job starts,
made again for an attempt adopted after a runner restart, removed when it ends.

The socket is 0600 and belongs to the job's user; the runner also checks each peer's
uid (its own or the job's), so no one else's process is carried. The job finds an
`nvq` first on its PATH (`.nvq-bin/nvq` in its directory): a shell script that runs
a copy of `job_cli.py`, which needs nothing but the standard library, so a node with
only the bootstrapped runner venv runs it, and so does a member's job."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import shlex
import socket
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .jobfiles import JobDir
from .protocol import RelayDown, RelayUp, RunnerMsg, Start

log = logging.getLogger(__name__)
SOCKET_NAME = "nvq.sock"
BIN = ".nvq-bin"
# sockaddr_un holds 108 bytes: a longer path is bound relative to the runner's home
# (its cwd), and the job's client reaches it through its directory (job_cli.py).
MAX_SUN_PATH = 100
_JOB_CLI = Path(__file__).with_name("job_cli.py")


@dataclass(eq=False)
class _Offer:
    job_id: int
    attempt: int
    path: Path
    uid: int
    server: asyncio.Task[asyncio.AbstractServer]
    clients: set[int] = field(default_factory=set)


class JobSockets:
    """Every running attempt's socket, and the connections relayed through them."""

    def __init__(self, send: Callable[[RunnerMsg], bool]) -> None:
        self._send = send  # False: no daemon connected
        self._offers: dict[int, _Offer] = {}  # job id → its running attempt's socket
        self._clients: dict[int, asyncio.StreamWriter] = {}  # req → connection
        self._next_req = 0

    def offer(self, msg: Start, d: JobDir) -> Path | None:
        """The attempt's socket, open, when the daemon serves it (spawn.py puts it in
        the job's environment, and `d/.nvq-bin` first on its PATH)."""
        return self.open(msg.job_id, msg.attempt, d) if msg.relay else None

    def open(self, job_id: int, attempt: int, d: JobDir) -> Path:
        self.close(job_id)
        owner = d.path.stat()
        path = d.path / SOCKET_NAME
        path.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            bound = str(path) if len(str(path)) <= MAX_SUN_PATH else os.path.relpath(path)
            sock.bind(bound)
            os.chmod(path, 0o600)
            os.chown(path, owner.st_uid, owner.st_gid)
            sock.listen(16)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        _write_shim(d.path / BIN, owner.st_uid, owner.st_gid)
        offer = _Offer(job_id, attempt, path, owner.st_uid, server=None)  # type: ignore[arg-type]
        offer.server = asyncio.get_running_loop().create_task(
            asyncio.start_unix_server(lambda r, w: self._serve(offer, r, w), sock=sock)
        )
        self._offers[job_id] = offer
        return path

    def reopen(self, job_id: int, attempt: int, d: JobDir) -> None:
        """An attempt adopted after a runner restart: its socket is served again."""
        if (d.path / SOCKET_NAME).exists():
            try:
                self.open(job_id, attempt, d)
            except OSError as exc:
                log.warning("job %s: cannot serve its socket again: %s", job_id, exc)

    def close(self, job_id: int) -> None:
        """The attempt ended: its socket goes, with every connection on it."""
        offer = self._offers.pop(job_id, None)
        if offer is None:
            return
        offer.server.cancel()
        if offer.server.done() and not offer.server.cancelled():
            offer.server.result().close()
        else:
            offer.server.add_done_callback(_close_server)
        with contextlib.suppress(OSError):
            offer.path.unlink()
        for req in offer.clients:
            writer = self._clients.pop(req, None)
            if writer is not None:
                writer.close()

    def connection_lost(self) -> None:
        """The daemon went away: no answer can come to what it was asked."""
        for writer in self._clients.values():
            writer.close()
        self._clients.clear()

    def on_down(self, msg: RelayDown) -> None:
        writer = self._clients.get(msg.req)
        if writer is None:
            return
        if msg.data:
            writer.write(msg.data)
        if msg.eof:
            del self._clients[msg.req]
            writer.close()

    async def _serve(
        self, offer: _Offer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if _peer_uid(writer) not in (offer.uid, os.geteuid()):
            writer.close()
            return
        self._next_req += 1
        req = self._next_req
        self._clients[req] = writer
        offer.clients.add(req)
        try:
            while req in self._clients:
                data = await reader.read(65536)
                if req not in self._clients:
                    break  # answered and closed (on_down): nothing more to carry
                up = RelayUp(req=req, job_id=offer.job_id, attempt=offer.attempt,
                             data=data, eof=not data)
                if not self._send(up):
                    break
                if not data:  # the answer may still come: on_down closes the connection
                    await writer.wait_closed()
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        self._clients.pop(req, None)
        offer.clients.discard(req)
        writer.close()


def _close_server(task: asyncio.Task[asyncio.AbstractServer]) -> None:
    if not task.cancelled() and task.exception() is None:
        task.result().close()


def _peer_uid(writer: asyncio.StreamWriter) -> int:
    sock = writer.get_extra_info("socket")
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _write_shim(bin_dir: Path, uid: int, gid: int) -> None:
    """`nvq` for the job: job_cli.py, beside it (the job's user may not reach the
    runner's installed files), run isolated from the job's PYTHONPATH and cwd."""
    bin_dir.mkdir(mode=0o700, exist_ok=True)
    cli = bin_dir / "job_cli.py"
    own = (uid, gid) == (os.geteuid(), os.getegid())
    if not (own and _link_shared_cli(bin_dir.parent.parent.parent, cli)):
        cli.write_bytes(_job_cli_bytes())
    shim = bin_dir / "nvq"
    shim.write_text(_shim_text(cli))
    shim.chmod(0o700)
    if not own:
        for path in (bin_dir, cli, shim):
            os.chown(path, uid, gid)


def _job_cli_bytes() -> bytes:
    global _cli_bytes
    if _cli_bytes is None:
        _cli_bytes = _JOB_CLI.read_bytes()
    return _cli_bytes


def _shim_text(cli: Path) -> str:
    global _python
    if _python is None:
        _python = shlex.quote(os.path.realpath(sys.executable))
    # A member may not reach the runner's interpreter either (a 0700 home): then the
    # node's python3, which job_cli.py needs nothing more of.
    return (
        "#!/bin/sh\n# nvq inside a job: talks to this job's queue through $NVQ_SOCKET\n"
        f"py={_python}; [ -x \"$py\" ] || py=python3\n"
        # in a container image without python: say so, not "python3: not found"
        "command -v \"$py\" >/dev/null 2>&1 || { echo \"nvq: no python3 here to run nvq (it "
        "needs python3's standard library only); the queue is at $NVQ_SOCKET\" >&2; exit 127; }\n"
        f"exec \"$py\" -I {shlex.quote(str(cli))} \"$@\"\n"
    )


def _link_shared_cli(home: Path, cli: Path) -> bool:
    """A job of the runner's own user gets job_cli.py as a hard link to one copy in the
    runner's home (`shims/`, named by its content): a link makes no inode, and on ext4
    without a journal each new inode is searched for past the recently freed ones, a
    cost every job paid for this file. False: copy it (a member's job, whose file is
    chowned to them; another filesystem; anything unexpected)."""
    data = _job_cli_bytes()
    shared = home / "shims" / f"job_cli-{hashlib.sha256(data).hexdigest()[:16]}.py"
    try:
        if shared not in _shared_ok:
            if not shared.exists():
                shared.parent.mkdir(mode=0o700, exist_ok=True)
                tmp = shared.with_name(f".{shared.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                tmp.replace(shared)
            _shared_ok.add(shared)
        with contextlib.suppress(FileNotFoundError):
            cli.unlink()  # an earlier attempt's, in this directory
        try:
            os.link(shared, cli)
        except OSError as exc:
            if exc.errno != errno.EMLINK:
                raise
            # ext4 allows 65,000 links to one inode: a new copy takes the name (the
            # old one stays whole for the jobs that link it)
            tmp = shared.with_name(f".{shared.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(shared)
            os.link(shared, cli)
        return True
    except OSError:
        _shared_ok.discard(shared)
        return False


_cli_bytes: bytes | None = None
_python: str | None = None
_shared_ok: set[Path] = set()  # shared copies known to exist (made by this runner)
