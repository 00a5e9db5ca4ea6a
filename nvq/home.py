"""`$NVQ_HOME`: where the queue host keeps its config, database, socket, pid file and
logs. One type names every path, so the daemon, backups and the client agree on them,
and one place holds the single-daemon lock."""

from __future__ import annotations

import fcntl
import functools
import grp
import os
import pwd
import stat
from pathlib import Path

from nvq.errors import UserError
from nvq.home_root import config_text, root_text, socket_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and msgspec cost a CLI call milliseconds
    from typing import IO



# sun_path holds 108 bytes with the terminating NUL.
MAX_SOCKET_PATH = 107


def socket_path_problem(path: Path) -> str | None:
    """Why a Unix socket cannot live at `path` (the fix included), or None."""
    size = len(os.fsencode(path))
    if size <= MAX_SOCKET_PATH:
        return None
    return (
        f"NVQ_HOME {path.parent} is too long for a Unix socket ({size} bytes, the limit "
        f"is {MAX_SOCKET_PATH}): use a shorter NVQ_HOME"
    )


@functools.cache
def queue_owner() -> str:
    """The OS user this process runs as: for the daemon, the queue's owner (always
    an admin, and the user whose jobs run as the runner itself)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class AlreadyRunning(UserError):
    """Another daemon holds this home's lock."""


def default_root() -> Path:
    return Path(root_text())


class Home:
    """The paths under one `$NVQ_HOME`. (Not a dataclass: importing dataclasses costs
    every CLI call milliseconds.)"""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Home is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Home) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Home(root={self.root!r})"

    @classmethod
    def from_env(cls) -> Home:
        return cls(default_root())

    @property
    def config(self) -> Path:
        return Path(config_text(str(self.root)))

    @property
    def db(self) -> Path:
        return self.root / "queue.db"

    @property
    def socket(self) -> Path:
        return Path(socket_text(str(self.root)))

    @property
    def lock_file(self) -> Path:
        return self.root / "daemon.lock"

    @property
    def pid_file(self) -> Path:
        return self.root / "daemon.pid"

    @property
    def log(self) -> Path:
        return self.root / "daemon.log"

    @property
    def wheels(self) -> Path:
        """Bootstrap's cache of the wheels it ships to nodes."""
        return self.root / "wheels"

    @property
    def keeper_marker(self) -> Path:
        """Which keeper is installed (supervisor or systemd unit), as JSON."""
        return self.root / "keeper.json"

    @property
    def keeper_pid(self) -> Path:
        return self.root / "keeper.pid"

    @property
    def stopped_mark(self) -> Path:
        """Left by `nvq daemon stop`: a client that only observes starts no daemon
        while it is there (nvq.client.stop_mark)."""
        return self.root / "daemon.stopped"

    @property
    def keeper_log(self) -> Path:
        return self.root / "keeper.log"

    def make_private(self, members_group: str | None = None) -> None:
        """Create the home 0700 (0710 and group-owned with `members_group`: members may
        reach the socket inside, nothing else), narrow it if it exists and is ours, and
        take group and other bits off the files nvq keeps at its top."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.root.stat()
        if st.st_uid != os.getuid():
            return  # not ours to change (a root daemon for a shared home, say)
        mode = 0o700
        if members_group is not None:
            gid = grp.getgrnam(members_group).gr_gid
            if st.st_gid != gid:
                os.chown(self.root, -1, gid)
            mode = 0o710
        if stat.S_IMODE(st.st_mode) != mode:
            self.root.chmod(mode)
        for entry in self.root.iterdir():
            try:
                est = entry.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(est.st_mode) or est.st_uid != os.getuid() or entry == self.socket:
                continue
            if stat.S_IMODE(est.st_mode) & 0o077:
                entry.chmod(stat.S_IMODE(est.st_mode) & 0o700)

    def take_lock(self) -> IO[str]:
        """One daemon per home: an flock held for the daemon's whole life."""
        handle = open(self.lock_file, "a+")  # noqa: SIM115 - held until exit
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            pid = self.read_pid()
            raise AlreadyRunning(
                f"a daemon is already running for {self.root}" + (f" (pid {pid})" if pid else "")
            ) from None
        return handle

    def read_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None


def owns_home(root: Path) -> bool:
    """Whether this user owns the queue's home (a home not made yet will be theirs)."""
    try:
        return root.stat().st_uid == os.geteuid()
    except FileNotFoundError:
        return True
    except OSError:
        return False
