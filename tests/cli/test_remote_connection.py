"""`[remote]` calls share one SSH connection to the queue host (OpenSSH connection
sharing): the first call logs in and leaves a master holding the connection; the next
ones are sessions on it. Checked against a real sshd: once the master is up, the
queue host's sshd may stop accepting connections and calls still go through."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from nvq.config import load_config
from nvq.remote_share import MAX_PATH, alive, control_path
from tests.cli.test_remote import eventually, make_pair, stop_shared_connection, trio  # noqa: F401
from tests.cli.test_remote_hangup import on_queue_host
from tests.cluster import Nvq
from tests.harness.fixtures import SshdNodesFactory
from tests.harness.sshd import SshdNode


def shared_socket(laptop: Nvq) -> str:
    cfg = load_config(laptop.home).remote
    assert cfg is not None
    path = control_path(cfg, str(laptop.home))
    assert path is not None
    return path


def masters(path: str) -> list[int]:
    """The ssh masters holding the connection whose control socket is `path`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-M" in argv and f"ControlPath={path}".encode() in argv:
            found.append(int(entry.name))
    return found


def test_calls_share_one_connection_that_outlives_the_listener(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, node = trio
    first = laptop.json("queue", "status")
    assert first["daemon"]["home"] == str(host.home)
    path = shared_socket(laptop)
    assert alive(path)
    where = os.lstat(os.path.dirname(path))
    assert stat.S_IMODE(where.st_mode) == 0o700 and len(path.encode()) <= MAX_PATH
    # New connections are refused from here on: only the shared one can carry calls.
    node.stop()
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--", "sh", "-c", "echo hi; exit 3")
    there = laptop.run("job", "wait", str(job["id"]), "--json")
    here = host.run("job", "wait", str(job["id"]), "--json")
    assert (there.code, there.out, there.err) == (here.code, here.out, here.err) and there.code == 1
    assert laptop.ok("job", "logs", str(job["id"])).out == "hi\n"
    assert len(masters(path)) == 1


def test_a_dead_master_is_replaced_and_first_calls_start_one(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    laptop.ok("job", "ls")
    path = shared_socket(laptop)
    (master,) = masters(path)
    os.kill(master, signal.SIGKILL)  # its socket stays behind, refusing
    eventually(lambda: not alive(path), "the killed master stops answering")
    assert os.path.exists(path)
    assert laptop.json("queue", "status")["daemon"]["home"] == str(host.home)
    assert alive(path) and len(masters(path)) == 1

    # Several first calls at once: one starts the master, all use it, none complains.
    stop_shared_connection(laptop)
    assert not alive(path)
    results: list[tuple[int, str, str]] = []

    def call() -> None:
        r = laptop.run("job", "ls", "--json")
        results.append((r.code, r.out, r.err))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [code for code, _, _ in results] == [0] * 4
    assert [err for _, _, err in results if "ControlSocket" in err or "ssh:" in err] == []
    assert all(json.loads(out) == {"jobs": [], "more": False} for _, out, _ in results)
    assert len(masters(path)) == 1


def test_known_hosts_is_still_checked_with_a_connection_open(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
    tmp_path: Path,
) -> None:
    _, laptop, node = trio
    laptop.ok("job", "ls")
    # The same host with a known_hosts that does not know it: a connection of its own,
    # refused, although one to the same host, port and user is open.
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    config = laptop.home / "config.toml"
    trusted = config.read_text()
    config.write_text(trusted.replace(json.dumps(str(node.known_hosts)), json.dumps(str(empty))))
    r = laptop.run("job", "ls")
    assert r.code == 255 and r.out == ""
    assert r.err.strip().endswith(f"nvq: cannot reach the queue host {node.host} over ssh")
    config.write_text(trusted)
    assert laptop.run("job", "ls").code == 0


def test_a_home_too_long_for_a_socket_keeps_it_in_the_runtime_directory(
    tmp_path: Path, sshd_nodes: SshdNodesFactory,
) -> None:
    (node,) = sshd_nodes(1)
    host, laptop = make_pair(tmp_path, node, laptop_at=tmp_path / ("long-" * 12) / "laptop")
    runtime = Path(tempfile.mkdtemp(prefix="nvq-rt-"))
    laptop.env["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        assert len(str(laptop.home / "ssh" / ("x" * 16)).encode()) > 107
        assert laptop.json("queue", "status")["daemon"]["home"] == str(host.home)
        (sock,) = [p for p in (runtime / "nvq-ssh").iterdir() if "." not in p.name]
        assert alive(str(sock))
        assert stat.S_IMODE((runtime / "nvq-ssh").stat().st_mode) == 0o700
        subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", node.host],
                       capture_output=True, check=False)
    finally:
        laptop.shutdown()
        host.shutdown()
        shutil.rmtree(runtime, ignore_errors=True)


def test_keep_connection_0_logs_in_for_each_call(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, node = trio
    config = laptop.home / "config.toml"
    config.write_text(config.read_text() + "keep_connection = 0\n")
    assert laptop.json("queue", "status")["daemon"]["home"] == str(host.home)
    cfg = load_config(laptop.home).remote
    assert cfg is not None and control_path(cfg, str(laptop.home)) is None
    node.stop()  # nothing holds a connection open: the next call cannot log in
    r = laptop.run("job", "ls")
    assert r.code == 255 and r.err.strip().endswith("over ssh")


def test_more_calls_at_once_than_the_server_allows_sessions_all_run_quietly(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
    tmp_path: Path,
) -> None:
    host, laptop, node = trio
    node.configure("Match all", "MaxSessions 2")  # OpenSSH's default is 10
    gate = tmp_path / "gate"
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--", "sh", "-c",
                        f"while [ ! -e {gate} ]; do sleep 0.05; done; echo out")
    waits = [
        subprocess.Popen([sys.executable, "-m", "nvq", "job", "wait", str(job["id"]), "--json"],
                         env=laptop.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    # all four wait there at once: two on the shared connection, two on their own
    eventually(lambda: len(on_queue_host(host, "job", "wait")) == 4, "four waits run there")
    gate.touch()
    results = [(w.wait(timeout=120), *w.communicate()) for w in waits]
    assert [code for code, _, _ in results] == [0] * 4
    assert len({out for _, out, _ in results}) == 1
    # ssh said nothing of the refused sessions (the login shell there may: this
    # machine's .bashrc runs `pyenv init`, whose rehash races when shells start at once)
    said = [line for _, _, err in results for line in err.decode().splitlines()
            if "mux_client" in line or "ControlSocket" in line or line.startswith("ssh:")]
    assert said == []


def test_json_reads_ask_the_queue_hosts_daemon_without_running_nvq_there(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--name", "seen", "--", "true")
    assert laptop.wait(job["id"])[0] == 0
    # An `nvq` there that cannot start: commands forwarded whole fail, while `--json`
    # reads go through the daemon's socket, forwarded over the shared connection, with
    # the very bytes the queue host's own CLI prints.
    config = laptop.home / "config.toml"
    config.write_text(config.read_text().replace(
        json.dumps(sys.executable + " -m nvq"), json.dumps("/nonexistent/nvq")))
    assert laptop.run("job", "cancel", str(job["id"])).code == 127
    for args in (("job", "show", str(job["id"]), "--json"), ("job", "ls", "--json"),
                 ("queue", "status", "--json"), ("job", "show", "999", "--json")):
        there, here = laptop.run(*args), host.run(*args)
        assert (there.code, there.out, there.err) == (here.code, here.out, here.err), args
    assert laptop.json("job", "ls")["jobs"][0]["name"] == "seen"
    assert not (laptop.home / "daemon.sock").exists()  # nothing answered on this machine
