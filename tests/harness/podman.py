"""Rootful Podman for tests: a store of the test's own (its own containers.conf and
storage.conf, passed as CONTAINERS_CONF / CONTAINERS_STORAGE_CONF), and a small image
built from Debian's static busybox with `podman import` (no registry is reachable).

The settings are those that work in this sandbox: runc, the cgroupfs manager, no
default ulimits; the vfs driver needs no overlay mounts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

IMAGE = "localhost/nvq-test:1"
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
        self.storage_conf = directory / "storage.conf"
        self.storage_conf.write_text(
            f'[storage]\ndriver = "vfs"\ngraphroot = "{directory / "graph"}"\n'
            f'runroot = "{directory / "run"}"\n'
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

    def containers(self) -> list[str]:
        """Names of every container in this store, running or not."""
        out = self.podman("ps", "-a", "--format", "{{.Names}}").stdout
        return [line for line in out.splitlines() if line]

    def close(self) -> None:
        """Remove what is left (a failed test's containers), then the store itself."""
        self.podman("rm", "-a", "-f", "-t", "0", check=False)
        self.podman("rmi", "-a", "-f", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
