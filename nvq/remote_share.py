"""One SSH connection to the queue host, shared by every `[remote]` call (OpenSSH's
connection sharing): the first call starts a master (`ssh -M -N -f`) that holds the
connection and stays `[remote] keep_connection` (default 5 minutes: long enough that
an agent's or a person's run of commands shares one login, short enough that nothing
lingers long after the last one) after its last session; every call is then a
session on that open connection instead of a TCP connect, key exchange and login.

The control socket lives in a private (0700) directory: `$NVQ_HOME/ssh`, or, where that
path would be too long for a Unix socket, `$XDG_RUNTIME_DIR/nvq-ssh` or `/tmp/nvq-ssh-UID`,
taken only when it is this user's own directory with no other access (never through a
link). Its name is a hash of every setting that decides the connection, so a changed
`[remote]` gets a connection of its own. A master that died leaves its socket behind
(refusing connections): it is removed and a new master started. Concurrent first calls
queue on a lock beside the socket, so one of them starts the master and the others use
it (ssh's own `ControlMaster=auto` race prints an error and connects separately).
Every call but the master's is `ControlMaster=no`: it never becomes a master itself.

Where no private directory can be had, calls connect each on their own, as before.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from nvq.errors import Internal

TYPE_CHECKING = False  # not from typing: every forwarded CLI call imports this module

if TYPE_CHECKING:
    from nvq.config import RemoteConfig

# A master whose peer vanished (the laptop slept, the network changed) ends after this
# many unanswered keepalives, rather than holding calls on a dead connection.
ALIVE_INTERVAL_S = 10
ALIVE_COUNT = 3
# sun_path holds 107 bytes; ssh binds "<path>.<16 random characters>" first, then links it.
MAX_PATH = 107 - 17


def control_dir_candidates(home: str) -> list[str]:
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return [
        os.path.join(home, "ssh"),
        *([os.path.join(runtime, "nvq-ssh")] if runtime else []),
        os.path.join("/tmp", f"nvq-ssh-{uid}"),
    ]


def socket_name(cfg: RemoteConfig) -> str:
    import hashlib

    key = "\0".join(str(v) for v in (
        cfg.host, cfg.port, cfg.user, cfg.identity, cfg.known_hosts, cfg.jump))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def private_dir(path: str) -> bool:
    """Make `path` (0700) or accept it as it is when it is ours and closed to others."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    import stat

    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and stat.S_IMODE(st.st_mode) & 0o077 == 0)


def control_path(cfg: RemoteConfig, home: str) -> str | None:
    """The control socket's path, in the first private directory short enough (None:
    sharing is off, or has no place)."""
    if cfg.keep_connection <= 0:
        return None
    name = socket_name(cfg)
    for directory in control_dir_candidates(home):
        path = os.path.join(directory, name)
        if len(path.encode()) <= MAX_PATH and private_dir(directory):
            return path
    return None


def alive(path: str) -> bool:
    """A master answers on `path` (a socket left by a dead one refuses)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def persist(cfg: RemoteConfig) -> str:
    return f"ControlPersist={max(1, round(cfg.keep_connection))}"


def share_options(path: str) -> list[str]:
    """What makes an ssh call a session on the master at `path`. Given before the
    connection's options: ssh takes an option's first value, and these calls say
    nothing of their own. The master connected with the same settings moments ago; what
    ssh would say here is that a session was refused (more at once than the server's
    MaxSessions, 10 by default, or the master gone meanwhile), after which it connects
    on its own, as it must, and the command runs all the same."""
    return ["-o", "LogLevel=QUIET", "-o", "ControlMaster=no", "-o", f"ControlPath={path}"]


class MasterFailed(Internal):
    """The master could not connect: ssh's exit status and what it said."""

    def __init__(self, code: int, stderr: bytes) -> None:
        super().__init__(code)
        self.code = code
        self.stderr = stderr


def ensure_master(cfg: RemoteConfig, path: str, connect: list[str]) -> None:
    """A master on `path`, started with the connection options `connect` unless one
    answers already. Raises MasterFailed when it cannot connect."""
    if alive(path):
        return
    import fcntl

    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another call may be starting it right now
        if alive(path):
            return
        try:
            os.unlink(path)  # a dead master's socket: ssh -M will not replace it
        except FileNotFoundError:
            pass
        argv = [
            "ssh", "-M", "-N", "-f", *connect,
            "-o", f"ControlPath={path}", "-o", persist(cfg),
            "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
            "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
            cfg.host,
        ]
        # -f: ssh returns once logged in, the master living on detached (its stdio
        # /dev/null, in a session of its own, so a Ctrl-C here does not reach it)
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise MasterFailed(proc.returncode, proc.stderr)


def stop_master(path: str, host: str) -> None:
    """End the master on `path`, if one answers (its sessions end with it)."""
    if alive(path):
        subprocess.run(["ssh", "-o", f"ControlPath={path}", "-O", "exit", host],
                       stdin=subprocess.DEVNULL, capture_output=True, check=False)


def report(exc: MasterFailed) -> None:
    sys.stderr.buffer.write(exc.stderr)
    sys.stderr.flush()
