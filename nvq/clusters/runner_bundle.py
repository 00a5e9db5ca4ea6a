"""The pilots' runner, carried inside each pilot's batch script, for compute nodes that
do not see the login node's `home`.

nvq installs the runner for the pilots on the login node (`<home>/runner`, once per
version). Where the compute nodes share that home, a pilot finds it there (the shared
home is the cache). Where they do not, the pilot installs it itself from this bundle:
the same wheels and installer that bootstrap copies to a node, as a base64 tar in the
script, installed under a lock (pilots that start together on one node install once)
only when `<home>/runner/venv` does not hold this build.
"""

from __future__ import annotations

import base64
import io
import shlex
import tarfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import anyio.to_thread
import asyncssh

import nvq
from nvq.config import NodeConfig
from nvq.daemon.ssh.bootstrap import default_cache_dir
from nvq.daemon.ssh.errors import BootstrapError
from nvq.daemon.ssh.probe import probe, target_of
from nvq.daemon.ssh.wheels import WheelError, dependency_wheels, project_wheel

BUNDLE_END = "NVQ_RUNNER_BUNDLE"


@dataclass(frozen=True)
class RunnerBundle:
    data: str  # base64 of a tar.gz: node_installer.py and wheels/*.whl
    version: str
    build: str
    home: str  # the runner's home as the login node expands it
    executable: str  # the interpreter the login node's probe found


async def runner_bundle(
    conn: asyncssh.SSHClientConnection, node: NodeConfig, cache_dir: Path | None = None
) -> RunnerBundle:
    """The bundle for `node` (the login node with the runner's home), built from the
    wheels bootstrap cached. Raises `BootstrapError`."""
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    found = await probe(conn, node)
    try:
        wheel, build = await anyio.to_thread.run_sync(project_wheel, cache)
        deps = await anyio.to_thread.run_sync(dependency_wheels, target_of(node, found), cache)
    except (WheelError, OSError) as exc:
        raise BootstrapError(node, f"bundle for the pilots failed (on this host): {exc}") from exc
    data = await anyio.to_thread.run_sync(pack, [wheel, *deps])
    return RunnerBundle(data, nvq.__version__, build, found.home, found.executable)


def pack(wheels: list[Path]) -> str:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        installer = resources.files("nvq.daemon.ssh").joinpath("node_installer.py").read_bytes()
        info = tarfile.TarInfo("node_installer.py")
        info.size = len(installer)
        tar.addfile(info, io.BytesIO(installer))
        for wheel in wheels:
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
    return base64.encodebytes(raw.getvalue()).decode()


def install_lines(bundle: RunnerBundle) -> list[str]:
    """Batch script lines that install the bundle unless `<home>/venv` holds its build."""
    home = shlex.quote(bundle.home)
    mark = shlex.quote('"build": "' + bundle.build + '"')  # as the installer's json.dump writes it
    have = f'grep -qsF {mark} "$R/venv/nvq-build.json"'
    install = (
        f'"$X" "$B/node_installer.py" "$R" {shlex.quote(bundle.version)} '
        f'{shlex.quote(bundle.build)} "$B"/wheels/*.whl'
    )
    return [
        f"R={home}",
        f"if ! {have}; then",
        '  mkdir -p "$R"',
        # in a subshell of its own, whose trap removes the unpacked bundle however the
        # install ends (a failure under `set -e`, a scancel mid-way), and leaves any
        # trap of the cluster's setup lines alone
        "  (",
        "  B=$(mktemp -d)",
        '  trap \'rm -rf "$B"\' EXIT',
        f"  base64 -d > \"$B/runner.tgz\" <<'{BUNDLE_END}'",
        *bundle.data.splitlines(),
        BUNDLE_END,
        '  tar -xzf "$B/runner.tgz" -C "$B"',
        f"  X={shlex.quote(bundle.executable)}",
        # Said in the pilot's log (and its alert), not a silent end under `set -e`.
        '  test -x "$X" || X=$(command -v python3) || '
        '{ echo "nvq pilot: python3: not found on $(hostname)"; exit 127; }',
        f'  ( flock 9; {have} || {install} >&2 ) 9> "$R/.install"',
        "  )",
        "fi",
    ]
