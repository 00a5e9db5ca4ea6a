"""`--json` reads over `[remote]` at local speed: the queue host's daemon socket is
forwarded to this machine over the shared connection (the master's `-O forward -L`, a
direct-streamlocal channel per connection: no login shell, no `nvq` started there),
and the read's fast path (nvq.cli.fast) asks it as it asks a local daemon. The daemon
sees the user the connection logged in as (sshd connects to the socket as that user),
so rights are those of every forwarded command, and the document is the one the
daemon writes, byte for byte.

Only `--json` reads that are one plain-wire request (`READS`): their text forms may
render with this machine's clock and time zone, and the others stream or act. Where
the forward cannot be made, or no daemon answers through it (none runs there yet: the
forwarded command starts it), the command is forwarded whole, as any other.

The socket's path there is `[remote] home`'s (a `~` in it is the remote user's home),
else `$NVQ_HOME` or `~/.nvq` as the queue host's shell has them, asked once per setting
and kept beside the control socket."""

from __future__ import annotations

import json
import os
import subprocess

from nvq.remote_share import alive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nvq.config import RemoteConfig

READS = frozenset({
    ("job", "show"), ("job", "ls"), ("job", "result"), ("job", "why"),
    ("queue", "status"), ("queue", "nodes"), ("queue", "alerts"), ("queue", "lanes"),
    ("queue", "lane"),
})


def read_here(cfg: RemoteConfig, control: str | None, argv: list[str],
              ssh: list[str]) -> int | None:
    """The exit status of `argv` answered here through the forwarded socket; None: not
    such a read, or no answer that way (forward it whole). `ssh` is a session's argv
    up to the host (to ask where the socket is there)."""
    if control is None or "--json" not in argv or tuple(argv[:2]) not in READS:
        return None
    from nvq.cli.fast import fast_command

    command = fast_command(argv)
    if command is None:
        return None
    local = forwarded_socket(cfg, control, ssh)
    if local is None:
        return None
    from nvq.cli import reading
    from nvq.client.plain import NotAnswering

    reading.forwarded = local
    try:
        return command.run(True)
    except NotAnswering:
        return None
    finally:
        reading.forwarded = None


def forwarded_socket(cfg: RemoteConfig, control: str, ssh: list[str]) -> str | None:
    """This machine's end of the forward (made when missing), or None."""
    local = control + ".d"
    if alive(local):
        return local
    import fcntl

    with open(control + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if alive(local):
            return local
        there = socket_there(cfg, control, ssh)
        if there is None:
            return None
        try:
            os.unlink(local)  # a forward of a master that is gone
        except FileNotFoundError:
            pass
        subprocess.run(
            ["ssh", "-o", "LogLevel=QUIET", "-o", f"ControlPath={control}", "-O", "forward",
             "-L", f"{local}:{there}", cfg.host],
            stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return local if alive(local) else None


def socket_there(cfg: RemoteConfig, control: str, ssh: list[str]) -> str | None:
    """The daemon socket's path on the queue host: from `[remote] home`, or as its
    shell resolves the default; asked once per setting."""
    kept = control + ".where"
    try:
        with open(kept, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("home") == cfg.home and isinstance(doc.get("socket"), str):
            return str(doc["socket"])
    except (OSError, ValueError, AttributeError):
        pass
    proc = subprocess.run([*ssh, 'printf "%s\\n%s\\n" "$HOME" "${NVQ_HOME-}"'],
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    lines = proc.stdout.decode(errors="replace").split("\n")
    if proc.returncode != 0 or len(lines) < 2 or not lines[0].startswith("/"):
        return None
    socket = resolve(cfg.home, home=lines[0], nvq_home=lines[1])
    with open(kept, "w", encoding="utf-8") as f:
        json.dump({"home": cfg.home, "socket": socket}, f)
    return socket


def resolve(setting: str | None, *, home: str, nvq_home: str) -> str:
    """The queue host's `$NVQ_HOME/daemon.sock`, as its `nvq` would find it (a `~` and
    a relative path are the remote user's home's)."""
    root = setting if setting else (nvq_home or "~/.nvq")
    if root == "~" or root.startswith("~/"):
        root = home + root[1:]
    elif not root.startswith("/"):
        root = os.path.join(home, root)
    return os.path.join(root, "daemon.sock")
