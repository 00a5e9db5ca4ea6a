"""Rootful Podman for tests: a store of the test's own (its own containers.conf and
storage.conf, passed as CONTAINERS_CONF / CONTAINERS_STORAGE_CONF), and a small image
built from Debian's static busybox with `podman import` (no registry is reachable).

The settings are those that work in this sandbox: runc, the cgroupfs manager, no
default ulimits; the vfs driver needs no overlay mounts."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

IMAGE = "localhost/nvq-test:1"
PYTHON_IMAGE = "localhost/nvq-test-python:1"
# What the in-job `nvq` (job_cli.py) never imports: left out of the python image.
_UNNEEDED = {"test", "idlelib", "tkinter", "ensurepip", "lib2to3", "pydoc_data", "unittest",
             "distutils", "site-packages", "dist-packages", "asyncio", "email", "xml",
             "multiprocessing", "sqlite3", "curses", "venv", "turtledemo", "ctypes",
             "__pycache__", "concurrent", "http", "urllib", "wsgiref", "xmlrpc", "dbm"}
BUSYBOX = Path("/bin/busybox")
APPLETS = ("sh", "echo", "cat", "ls", "id", "env", "sleep", "pwd", "test", "[", "mkdir")


def podman_missing() -> str | None:
    """Why Podman cannot run here (None: it can)."""
    if shutil.which("podman") is None or shutil.which("runc") is None:
        return "podman or runc is not installed (make parts installs them)"
    if not BUSYBOX.is_file():
        return "busybox-static is not installed (make parts installs it)"
    if os.geteuid() != 0:
        return "these tests run rootful Podman, as root"
    return None


class PodmanStore:
    """One test's container store; `env` is what a runner (or podman) needs to use it."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.conf = directory / "containers.conf"
        self.conf.write_text(
            '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n'
            'runtime = "runc"\n'
        )
        # Podman's exit command (`podman container cleanup`, run by conmon when the
        # container ends) refuses a runroot over 50 characters, and `podman run` then
        # waits 20 s for the exit it never records: keep it short, outside the test's
        # tree, and the same for the same store (a test may open its store twice).
        digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
        self.runroot = Path("/tmp") / f"nvq-pm-{digest}"  # not $TMPDIR: it may be long
        self.runroot.mkdir(mode=0o700, exist_ok=True)
        self.storage_conf = directory / "storage.conf"
        self.storage_conf.write_text(
            f'[storage]\ndriver = "vfs"\ngraphroot = "{directory / "graph"}"\n'
            f'runroot = "{self.runroot}"\n'
        )
        self.env = {"CONTAINERS_CONF": str(self.conf),
                    "CONTAINERS_STORAGE_CONF": str(self.storage_conf)}

    def podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["podman", *args], env={**os.environ, **self.env}, check=check,
                              capture_output=True, text=True, timeout=120)

    def build_busybox(self, ref: str = IMAGE) -> str:
        """Import a busybox image as `ref`; returns its id."""
        root = self.dir / "rootfs"
        (root / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy(BUSYBOX, root / "bin" / "busybox")
        for applet in APPLETS:
            link = root / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")
        (root / "tmp").mkdir(exist_ok=True)
        # Whatever umask an earlier test left: "/" and /bin must be open to the member
        # uid a container runs as (a 0700 "/" makes even /run/podman-init unreachable).
        root.chmod(0o755)
        (root / "bin").chmod(0o755)
        (root / "bin" / "busybox").chmod(0o755)
        (root / "tmp").chmod(0o1777)
        tarball = self.dir / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        return self.podman("import", "-q", str(tarball), ref).stdout.strip()

    def build_python(self, ref: str = PYTHON_IMAGE) -> str:
        """An image with busybox and this machine's python3 at the same path (its
        libraries and the part of the standard library a job's `nvq` needs): enough
        for the in-job `nvq` to run in a container. Returns its id."""
        root = self.dir / "rootfs-python"
        python = Path(os.path.realpath(sys.executable))
        files = [python, *_libraries(python)]
        for f in files:
            target = root / str(f).lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)  # follows links: the file itself, at the linked name
        stdlib = Path(os.__file__).parent
        shutil.copytree(stdlib, root / str(stdlib).lstrip("/"), symlinks=True,
                        ignore=_not_needed, dirs_exist_ok=True)
        (root / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy(BUSYBOX, root / "bin" / "busybox")
        for applet in APPLETS:
            link = root / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")
        (root / "tmp").mkdir(exist_ok=True)
        for d in [root, *[p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()]]:
            d.chmod(0o755)
        (root / "tmp").chmod(0o1777)
        tarball = self.dir / "rootfs-python.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        return self.podman("import", "-q", str(tarball), ref).stdout.strip()

    def containers(self) -> list[str]:
        """Names of every container in this store, running or not."""
        out = self.podman("ps", "-a", "--format", "{{.Names}}").stdout
        return [line for line in out.splitlines() if line]

    def close(self) -> None:
        """Remove what is left (a failed test's containers), then the store itself."""
        self.podman("rm", "-a", "-f", "-t", "0", check=False)
        self.podman("rmi", "-a", "-f", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.runroot, ignore_errors=True)


def _libraries(binary: Path) -> list[Path]:
    """The shared libraries `binary` loads (ldd), the loader included."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        path = line.split("=>")[-1].split("(")[0].strip()
        if path.startswith("/"):
            found.append(Path(path))
    return found


def _not_needed(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in _UNNEEDED or n.startswith("config-")}
