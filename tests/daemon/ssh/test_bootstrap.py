"""nvq.daemon.ssh.bootstrap against a real sshd node on loopback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import msgspec
import pytest

import nvq
from nvq.config import NodeConfig
from nvq.daemon.ssh import BootstrapError, NodeUnreachable, connect_node, run_command
from nvq.daemon.ssh.bootstrap import BootstrapResult, bootstrap_node, runner_python
from nvq.daemon.ssh.wheels import Target, dependency_wheels, project_wheel
from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode

pytestmark = pytest.mark.timeout(120)

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend="asyncio")


@pytest.fixture(scope="session")
def wheel_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One wheel cache for the whole session, so dependencies are fetched once."""
    return tmp_path_factory.mktemp("wheel-cache")


def _node_python() -> str:
    """`python3` as the node's (root's, over SSH) PATH finds it, when it is new enough;
    else this interpreter. Either way bootstrap uses it only as the venv's base."""
    found = shutil.which("python3")
    if found:
        code = "import sys; sys.exit(sys.version_info < (3, 11))"
        if subprocess.run([found, "-c", code], check=False).returncode == 0:
            return "python3"
    return sys.executable


def _config(sn: SshdNode, python: str | None = None) -> NodeConfig:
    return sn.node_config("b1", python=python or _node_python())


async def _bootstrap(node: NodeConfig, cache: Path, *, force: bool = False) -> BootstrapResult:
    conn = await connect_node(node)
    try:
        return await bootstrap_node(conn, node, force=force, cache_dir=cache)
    finally:
        conn.close()
        await conn.wait_closed()


async def _remote(node: NodeConfig, command: str) -> tuple[int, str, str]:
    conn = await connect_node(node)
    try:
        return await run_command(conn, command, timeout=60, node=node)
    finally:
        conn.close()
        await conn.wait_closed()


# ------------------------------------------------------------------ pure


def test_runner_python_rule() -> None:
    node = NodeConfig(name="n", host="h")
    assert runner_python(node) == "~/.nvq/venv/bin/python"
    node = msgspec.structs.replace(node, home="/srv/nvq/")
    assert runner_python(node) == "/srv/nvq/venv/bin/python"
    node = msgspec.structs.replace(node, python="/opt/py/bin/python3")
    assert runner_python(node) == "/opt/py/bin/python3"


