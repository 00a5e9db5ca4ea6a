"""Bootstrap's first step: what the node's interpreter is (version, implementation,
machine, libc), where its home is, and what ``<home>/venv`` holds. The script that runs
there is `node_probe.py`, sent as ``python -c``."""

from __future__ import annotations

import shlex
from importlib import resources

import asyncssh
import msgspec

from nvq.config import NodeConfig
from nvq.daemon.ssh.connection import run_command, shell_path
from nvq.daemon.ssh.errors import BootstrapError, tail
from nvq.daemon.ssh.wheels import Target, parse_libc_version

# The runner's floor (Debian 11, RHEL 9 and their kin ship 3.9); the queue host needs 3.11.
MIN_PYTHON = (3, 9)
_PROBE_MARK = "NVQ-PROBE "


class Probe(msgspec.Struct):
    python: list[int]
    impl: str
    machine: str
    libc: list[str]
    home: str
    executable: str
    installed: str | None = None
    build: str | None = None
    venv_error: str | None = None

    @property
    def version(self) -> str:
        return ".".join(map(str, self.python[:2]))


def _script() -> str:
    return resources.files("nvq.daemon.ssh").joinpath("node_probe.py").read_text()


def _min_python() -> str:
    return ".".join(map(str, MIN_PYTHON))


async def probe(conn: asyncssh.SSHClientConnection, node: NodeConfig) -> Probe:
    """Run the probe with `node.python`; a `BootstrapError` when that is missing, not
    runnable, not CPython or older than `MIN_PYTHON`."""
    command = f"{shell_path(node.python)} -c {shlex.quote(_script())} {shell_path(node.home)}"
    code, out, err = await run_command(conn, command, timeout=90, node=node)
    if code == 127:
        raise BootstrapError(
            node,
            f"{node.python} not found on the node (nodes.python must name a Python >= "
            f"{_min_python()}): {tail(err)}",
        )
    if code == 126:
        raise BootstrapError(node, f"{node.python} on the node is not executable: {tail(err)}")
    line = next((ln for ln in out.splitlines() if ln.startswith(_PROBE_MARK)), None)
    if code != 0 or line is None:
        raise BootstrapError(
            node,
            f"bootstrap failed at probe: {node.python} exited with {code}: "
            f"{tail(err or out) or 'no output'}",
        )
    try:
        found = msgspec.json.decode(line[len(_PROBE_MARK) :], type=Probe)
    except msgspec.ValidationError as exc:
        raise BootstrapError(node, f"bootstrap failed at probe: bad reply: {exc}") from None
    if tuple(found.python[:2]) < MIN_PYTHON:
        raise BootstrapError(
            node,
            f"{node.python} on the node is Python {found.version}; nvq's runner needs Python >= "
            f"{_min_python()}: install one there and name it in nodes.python",
        )
    if found.impl != "cpython":
        raise BootstrapError(
            node, f"{node.python} on the node is {found.impl or 'not CPython'}; nvq needs CPython"
        )
    return found


def target_of(node: NodeConfig, found: Probe) -> Target:
    """The node's interpreter as wheel tags see it."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(found.machine.lower(), found.machine)
    name, version = [*found.libc, "", ""][:2]
    if name == "glibc":
        libc, libc_version = "glibc", parse_libc_version(version)
    else:
        # platform.libc_ver() knows no musl; a musl Python reports ("", "").
        libc, libc_version = "musl", (1, 2)
    if libc == "glibc" and libc_version < (2, 17):
        raise BootstrapError(node, f"the node's glibc {version} is older than 2.17")
    return Target((found.python[0], found.python[1]), machine, libc, libc_version)
