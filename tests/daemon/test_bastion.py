"""Behind a bastion, through the real CLI. The far side's sshd lives in a network
namespace of the test's own, listening on that namespace's loopback, so nothing on
this host can reach it; the bastion's sshd sits in the same namespace on a veth
address this host does reach. A node there (`[[nodes]] jump`) comes up and runs a
job, its link a session of the bastion's sshd; a queue host there is used by the
remote CLI (`[remote] jump`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.sshd import ClientKey, SshdNode, sshd_available


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def behind_bastion(tmp_path: Path, key: ClientKey) -> Iterator[tuple[SshdNode, SshdNode]]:
    """(bastion, far): the far sshd is reachable only through the bastion."""
    if not sshd_available() or shutil.which("ip") is None:
        pytest.skip("needs OpenSSH sshd and iproute2 (ip netns)")
    tag = os.getpid() % 200 + 20
    ns, veth, net = f"nvqjump{tag}", f"nvqj{tag}", f"10.213.{tag}"
    bastion = SshdNode(tmp_path / "bastion", key)
    far = SshdNode(tmp_path / "far", key)
    try:
        _ip("netns", "add", ns)
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        _ip("link", "add", f"{veth}h", "type", "veth", "peer", "name", f"{veth}n")
        _ip("link", "set", f"{veth}n", "netns", ns)
        _ip("addr", "add", f"{net}.1/30", "dev", f"{veth}h")
        _ip("link", "set", f"{veth}h", "up")
        _ip("netns", "exec", ns, "ip", "addr", "add", f"{net}.2/30", "dev", f"{veth}n")
        _ip("netns", "exec", ns, "ip", "link", "set", f"{veth}n", "up")
        bastion.host, bastion.netns = f"{net}.2", ns
        bastion.configure()  # listen on the veth address
        bastion.start()
        far.netns = ns  # 127.0.0.1 inside the namespace: only the bastion reaches it
        far.start()
        with pytest.raises(OSError):
            socket.create_connection((far.host, far.port), timeout=2).close()
        far.known_hosts.write_text(f"{far.known_hosts_line}\n{bastion.known_hosts_line}\n")
        yield bastion, far
    finally:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            subprocess.run(["kill", "-9", pid], capture_output=True)
        far.close()
        bastion.close()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{veth}h"], capture_output=True)


def test_a_node_reached_only_through_its_bastion(
    tmp_path: Path, sshd_client_key: ClientKey
) -> None:
    nvq = make_nvq(tmp_path / "q")
    with behind_bastion(tmp_path, sshd_client_key) as (bastion, node):
        try:
            write_mesh_config(nvq, [node])
            node.known_hosts.write_text(
                f"{node.known_hosts_line}\n{bastion.known_hosts_line}\n")
            config = nvq.home / "config.toml"
            jump = f"{bastion.user}@{bastion.host}:{bastion.port}"
            config.write_text(config.read_text().replace(
                'name = "n0"', f'name = "n0"\njump = "{jump}"'))
            job = nvq.submit("--", "echo through-the-bastion")
            code, (done,) = nvq.wait(job["id"], timeout=120)
            assert code == 0 and done["node"] == "n0", done
            assert "through-the-bastion" in nvq.ok("job", "logs", str(job["id"])).out
            assert bastion.session_pids(), "the link is not a session of the bastion's sshd"
        finally:
            nvq.shutdown()


def test_the_remote_cli_reaches_its_queue_host_through_a_bastion(
    tmp_path: Path, sshd_client_key: ClientKey
) -> None:
    host = make_nvq(tmp_path / "queue-host", gpus=None)
    host.write_config('[queue]\nlocal_env = { NVQ_GPU_BACKEND = "none" }\n')
    laptop = make_nvq(tmp_path / "laptop", gpus=None)
    with behind_bastion(tmp_path, sshd_client_key) as (bastion, far):
        try:
            laptop.write_config(
                "[remote]\n"
                f'host = "{far.host}"\nport = {far.port}\nuser = "{far.user}"\n'
                f"identity = {json.dumps(str(far.identity))}\n"
                f"known_hosts = {json.dumps(str(far.known_hosts))}\n"
                f"nvq = {json.dumps(sys.executable + ' -m nvq')}\n"
                f"home = {json.dumps(str(host.home))}\n"
                f'jump = "{bastion.user}@{bastion.host}:{bastion.port}"\n'
            )
            job = laptop.submit("--gpus", "0", "--", "echo from-the-far-side")
            code, (done,) = laptop.wait(job["id"], timeout=120)
            assert code == 0 and done["state"] == "completed", done
            assert host.show(job["id"])["state"] == "completed"  # the queue host's own
        finally:
            laptop.shutdown()
            host.shutdown()
