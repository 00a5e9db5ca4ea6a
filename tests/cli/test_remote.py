"""The remote CLI: a second NVQ_HOME (the "laptop") with a `[remote]` section forwards
every command through a real sshd on loopback to `nvq` on the queue host."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nvq.config import load_config
from nvq.remote_share import control_path, stop_master
from tests.cluster import Nvq, make_nvq
from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode


def make_pair(tmp_path: Path, node: SshdNode, laptop_at: Path | None = None) -> tuple[Nvq, Nvq]:
    """A queue host and a laptop whose `[remote]` is that host, over `node`'s sshd."""
    host = make_nvq(tmp_path / "queue-host")
    # A daemon the forwarded call starts gets sshd's environment: give its local
    # runner the fake GPUs through the config instead.
    host.write_config(
        '[queue]\nlocal_env = { NVQ_GPU_BACKEND = "fake", '
        f'NVQ_FAKE_GPUS = {json.dumps(str(host.gpus_file))}, NVQ_SAMPLE_INTERVAL = "0.5" }}\n'
    )
    laptop = make_nvq(laptop_at or tmp_path / "laptop")
    laptop.write_config(
        "[remote]\n"
        f'host = "{node.host}"\n'
        f"port = {node.port}\n"
        f'user = "{node.user}"\n'
        f"identity = {json.dumps(str(node.identity))}\n"
        f"known_hosts = {json.dumps(str(node.known_hosts))}\n"
        f"nvq = {json.dumps(sys.executable + ' -m nvq')}\n"
        f"home = {json.dumps(str(host.home))}\n"
    )
    return host, laptop


@pytest.fixture
def trio(tmp_path: Path, sshd_nodes: SshdNodesFactory) -> Iterator[tuple[Nvq, Nvq, SshdNode]]:
    """(queue host, laptop, the queue host's sshd)."""
    (node,) = sshd_nodes(1)
    host, laptop = make_pair(tmp_path, node)
    try:
        yield host, laptop, node
    finally:
        stop_shared_connection(laptop)
        laptop.shutdown()
        host.shutdown()


@pytest.fixture
def pair(tmp_path: Path, sshd_nodes: SshdNodesFactory) -> Iterator[tuple[Nvq, Nvq]]:
    (node,) = sshd_nodes(1)
    host, laptop = make_pair(tmp_path, node)
    try:
        yield host, laptop
    finally:
        stop_shared_connection(laptop)
        laptop.shutdown()
        host.shutdown()


def eventually(pred: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """`pred()` once it holds; the deadline only stops a hung test."""
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)
    return value


def stop_shared_connection(laptop: Nvq) -> None:
    """End the laptop's shared ssh connection (it would idle on for minutes)."""
    cfg = load_config(laptop.home).remote
    assert cfg is not None
    path = control_path(cfg, str(laptop.home))
    if path is not None:
        stop_master(path, cfg.host)


def test_forwarded_commands_behave_as_on_the_queue_host(
    pair: tuple[Nvq, Nvq], tmp_path: Path
) -> None:
    host, laptop = pair
    # Nothing runs on the queue host yet: the forwarded call starts its daemon.
    status = laptop.json("queue", "status")
    assert status["daemon"]["home"] == str(host.home)
    assert not (laptop.home / "queue.db").exists(), "the laptop opened no database"

    job = laptop.submit(
        "--gpus", "0", "--no-snapshot", "--name", "r", "--", "sh", "-c", "echo out; echo err >&2; exit 3"
    )
    there = laptop.run("job", "wait", str(job["id"]), "--json")
    here = host.run("job", "wait", str(job["id"]), "--json")
    assert (there.code, there.out, there.err) == (here.code, here.out, here.err)
    assert there.code == 1
    for args in (  # (human `job show` says "2s ago": not comparable a second apart)
        ("job", "show", str(job["id"]), "--json"),
        ("job", "logs", str(job["id"]), "--stderr"),
        ("job", "show", "999"),
        ("job", "show", "999", "--json"),
        ("job", "submit", "--gpus", "-1", "--no-snapshot", "--", "true"),
        ("queue", "alerts", "--json"),
    ):
        there, here = laptop.run(*args), host.run(*args)
        assert (there.code, there.out, there.err) == (here.code, here.out, here.err), args
    assert laptop.run("job", "show", "999").code == 2  # an unknown id is bad input
    assert laptop.run("queue", "alerts").code == 1

    # --script sends the local file's contents (the queue host never sees the path).
    script = tmp_path / "laptop-only" / "job.sh"
    script.parent.mkdir()
    script.write_text("echo from-a-laptop-script\n")
    sub = laptop.submit("--gpus", "0", "--no-snapshot", "--script", str(script))
    assert sub["command"] == "echo from-a-laptop-script\n"
    code, _ = laptop.wait(sub["id"])
    assert code == 0
    assert laptop.ok("job", "logs", str(sub["id"])).out == "from-a-laptop-script\n"

    # --local: this one command runs against the laptop's own queue.
    mine = laptop.json("--local", "queue", "status")
    assert mine["daemon"]["home"] == str(laptop.home)
    # only before the command words: after them it is no option of `job ls`, said so
    # by the queue host, rather than quietly taken as the opt-out
    for args in (("job", "ls", "--local"), ("job", "ls", "--local", "--json")):
        there, here = laptop.run(*args), host.run(*args)
        assert (there.code, there.out, there.err) == (here.code, here.out, here.err), args
        assert there.code == 2 and "--local" in there.err + there.out


def test_logs_follow_streams_through_ssh(pair: tuple[Nvq, Nvq], tmp_path: Path) -> None:
    host, laptop = pair
    gate = tmp_path / "gate"  # the job ends only after the first line came through
    job = laptop.submit(
        "--gpus", "0", "--no-snapshot", "--", "sh", "-c",
        f"echo tick 1; while [ ! -e {gate} ]; do sleep 0.05; done; echo tick 2",
    )
    laptop.wait_for(job["id"], lambda j: j["state"] == "running")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "logs", str(job["id"]), "-f"],
        env=laptop.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first == "tick 1\n"
    assert host.show(job["id"])["state"] == "running", "the first line came before the job ended"
    gate.touch()
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert rest.splitlines() == ["tick 2"]


def test_a_daemon_that_cannot_start_says_so(pair: tuple[Nvq, Nvq]) -> None:
    host, laptop = pair
    host.write_config("[queue\n")
    r = laptop.run("queue", "status")
    assert r.code == 2
    assert r.err.startswith("nvq: ") and "config.toml" in r.err and "invalid TOML" in r.err
    assert r.out == ""


def test_an_unreachable_queue_host_is_named(tmp_path: Path) -> None:
    laptop = make_nvq(tmp_path / "laptop", gpus=None)
    laptop.write_config('[remote]\nhost = "127.0.0.1"\nport = 1\n')
    r = laptop.run("job", "ls")
    assert r.code == 255
    assert r.err.strip().endswith("nvq: cannot reach the queue host 127.0.0.1 over ssh")