def test_project_wheel_is_reproducible(wheel_cache: Path) -> None:
    path, build = project_wheel(wheel_cache)
    again, build2 = project_wheel(wheel_cache)
    assert (path, build) == (again, build2)
    assert path.name == f"nvq-{nvq.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert {"nvq_runner/__main__.py", "nvq_runner/wrapper.sh", "nvq/__init__.py"} <= names
    assert f"nvq-{nvq.__version__}.dist-info/RECORD" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_nvq_wheel_env_must_match_version(
    wheel_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bogus = tmp_path / "nvq-0.0.1-py3-none-any.whl"
    bogus.write_bytes(b"x")
    monkeypatch.setenv("NVQ_WHEEL", str(bogus))
    with pytest.raises(Exception, match=r"NVQ_WHEEL=.* is not a wheel of nvq"):
        project_wheel(wheel_cache)


# ------------------------------------------------------------------ against sshd


def test_fresh_then_noop_then_force(sshd_nodes: SshdNodesFactory, wheel_cache: Path) -> None:
    (sn,) = sshd_nodes(1)
    node = _config(sn)
    venv_python = str(sn.home / "venv" / "bin" / "python")

    async def main() -> None:
        first = await _bootstrap(node, wheel_cache)
        assert first.installed
        assert first.python == venv_python
        assert first.version == nvq.__version__
        print(f"fresh bootstrap: {first.seconds:.2f}s")
        assert Path(venv_python).exists()

        code, out, err = await _remote(node, f"{shlex.quote(venv_python)} -m nvq_runner --help")
        assert code == 0, err
        assert "attach" in out
        # the runner really starts from the venv (msgspec and the rest import) and stops
        home = shlex.quote(str(sn.home))
        code, out, err = await _remote(
            node,
            f"{shlex.quote(venv_python)} -m nvq_runner start --home {home} && "
            f"{shlex.quote(venv_python)} -m nvq_runner stop --home {home}",
        )
        assert code == 0, err

        second = await _bootstrap(node, wheel_cache)
        assert not second.installed
        assert second.python == venv_python

        marker = sn.home / "venv" / "nvq-build.json"
        inode = marker.stat().st_ino
        forced = await _bootstrap(node, wheel_cache, force=True)
        assert forced.installed
        assert marker.stat().st_ino != inode
        assert not (sn.home / "venv.new").exists() and not (sn.home / "venv.old").exists()

        # a venv built from other sources of the same version is replaced
        marker.write_text(json.dumps({"version": nvq.__version__, "build": "stale"}))
        assert (await _bootstrap(node, wheel_cache)).installed
        # a broken venv is replaced
        shutil.rmtree(next((sn.home / "venv" / "lib").glob("python*/site-packages/msgspec")))
        assert (await _bootstrap(node, wheel_cache)).installed
        code, _, err = await _remote(node, f"{shlex.quote(venv_python)} -c 'import msgspec'")
        assert code == 0, err

    run(main)


def test_bogus_python_is_one_clear_line(sshd_nodes: SshdNodesFactory, wheel_cache: Path) -> None:
    (sn,) = sshd_nodes(1)
    node = _config(sn, python="/nonexistent/python3")

    async def main() -> None:
        with pytest.raises(BootstrapError) as info:
            await _bootstrap(node, wheel_cache)
        text = str(info.value)
        assert "\n" not in text
        assert text.startswith(f"node b1 (127.0.0.1:{sn.port}): /nonexistent/python3 not found")
        assert isinstance(info.value, NodeUnreachable)

    run(main)


def test_old_python_is_refused(
    sshd_nodes: SshdNodesFactory, wheel_cache: Path, tmp_path: Path
) -> None:
    (sn,) = sshd_nodes(1)
    fake = tmp_path / "python3.8"
    # a "python" that claims 3.8: runs the probe with the real one, then lies
    fake.write_text(
        "#!/bin/sh\n"
        f'{shlex.quote(sys.executable)} "$@" | sed \'s/"python": \\[3, [0-9]*, [0-9]*\\]/"python": [3, 8, 18]/\'\n'
    )
    fake.chmod(0o755)
    node = _config(sn, python=str(fake))

    async def main() -> None:
        with pytest.raises(
            BootstrapError,
            match=r"on the node is Python 3\.8; nvq's runner needs Python >= 3\.9: install one "
            r"there and name it in nodes\.python$",
        ):
            await _bootstrap(node, wheel_cache)
        assert not (sn.home / "venv").exists()

    run(main)


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(
    os.environ.get("NVQ_TEST_OFFLINE") == "1" or not _pypi_reachable(),
    reason="PyPI is not reachable",
)
def test_dependency_wheels_for_another_interpreter(wheel_cache: Path) -> None:
    """A node whose Python differs from this one gets wheels downloaded for its tags."""
    target = Target((3, 12), "aarch64", "glibc", (2, 31))
    wheels = dependency_wheels(target, wheel_cache)
    names = sorted(p.name for p in wheels)
    assert len(names) == 3, names
    assert names[0].startswith("mfusepy-") and names[0].endswith("py3-none-any.whl")
    assert names[1].startswith("msgspec-") and "cp312" in names[1] and "aarch64" in names[1]
    assert names[2].startswith("nvidia_ml_py-") and names[2].endswith("py3-none-any.whl")
    # the second call is served from the cache: nothing in it is fetched again
    cached = {p: p.stat().st_mtime_ns for p in wheel_cache.rglob("*") if p.is_file()}
    assert sorted(p.name for p in dependency_wheels(target, wheel_cache)) == names
    assert {p: p.stat().st_mtime_ns for p in wheel_cache.rglob("*") if p.is_file()} == cached


def test_failed_step_is_named(sshd_nodes: SshdNodesFactory, wheel_cache: Path) -> None:
    (sn,) = sshd_nodes(1)
    blocker = sn.dir / "not-a-dir"
    blocker.write_text("")
    node = msgspec.structs.replace(_config(sn), home=str(blocker))

    async def main() -> None:
        with pytest.raises(BootstrapError) as info:
            await _bootstrap(node, wheel_cache)
        text = str(info.value)
        assert "\n" not in text
        assert text.startswith(f"node b1 (127.0.0.1:{sn.port}): bootstrap failed at copy"), text

    run(main)
