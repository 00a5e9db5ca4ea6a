"""nvq.daemon.ssh against real sshd nodes on loopback."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable

import anyio
import msgspec
import pytest

from nvq.config import NodeConfig
from nvq.daemon.ssh import (
    CommandTimeout,
    HostKeyError,
    LinkLost,
    NodeUnreachable,
    RunnerChannel,
    attach_command,
    connect_node,
    open_runner_channel,
    run_command,
    shell_path,
)
from nvq_runner.protocol import Ack, FrameReader, decode_daemon_payload, encode_frame
from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode, make_client_key

pytestmark = pytest.mark.timeout(60)


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn, backend="asyncio")


async def read_all(chan: RunnerChannel) -> bytes:
    out = bytearray()
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            out += await chan.receive()
    return bytes(out)


# ------------------------------------------------------------------ pure


def test_attach_command_quoting() -> None:
    node = NodeConfig(name="n", host="h", env={"NVQ_FAKE_GPUS": "/tmp/a b.toml", "X": "1"})
    assert attach_command(node) == (
        "env 'NVQ_FAKE_GPUS=/tmp/a b.toml' X=1 python3 -m nvq_runner attach --home ~/.nvq"
    )
    node = msgspec.structs.replace(node, env={}, python="~/venv/bin/python", home="/srv/my nvq")
    assert attach_command(node) == "~/venv/bin/python -m nvq_runner attach --home '/srv/my nvq'"
    assert shell_path("~") == "~"
    assert shell_path("~bob/x") == "~bob/x"
    assert shell_path("~/a;b") == "~/'a;b'"
    assert shell_path("~$(x)/a") == "'~$(x)/a'"
    with pytest.raises(ValueError, match="env key"):
        attach_command(msgspec.structs.replace(node, env={"A B": "1"}))


# ------------------------------------------------------------------ against sshd


def test_connect_and_run_command(sshd_nodes: SshdNodesFactory) -> None:
    (sn,) = sshd_nodes(1)
    node = sn.node_config("n1")

    async def main() -> None:
        conn = await connect_node(node)
        try:
            code, out, err = await run_command(conn, "echo hi; echo err >&2; exit 3", timeout=60)
            assert (code, out, err) == (3, "hi\n", "err\n")
            # a leading ~ expands on the node side, the rest stays quoted
            _, out, _ = await run_command(conn, f"echo {shell_path('~/a b;c')}", timeout=60)
            assert out == os.path.expanduser("~/a b;c") + "\n"
            _, out, _ = await run_command(conn, f"{node.python} -c 'print(6*7)'", timeout=60)
            assert out == "42\n"
            with pytest.raises(CommandTimeout, match=r"n1.*timed out"):
                await run_command(conn, "sleep 3", timeout=0.3, node=node)
            # the connection is still fine after a timed-out command
            assert (await run_command(conn, "true", timeout=60))[0] == 0
        finally:
            conn.close()
            await conn.wait_closed()

    run(main)


def test_runner_channel_binary_round_trip(sshd_nodes: SshdNodesFactory) -> None:
    (sn,) = sshd_nodes(1)
    node = sn.node_config("n1")
    frames = [encode_frame(Ack(i)) for i in range(2000)]
    payload = b"".join(frames)

    async def main() -> None:
        conn = await connect_node(node)
        try:
            chan = await open_runner_channel(conn, node, command="cat")
            got: list[bytes] = []
            fr = FrameReader()

            async def pump() -> None:
                with contextlib.suppress(anyio.EndOfStream):
                    while True:
                        got.extend(fr.feed(await chan.receive(4096)))

            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                for i in range(0, len(payload), 1000):
                    await chan.send(payload[i : i + 1000])
                await chan.send_eof()
            assert [decode_daemon_payload(p) for p in got] == [Ack(i) for i in range(2000)]
            assert fr.pending == 0
            await chan.aclose()
            assert chan.exit_status == 0
            assert not conn.is_closed()  # the channel did not own the connection
        finally:
            conn.close()
            await conn.wait_closed()

    run(main)


def test_runner_channel_stderr_and_exit(sshd_nodes: SshdNodesFactory) -> None:
    (sn,) = sshd_nodes(1)
    node = sn.node_config("n1")

    async def main() -> None:
        conn = await connect_node(node)
        try:
            chan = await open_runner_channel(
                conn,
                node,
                command="printf '\\000\\377'; echo 'No module named nvq_runner' >&2; exit 7",
            )
            assert await read_all(chan) == b"\x00\xff"
            await chan.aclose()
            assert chan.exit_status == 7
            assert "No module named nvq_runner" in chan.stderr_tail
            # the default command is attach_command(node)
            chan = await open_runner_channel(conn, node)
            assert chan.command == attach_command(node)
            await chan.aclose()
        finally:
            conn.close()
            await conn.wait_closed()

    run(main)


def test_unknown_and_changed_host_key(sshd_nodes: SshdNodesFactory, tmp_path: object) -> None:
    (sn,) = sshd_nodes(1)
    empty = sn.dir / "empty_known_hosts"
    empty.write_text("")

    async def expect(node: NodeConfig, pattern: str) -> HostKeyError:
        with pytest.raises(HostKeyError, match=pattern) as info:
            await connect_node(node, connect_timeout=5)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(f"node n1 (127.0.0.1:{sn.port}): ")
        return info.value

    async def main() -> None:
        node = msgspec.structs.replace(sn.node_config("n1"), known_hosts=str(empty))
        err = await expect(node, "host key unknown")
        assert str(empty) in str(err)
        missing = msgspec.structs.replace(node, known_hosts=str(sn.dir / "nope"))
        await expect(missing, "does not exist")
        sn.rotate_host_key()
        err = await expect(sn.node_config("n1"), "host key changed")
        assert str(sn.known_hosts) in str(err)
        sn.write_known_hosts()
        conn = await connect_node(sn.node_config("n1"))
        conn.close()
        await conn.wait_closed()

    run(main)


def test_refused_timeout_and_auth_failures(sshd_nodes: SshdNodesFactory) -> None:
    a, b = sshd_nodes(2)
    wrong_key = make_client_key(a.dir / "other-client")

    async def main() -> None:
        a.stop()
        with pytest.raises(NodeUnreachable) as info:
            await connect_node(a.node_config("gpu1"))
        assert str(info.value) == f"node gpu1 (127.0.0.1:{a.port}): connection refused"
        assert not isinstance(info.value, HostKeyError)

        b.pause()
        try:
            with pytest.raises(NodeUnreachable, match=r"timed out after 0\.5s"):
                await connect_node(b.node_config("gpu2"), connect_timeout=0.5)
        finally:
            b.resume()

        bad = msgspec.structs.replace(b.node_config("gpu2"), identity=str(wrong_key.private))
        with pytest.raises(NodeUnreachable, match="authentication failed"):
            await connect_node(bad)
        missing = msgspec.structs.replace(bad, identity=str(b.dir / "nokey"))
        with pytest.raises(NodeUnreachable, match=r"identity file .* does not exist"):
            await connect_node(missing)

    run(main)


def _keepalive_case(sn: SshdNode, fault: Callable[[], None]) -> LinkLost:
    node = sn.node_config("n1")
    caught: list[LinkLost] = []

    async def main() -> None:
        conn = await connect_node(node, keepalive_interval=0.5, keepalive_count_max=2)
        try:
            chan = await open_runner_channel(conn, node, command="cat")
            await chan.send(b"ping")
            assert await chan.receive(4) == b"ping"
            fault()
            with anyio.fail_after(15):
                # an orderly end (EndOfStream) would fail the test: the link was lost
                with pytest.raises(anyio.BrokenResourceError) as info:
                    while True:
                        await chan.receive(4096)
                assert isinstance(info.value.__cause__, LinkLost)
                assert str(info.value) == str(info.value.__cause__)
                caught.append(info.value.__cause__)
                await conn.wait_closed()
        finally:
            conn.close()

    run(main)
    return caught[0]


def test_keepalive_detects_hung_node(sshd_nodes: SshdNodesFactory) -> None:
    (sn,) = sshd_nodes(1)
    try:
        err = _keepalive_case(sn, sn.pause)
    finally:
        sn.resume()
    assert "keepalive" in str(err)


def test_node_going_down_breaks_the_channel(sshd_nodes: SshdNodesFactory) -> None:
    (sn,) = sshd_nodes(1)
    err = _keepalive_case(sn, sn.kill_all)
    assert str(err).startswith(f"node n1 (127.0.0.1:{sn.port}): ")


def test_a_channel_that_owns_its_connection_closes_it(sshd_nodes: SshdNodesFactory) -> None:
    a, b = sshd_nodes(2)

    async def main() -> None:
        node = a.node_config("a")
        chan = await open_runner_channel(
            await connect_node(node), node, command="cat", owns_connection=True
        )
        async with chan:
            await chan.send(encode_frame(Ack(5)))
            fr = FrameReader()
            got: list[bytes] = []
            while not got:
                got += fr.feed(await chan.receive())
            assert decode_daemon_payload(got[0]) == Ack(5)
            await chan.send_eof()
            with pytest.raises(anyio.EndOfStream):
                await chan.receive()
        assert chan.connection.is_closed()

        node = b.node_config("b")
        conn = await connect_node(node, keepalive_interval=0.5, keepalive_count_max=2)
        chan = await open_runner_channel(conn, node, command="cat", owns_connection=True)
        async with chan:
            b.pause()
            try:
                with anyio.fail_after(15), pytest.raises(anyio.BrokenResourceError) as info:
                    while True:
                        await chan.receive()
            finally:
                b.resume()
            assert isinstance(info.value.__cause__, LinkLost)
            with pytest.raises(anyio.BrokenResourceError):
                for _ in range(100):
                    await chan.send(b"x" * 65536)
        assert conn.is_closed()

    run(main)
