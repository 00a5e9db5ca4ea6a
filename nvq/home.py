"""`$NVQ_HOME`: where the queue host keeps its config, database, socket, pid file and
logs. One type names every path, so the daemon, backups and the client agree on them,
and one place holds the single-daemon lock."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO


class AlreadyRunning(Exception):
    """Another daemon holds this home's lock."""


def default_root() -> Path:
    return Path(os.environ.get("NVQ_HOME") or Path.home() / ".nvq").expanduser()


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def from_env(cls) -> Home:
        return cls(default_root())

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def db(self) -> Path:
        return self.root / "queue.db"

    @property
    def socket(self) -> Path:
        return self.root / "daemon.sock"

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
    def keeper_log(self) -> Path:
        return self.root / "keeper.log"

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
