"""A node behind a bastion (`[[nodes]] jump`), through the real CLI: the node's sshd
lives in a network namespace of the test's own, listening on that namespace's
loopback, so nothing on the queue host can reach it; the bastion's sshd sits in the
same namespace on a veth address the queue host does reach. The node comes up, runs
a job, and its link is a session of the bastion's sshd: the jump is what carries it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.sshd import ClientKey, SshdNode, sshd_available


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def test_a_node_reached_only_through_its_bastion(
    tmp_path: Path, sshd_client_key: ClientKey
) -> None:
    if not sshd_available() or shutil.which("ip") is None:
        pytest.skip("needs OpenSSH sshd and iproute2 (ip netns)")
    tag = os.getpid() % 200 + 20
    ns, veth = f"nvqjump{tag}", f"nvqj{tag}"
    net = f"10.213.{tag}"
    bastion = SshdNode(tmp_path / "bastion", sshd_client_key)
    node = SshdNode(tmp_path / "node", sshd_client_key)
    nvq = make_nvq(tmp_path / "q")
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
        node.netns = ns  # 127.0.0.1 inside the namespace: only the bastion reaches it
        node.start()
        with pytest.raises(OSError):
            socket.create_connection((node.host, node.port), timeout=2).close()

        write_mesh_config(nvq, [node])
        node.known_hosts.write_text(f"{node.known_hosts_line}\n{bastion.known_hosts_line}\n")
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
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            subprocess.run(["kill", "-9", pid], capture_output=True)
        node.close()
        bastion.close()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{veth}h"], capture_output=True)
