"""pytest fixtures around `tests.harness.sshd`.

Use from a test module or conftest with::

    pytest_plugins = ["tests.harness.fixtures"]

or import the fixtures by name. `sshd_nodes(n)` starts `n` fresh nodes (it may be called
more than once per test); every node is torn down after the test, pass or fail. Tests are
skipped when `/usr/sbin/sshd` is missing (`make parts` installs it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.sshd import (
    ClientKey,
    SshdNode,
    clear_stale_shell_locks,
    make_client_key,
    sshd_available,
    start_sshd_nodes,
)

SshdNodesFactory = Callable[[int], list[SshdNode]]


@pytest.fixture(scope="session", autouse=True)
def _no_stale_shell_locks() -> Iterator[None]:
    """Tests that kill SSH sessions can leave the login shell's pyenv lock behind at
    any moment, and every SSH command after it then waits 60 s: clear such a lock
    (older than any real rehash) for as long as the tests run."""
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(1.0):
            clear_stale_shell_locks(max_age=10.0)

    thread = threading.Thread(target=sweep, name="stale-lock-sweeper", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


@pytest.fixture(scope="session")
def sshd_client_key(tmp_path_factory: pytest.TempPathFactory) -> ClientKey:
    """One client key pair for the whole test session."""
    return make_client_key(tmp_path_factory.mktemp("ssh-client"))


@pytest.fixture
def sshd_nodes(tmp_path: Path, sshd_client_key: ClientKey) -> Iterator[SshdNodesFactory]:
    if not sshd_available():
        pytest.skip("OpenSSH sshd is not installed (`make parts` installs openssh-server)")
    started: list[SshdNode] = []

    def factory(n: int) -> list[SshdNode]:
        nodes = start_sshd_nodes(tmp_path / "sshd", n, client_key=sshd_client_key)
        started.extend(nodes)
        return nodes

    try:
        yield factory
    finally:
        for node in started:
            node.close()
