"""Install the runner on a node (`nvq node bootstrap NAME`, and the daemon's first connect).

`bootstrap_node(conn, node)` leaves ``<home>/venv`` on the node such that
``<home>/venv/bin/python -m nvq_runner attach --home <home>`` runs exactly this version of
nvq (`nvq.__version__`, and the very files this queue host runs):

1. **probe** (`probe.py`) — one command with `node.python` (default ``python3`` from the
   node's PATH): its version (Python >= 3.9 is required), implementation, machine and
   libc, the node's home expanded, and what ``<home>/venv`` holds (runner version and
   build id). When both match, nothing is done (unless `force`).
2. **build** (`wheels.py`, on the queue host, cached under `cache_dir`, default
   ``$NVQ_HOME/wheels``): a wheel of this project and wheels of the runner's
   dependencies for the node's interpreter.
3. **copy** — the wheels and the installer (`node_installer.py`) over SFTP to
   ``<home>/wheels/``.
4. **install** — the installer, run by the probed interpreter, builds ``<home>/venv.new``
   (``venv --without-pip``: no ensurepip needed, so Debian's python3 without
   python3-venv works), unpacks the wheels into its site-packages (the nvq wheel without
   its dependencies: the runner needs only msgspec, nvidia-ml-py and mfusepy), imports
   `nvq_runner`, `msgspec` and `pynvml` there, records the build in
   ``venv/nvq-build.json`` and only then swaps it in for ``<home>/venv``. A failed
   install leaves the previous venv untouched.

A runner already running on the node keeps its old code until it is restarted
(``<home>/venv/bin/python -m nvq_runner stop --home <home>``; jobs keep running):
`BootstrapResult.installed` tells the caller that a restart is due.

Which interpreter the daemon runs on a node (`runner_python`): ``<home>/venv/bin/python``,
the bootstrapped venv, when `node.python` is its default ``python3``; a `node.python`
the config sets is asked at the first connection whether it imports nvq_runner
(`opener.imports_runner`): used as is when it does, else it is the venv's base like
``python3`` (`opener.runner_node` remembers which). Bootstrap always uses
`node.python` as the venv's base interpreter.

Every failure is a `BootstrapError` (a `NodeUnreachable`): one line naming the node, the
step and the tail of what went wrong, e.g. ``node gpu1 (10.0.0.5:22): bootstrap failed
at install: venv: [Errno 28] No space left on device``.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import anyio
import anyio.to_thread
import asyncssh
import msgspec

import nvq
from nvq.config import NodeConfig
from nvq.daemon.ssh.connection import run_command
from nvq.daemon.ssh.errors import BootstrapError, tail
from nvq.daemon.ssh.probe import probe, target_of
from nvq.daemon.ssh.wheels import WheelError, dependency_wheels, project_wheel
from nvq.home import Home

__all__ = [
    "BootstrapError",
    "BootstrapResult",
    "bootstrap_node",
    "default_cache_dir",
    "runner_python",
]

_INSTALLER_NAME = "nvq-install.py"
_INSTALLER_STEPS = ("venv", "install", "verify", "swap")
_DEFAULT_PYTHON: str = next(
    f.default for f in msgspec.structs.fields(NodeConfig) if f.name == "python"
)


@dataclass(frozen=True)
class BootstrapResult:
    python: str  # <home>/venv/bin/python on the node, absolute and expanded
    version: str  # the nvq_runner version now installed there
    installed: bool  # False: it was already up to date and nothing changed
    seconds: float


def runner_python(node: NodeConfig) -> str:
    """The interpreter `attach_command` should run on this node: `node.python` when set
    explicitly (any value but the default), else the bootstrapped ``<home>/venv/bin/python``
    (a leading ``~`` is left for the node's shell)."""
    if node.python != _DEFAULT_PYTHON:
        return node.python
    return posixpath.join(node.home, "venv", "bin", "python")


def default_cache_dir() -> Path:
    """``$NVQ_HOME/wheels`` (``~/.nvq/wheels``)."""
    return Home.from_env().wheels


def _installer() -> str:
    return resources.files("nvq.daemon.ssh").joinpath("node_installer.py").read_text()


async def bootstrap_node(
    conn: asyncssh.SSHClientConnection,
    node: NodeConfig,
    *,
    force: bool = False,
    cache_dir: Path | None = None,
) -> BootstrapResult:
    """Make ``<home>/venv`` on `node` run this exact nvq_runner (see the module doc).
    `conn` is an open connection to the node (`connect_node`). Raises `BootstrapError`
    (or `NodeUnreachable` when the link fails)."""
    start = time.monotonic()
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    version = nvq.__version__

    def local(step: str, exc: BaseException) -> BootstrapError:
        return BootstrapError(node, f"bootstrap failed at {step} (on this host): {exc}")

    try:
        wheel, build = await anyio.to_thread.run_sync(project_wheel, cache)
    except (WheelError, OSError) as exc:
        raise local("build", exc) from exc
    found = await probe(conn, node)
    venv_python = posixpath.join(found.home, "venv", "bin", "python")
    if not force and found.installed == version and found.build == build:
        return BootstrapResult(venv_python, version, False, time.monotonic() - start)

    target = target_of(node, found)
    try:
        deps = await anyio.to_thread.run_sync(dependency_wheels, target, cache)
    except (WheelError, OSError) as exc:
        raise local("build", exc) from exc

    wheels_dir = posixpath.join(found.home, "wheels")
    installer = posixpath.join(wheels_dir, _INSTALLER_NAME)
    files = [wheel, *deps]
    try:
        async with conn.start_sftp_client() as sftp:
            await sftp.makedirs(wheels_dir, exist_ok=True)
            await sftp.put([str(p) for p in files], wheels_dir)
            async with sftp.open(installer, "w") as f:
                await f.write(_installer())
    except (OSError, asyncssh.Error) as exc:
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise BootstrapError(
            node, f"bootstrap failed at copy (SFTP to {wheels_dir}): {tail(str(reason))}"
        ) from exc

    remote_wheels = [posixpath.join(wheels_dir, p.name) for p in files]
    command = " ".join(
        shlex.quote(a)
        for a in [found.executable, installer, found.home, version, build, *remote_wheels]
    )
    code, out, err = await run_command(conn, command, timeout=300, node=node)
    if code != 0 or "NVQ-INSTALLED " not in out:
        step, _, rest = err.strip().rpartition("\n")[2].partition(": ")
        if step in _INSTALLER_STEPS:
            raise BootstrapError(node, f"bootstrap failed at {step}: {tail(rest)}")
        raise BootstrapError(
            node, f"bootstrap failed at install: exit {code}: {tail(err or out) or 'no output'}"
        )
    return BootstrapResult(venv_python, version, True, time.monotonic() - start)
