"""A read over `[remote]` beside the same read on the queue host: `nvq job show ID
--json` as a fresh process on a "laptop" (an NVQ_HOME whose `[remote]` is the queue
host, reached through a real sshd on loopback) and on the queue host itself,
round-robin, with:

* `remote_shared`: what a `[remote]` call costs now: the shared connection
  (OpenSSH connection sharing, nvq.remote_share, the master started by the first
  call), over which a `--json` read asks the queue host's daemon socket, forwarded
  to this machine (nvq.remote_reads): no shell and no `nvq` start there;
* `remote_unshared`: the same laptop with `[remote] keep_connection = 0`, a
  connection of its own per call (a TCP connect, key exchange and login each time:
  what every call cost before sharing);
* `session_floor`: `true` as a session on the shared connection, with no nvq at all:
  the queue host's sshd and the login shell it runs every command through (on this
  machine root's `.bashrc` runs `pyenv init`), what a command forwarded whole still
  pays (and what a `--json` read no longer does);
* `login_floor`: `true` over a connection of its own, no nvq: the connect, key
  exchange and login that sharing removes, plus the same shell;
* `local`: the read on the queue host.

`remote_minus_local_p50_ms` is the gap the goal (within 30 ms) is about.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import emit, machine, python_start, summary_ms

from nvq.config import load_config
from nvq.remote import connect_options, connection
from nvq.remote_share import control_path, share_options, stop_master
from tests.cluster import make_nvq
from tests.harness.sshd import start_sshd_nodes


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - t
    assert proc.returncode == 0, proc.stderr
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-remote-"))
    (node,) = start_sshd_nodes(tmp / "sshd", 1)
    host = make_nvq(tmp / "q")
    laptop = make_nvq(tmp / "l", gpus=None)
    unshared = make_nvq(tmp / "u", gpus=None)
    path = None
    try:
        host.write_config(
            '[queue]\nlocal_env = { NVQ_GPU_BACKEND = "fake", '
            f'NVQ_FAKE_GPUS = {json.dumps(str(host.gpus_file))} }}\n')
        remote = (
            "[remote]\n"
            f'host = "{node.host}"\nport = {node.port}\nuser = "{node.user}"\n'
            f"identity = {json.dumps(str(node.identity))}\n"
            f"known_hosts = {json.dumps(str(node.known_hosts))}\n"
            f"nvq = {json.dumps(sys.executable + ' -m nvq')}\n"
            f"home = {json.dumps(str(host.home))}\n")
        laptop.write_config(remote)
        unshared.write_config(remote + "keep_connection = 0\n")
        job = host.submit("--gpus", "0", "--no-snapshot", "--", "true")
        host.wait(job["id"])
        read = ["job", "show", str(job["id"]), "--json"]
        nvq = [sys.executable, "-m", "nvq", *read]
        cfg = load_config(laptop.home).remote
        assert cfg is not None
        path = control_path(cfg, str(laptop.home))
        assert path is not None, "no private place for the control socket"
        floor = ["ssh", "-T", *share_options(path), *connect_options(cfg), "-n", cfg.host, "true"]
        login = ["ssh", "-T", *connect_options(cfg), "-n", cfg.host, "true"]
        timed(nvq, laptop.env)  # the master starts here
        connection(cfg, laptop.home)
        times: dict[str, list[float]] = {
            "local": [], "remote_shared": [], "remote_unshared": [], "session_floor": [],
            "login_floor": []}
        for _ in range(args.runs):
            times["local"].append(timed(nvq, host.env))
            times["remote_shared"].append(timed(nvq, laptop.env))
            times["remote_unshared"].append(timed(nvq, unshared.env))
            times["session_floor"].append(timed(floor))
            times["login_floor"].append(timed(login))
        doc: dict[str, object] = {"bench": "remote_latency", "machine": machine()}
        for name, values in times.items():
            doc[name] = summary_ms(values)
        p50 = {name: summary_ms(values)["p50_ms"] for name, values in times.items()}
        doc["remote_minus_local_p50_ms"] = round(p50["remote_shared"] - p50["local"], 1)
        doc["python_start"] = python_start()
        emit(doc)
    finally:
        if path is not None:
            stop_master(path, node.host)
        laptop.shutdown()
        unshared.shutdown()
        host.shutdown()
        node.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
