"""Mounting a LazyFS: whether this node can, doing it in a thread of the runner, and
taking it down again, including the mounts a killed runner left behind.

The filesystem runs inside the runner (a thread per mount, libfuse's own threads for
requests), so its chunk fetches ride the runner's link to the queue host. When the
runner dies the kernel keeps the mount point, dead ("Transport endpoint is not
connected"); `clean_stale` lazily unmounts every FUSE mount under the runner's home at
start-up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

MOUNT_WAIT = 10.0
_starting = threading.Lock()


def unavailable() -> str | None:
    """Why this node cannot mount on-demand artifacts, or None when it can."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as exc:
        return f"cannot open /dev/fuse: {exc.strerror}"
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian: fuse3)"
    try:
        import mfusepy  # noqa: F401  (loads libfuse through ctypes)
    except (ImportError, OSError) as exc:
        return f"cannot load libfuse3 through mfusepy: {exc}"
    return None


def fuse_mounts(under: Path) -> list[str]:
    """Mount points of FUSE filesystems at or below `under`, deepest first."""
    prefix = str(under).rstrip("/") + "/"
    found: list[str] = []
    with contextlib.suppress(OSError), open("/proc/self/mounts") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 3 or not fields[2].startswith("fuse"):
                continue
            point = fields[1].encode().decode("unicode_escape")
            if point == str(under) or point.startswith(prefix):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def unmount(point: str) -> None:
    """Lazy unmount: a job process still holding a file open does not stop it."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount")
    if tool is not None:
        subprocess.run([tool, "-u", "-z", point], capture_output=True, check=False)
    if point in fuse_mounts(Path(point)):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def clean_stale(under: Path) -> list[str]:
    points = fuse_mounts(under)
    for point in points:
        unmount(point)
    return points


class Mount:
    """A LazyFS served at `point` by a thread of this process."""

    def __init__(self, operations: Any, point: Path, *, readonly: bool = False,
                 allow_other: bool = False) -> None:
        self.operations = operations
        self.readonly = readonly  # the kernel refuses every write (EROFS)
        # Another user's job (the runner is root) may enter it; the kernel still checks
        # each access against the owner and modes the filesystem reports.
        self.allow_other = allow_other
        self.point = point
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name=f"fuse {point}", daemon=True)

    def _serve(self) -> None:
        import mfusepy

        try:
            options: dict[str, bool] = {"allow_other": True} if self.allow_other else {}
            mfusepy.FUSE(self.operations, str(self.point), foreground=True,
                         fsname="nvq-artifacts", default_permissions=True,
                         ro=self.readonly, **options)
        except BaseException as exc:  # reported by start()
            self.error = exc

    def start(self) -> None:
        self.point.mkdir(parents=True, exist_ok=True)
        # libfuse's fuse_main changes the whole process's directory to / once mounted
        # (daemon habit, foreground or not); the runner binds its socket relative to
        # its home, so the directory is put back. One mount starts at a time, or one
        # could "restore" the / another one left.
        with _starting:
            cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
            try:
                self._thread.start()
                self._wait_mounted()
                self._wait_for_chdir()
            finally:
                os.fchdir(cwd)
                os.close(cwd)

    def _wait_mounted(self) -> None:
        deadline = time.monotonic() + MOUNT_WAIT
        while str(self.point) not in fuse_mounts(self.point):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise OSError(f"could not mount {self.point}: {self.error or 'timed out'}")
            time.sleep(0.02)

    @staticmethod
    def _wait_for_chdir() -> None:
        """fuse_main mounts, then changes directory: wait for the second step."""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if os.getcwd() == "/":
                    return
            time.sleep(0.002)

    def stop(self) -> None:
        unmount(str(self.point))
        self._thread.join(timeout=MOUNT_WAIT)
