"""The sshd harness itself: real OpenSSH nodes on loopback."""

from __future__ import annotations

import asyncio

import asyncssh
import pytest

from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode


async def _connect(node: SshdNode, timeout: float = 5.0) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(
        node.host,
        node.port,
        username=node.user,
        client_keys=[str(node.identity)],
        known_hosts=str(node.known_hosts),
        connect_timeout=timeout,
        config=None,
    )


async def _echo(node: SshdNode, timeout: float = 5.0) -> str:
    conn = await _connect(node, timeout)
    try:
        result = await conn.run("echo hi", check=True, timeout=timeout)
    finally:
        conn.close()
        await conn.wait_closed()
    assert isinstance(result.stdout, str)
    return result.stdout


def test_two_nodes_run_commands(sshd_nodes: SshdNodesFactory) -> None:
    a, b = sshd_nodes(2)
    assert a.port != b.port
    assert a.host_key.read_bytes() != b.host_key.read_bytes()
    assert a.home.is_dir() and b.home.is_dir()
    assert a.known_hosts.read_text().startswith(f"[127.0.0.1]:{a.port} ssh-ed25519 ")

    async def main() -> None:
        assert await _echo(a) == "hi\n"
        assert await _echo(b) == "hi\n"
        async with await _connect(a) as conn:
            r = await conn.run(f"{a.node_config('a').python} -c 'print(6*7)'", timeout=60)
            assert r.stdout == "42\n", r.stderr

    asyncio.run(main())


def test_stop_start_same_port(sshd_nodes: SshdNodesFactory) -> None:
    (node,) = sshd_nodes(1)
    port = node.port
    node.stop()
    with pytest.raises(OSError):
        asyncio.run(_echo(node))
    node.start()
    assert node.port == port
    assert asyncio.run(_echo(node)) == "hi\n"


def test_pause_resume(sshd_nodes: SshdNodesFactory) -> None:
    (node,) = sshd_nodes(1)
    node.pause()
    try:
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            asyncio.run(_echo(node, timeout=1.0))
    finally:
        node.resume()
    assert asyncio.run(_echo(node)) == "hi\n"


def test_kill_all_drops_open_connections(sshd_nodes: SshdNodesFactory) -> None:
    (node,) = sshd_nodes(1)

    async def main() -> None:
        conn = await _connect(node)
        try:
            assert (await conn.run("echo hi", timeout=60)).stdout == "hi\n"
            node.kill()  # the listener only: the open connection lives on
            assert (await conn.run("echo still", timeout=60)).stdout == "still\n"
            node.kill_all()
            with pytest.raises((asyncssh.Error, OSError)):
                await conn.run("echo gone", timeout=5)
        finally:
            conn.close()

    asyncio.run(main())
    node.start()
    assert asyncio.run(_echo(node)) == "hi\n"


def test_rotated_host_key_is_refused(sshd_nodes: SshdNodesFactory) -> None:
    (node,) = sshd_nodes(1)
    node.rotate_host_key()
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        asyncio.run(_echo(node))
    node.write_known_hosts()
    assert asyncio.run(_echo(node)) == "hi\n"


def test_every_setenv_reaches_a_session(sshd_nodes: SshdNodesFactory) -> None:
    """sshd keeps a keyword's first line only: two `configure("SetEnv …")` calls (a
    Slurm login node that also needs its own PATH) must both be seen."""
    (node,) = sshd_nodes(1)
    node.configure("SetEnv NVQ_T_ONE=1")
    node.configure("SetEnv NVQ_T_TWO=2 NVQ_T_THREE=3")

    async def main() -> str:
        async with await _connect(node) as conn:
            r = await conn.run("echo $NVQ_T_ONE$NVQ_T_TWO$NVQ_T_THREE", check=True, timeout=60)
        assert isinstance(r.stdout, str)
        return r.stdout

    assert asyncio.run(main()) == "123\n"
