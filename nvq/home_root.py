"""`$NVQ_HOME` before anything else: where it is, as text, and the umask everything
under it is made with, with nothing but `os`. Every CLI call needs them first, before
it knows whether it needs more; nvq.home's `Home`, which names every path under the
root, imports pathlib and the user databases."""

from __future__ import annotations

import os

# What every file and directory nvq makes gets (0600 / 0700), whatever the caller's
# umask: the queue's database, logs and backups are its owner's alone.
PRIVATE_UMASK = 0o077


def root_text() -> str:
    """`$NVQ_HOME`, else `~/.nvq` (nvq.home.default_root is this as a Path)."""
    return os.path.expanduser(os.environ.get("NVQ_HOME") or os.path.join(
        os.path.expanduser("~"), ".nvq"))


def socket_text(root: str) -> str:
    """The daemon's socket under `root` (nvq.home.Home.socket)."""
    return os.path.join(root, "daemon.sock")


def config_text(root: str) -> str:
    """The config file under `root` (nvq.home.Home.config)."""
    return os.path.join(root, "config.toml")
