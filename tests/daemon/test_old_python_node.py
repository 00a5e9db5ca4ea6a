"""A node whose only python3 is CPython 3.9 (Debian 11, RHEL 9): bootstrapped from an
empty home through the real CLI, it runs jobs and adopts them after its runner dies.
The queue host stays on 3.11; pyenv's 3.9 stands in for the node's system Python."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode
from tests.runner.old_pythons import old_python


@pytest.fixture
def old_node(tmp_path: Path, sshd_nodes: SshdNodesFactory) -> Iterator[tuple[Nvq, SshdNode]]:
    py39 = old_python((3, 9))
    if py39 is None:
        pytest.skip("no CPython 3.9 here (pyenv's ~/.pyenv/versions/3.9.*)")
    (node,) = sshd_nodes(1)
    # python3 on the login PATH is 3.9, as on a node that ships nothing newer (root's
    # .bashrc puts pyenv's shims first: PYENV_VERSION picks 3.9 there).
    version = py39.parent.parent.name
    node.configure(
        f"SetEnv PATH={py39.parent}:/usr/sbin:/usr/bin:/sbin:/bin PYENV_VERSION={version}"
    )
    nvq = make_nvq(tmp_path / "q")
    write_mesh_config(nvq, [node], managed_runner=True)
    try:
        yield nvq, node
    finally:
        nvq.shutdown()


def test_a_python_39_node_is_bootstrapped_and_runs_jobs(
    old_node: tuple[Nvq, SshdNode], tmp_path: Path
) -> None:
    nvq, node = old_node
    assert not (node.home / "venv").exists()
    gate = tmp_path / "gate"
    job = nvq.submit(
        "--gpus", "0", "--", f"echo on-the-old-node; while [ ! -e {gate} ]; do sleep 0.05; done; exit 3"
    )
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    cfg = (node.home / "venv" / "pyvenv.cfg").read_text()
    assert "version = 3.9." in cfg or "version_info = 3.9." in cfg, cfg
    runner_pid = int((node.home / "runner.pid").read_text())
    exe = os.readlink(f"/proc/{runner_pid}/exe")
    version = subprocess.run(
        [exe, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert version.strip() == "(3, 9)"
    # the runner dies; its successor (3.9 too) adopts the job and reports its exit
    os.kill(runner_pid, signal.SIGKILL)
    gate.touch()
    code, (done,) = nvq.wait(job["id"], timeout=90)
    assert done["state"] == "failed" and done["exit_code"] == 3, done
    assert code == 1
    assert int((node.home / "runner.pid").read_text()) != runner_pid
    assert "on-the-old-node" in nvq.ok("job", "logs", str(job["id"])).out
    assert "job_lost" not in [e["kind"] for e in nvq.show(job["id"])["events"]]


def test_a_python_39_node_mounts_a_steps_inputs(old_node: tuple[Nvq, SshdNode]) -> None:
    """The FUSE side of the runner works on 3.9: a step's inputs are mounted read-only
    (root could write into a full restore; the mount refuses it)."""
    nvq, _ = old_node
    prep = nvq.submit("--gpus", "0", "--", 'mkdir -p "$NVQ_ARTIFACTS/data" && '
                      'echo "1 2 3" > "$NVQ_ARTIFACTS/data/train.txt"')["id"]
    train = nvq.submit(
        "--gpus", "0", "--after", str(prep), "--",
        f'cat "$NVQ_INPUTS/{prep}/data/train.txt" && (touch "$NVQ_INPUTS/{prep}/data/x" '
        "2>/dev/null && echo writable || echo read-only)",
    )["id"]
    code, _ = nvq.wait(train, timeout=120)
    out = nvq.ok("job", "logs", str(train)).out
    assert code == 0, out
    assert out.splitlines() == ["1 2 3", "read-only"], out
