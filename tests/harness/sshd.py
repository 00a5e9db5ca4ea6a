"""Real OpenSSH `sshd` processes on 127.0.0.1, one per fake "node".

Each `SshdNode` owns a directory::

    <dir>/sshd_config        generated config (port, keys, no PAM, LogLevel ERROR)
    <dir>/ssh_host_ed25519_key[.pub]
    <dir>/authorized_keys    the test's client public key
    <dir>/known_hosts        `[127.0.0.1]:PORT ssh-ed25519 ...` (what the client trusts)
    <dir>/sshd.pid           PidFile
    <dir>/sshd.log           sshd's stderr (`-D -e`)
    <dir>/home/              the nvq node home (NodeConfig.home)

The port is picked once and kept for the node's life: `stop()` + `start()` comes back on
the same port with the same host key, so a client's known_hosts stays valid.

Faults, and what each one looks like from the daemon's side:

* `stop()`      SIGTERM the listener and wait. Connections already open keep working
                (each is served by a forked per-connection sshd); new ones are refused.
* `kill()`      SIGKILL the listener only. Same as `stop()` for open connections.
* `kill_all()`  SIGKILL the listener, every per-connection sshd and every process those
                sessions started directly (the shell, `nvq_runner attach`, `cat`, ...):
                the node "goes down", open connections drop. Processes that detached
                into a session of their own (the resident runner and its jobs, which
                call setsid) are spared, exactly as a network outage would spare them.
* `pause()`     SIGSTOP the same set of processes as `kill_all()`: a hung node. TCP
                connects still succeed (kernel backlog) but no SSH banner comes;
                open connections stop answering keepalives. `resume()` SIGCONTs them.
* `rotate_host_key()`  new host key, sshd restarted on the same port, known_hosts left
                stale: a client must refuse the changed key.

Tests run as root: `PermitRootLogin yes`, `StrictModes no` (tmp dirs have loose
permissions), `UsePAM no`. sshd's privilege-separation directory `/run/sshd` is
created when missing.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nvq.config import NodeConfig

SSHD = os.environ.get("NVQ_TEST_SSHD", "/usr/sbin/sshd")
SSH_KEYGEN = os.environ.get("NVQ_TEST_SSH_KEYGEN", "ssh-keygen")
PRIVSEP_DIR = Path("/run/sshd")
HOST = "127.0.0.1"

# sshd process names: the listener and per-connection processes (OpenSSH < 9.8 re-execs
# itself as "sshd"; newer ones use sshd-session / sshd-auth).
_SSHD_COMMS = ("sshd", "sshd-session", "sshd-auth")


class SshdError(RuntimeError):
    """sshd could not be started (the message carries its log)."""


@dataclass(frozen=True)
class ClientKey:
    """The key pair the test client logs in with (shared by all nodes of a test)."""

    private: Path
    public: Path

    @property
    def public_line(self) -> str:
        return self.public.read_text().strip()


def sshd_available() -> bool:
    return Path(SSHD).is_file() and os.access(SSHD, os.X_OK)


def _keygen(path: Path, comment: str) -> None:
    for p in (path, path.with_name(path.name + ".pub")):
        p.unlink(missing_ok=True)
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def make_client_key(directory: Path) -> ClientKey:
    """Generate (once per directory) an ed25519 client key pair without passphrase."""
    directory.mkdir(parents=True, exist_ok=True)
    private = directory / "id_ed25519"
    public = directory / "id_ed25519.pub"
    if not (private.is_file() and public.is_file()):
        _keygen(private, "nvq-test-client")
    private.chmod(0o600)
    return ClientKey(private=private, public=public)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _ensure_privsep_dir() -> None:
    if not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(parents=True, exist_ok=True)
        PRIVSEP_DIR.chmod(0o755)


# ------------------------------------------------------------------ /proc helpers


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    sid: int
    comm: str


def _read_proc(pid: int) -> _Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parens.
    lpar, rpar = raw.index("("), raw.rindex(")")
    comm = raw[lpar + 1 : rpar]
    fields = raw[rpar + 2 :].split()
    return _Proc(pid=pid, ppid=int(fields[1]), sid=int(fields[3]), comm=comm)


def _all_procs() -> list[_Proc]:
    out: list[_Proc] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            p = _read_proc(int(entry))
            if p is not None:
                out.append(p)
    return out


def _is_sshd(p: _Proc) -> bool:
    return p.comm in _SSHD_COMMS or p.comm.startswith("sshd")


def _node_tree(root: int) -> list[int]:
    """`root` and its descendants, except subtrees that detached themselves: a process
    that leads its own session but was not started directly by an sshd (the resident
    runner, a job) is left out with everything under it."""
    procs = _all_procs()
    by_pid = {p.pid: p for p in procs}
    children: dict[int, list[_Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out: list[int] = []
    stack = [root] if root in by_pid else []
    while stack:
        pid = stack.pop()
        out.append(pid)
        parent = by_pid[pid]
        for child in children.get(pid, []):
            detached = child.sid == child.pid and not _is_sshd(parent) and not _is_sshd(child)
            if not detached:
                stack.append(child.pid)
    return out


def _port_socket_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _pids_holding_port(port: int) -> list[int]:
    """Processes holding a TCP socket whose local port is `port`: the listener and the
    per-connection sshds, even after the listener died and they were reparented."""
    wanted = {f"socket:[{i}]" for i in _port_socket_inodes(port) if i != "0"}
    out: list[int] = []
    if not wanted:
        return out
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in wanted:
                    out.append(int(entry))
                    break
            except OSError:
                continue
    return out


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


# ------------------------------------------------------------------ the node


class SshdNode:
    """One sshd on 127.0.0.1 with its own port, host key, authorized_keys and home."""

    host: str = HOST

    def __init__(self, directory: Path, client_key: ClientKey, port: int | None = None) -> None:
        self.dir = directory.resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.client_key = client_key
        self.port = port if port is not None else free_port()
        self.user = getpass.getuser()
        self.home = self.dir / "home"
        self.home.mkdir(exist_ok=True)
        self.host_key = self.dir / "ssh_host_ed25519_key"
        self.authorized_keys = self.dir / "authorized_keys"
        self.known_hosts = self.dir / "known_hosts"
        self.config_file = self.dir / "sshd_config"
        self.pid_file = self.dir / "sshd.pid"
        self.log_file = self.dir / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._paused: list[int] = []
        self.extra_config: list[str] = []
        self.sftp = True
        self.private: list[Path] = []  # directories its sessions see as an empty tmpfs
        # Run inside this network namespace (`ip netns`): a node only a bastion reaches.
        self.netns: str | None = None
        self.authorized_keys.write_text(client_key.public_line + "\n")
        self._new_host_key()
        self.write_known_hosts()
        self._write_config()

    # ---------------------------------------------------------- files

    @property
    def identity(self) -> Path:
        """The client's private key (what NodeConfig.identity points at)."""
        return self.client_key.private

    @property
    def known_hosts_line(self) -> str:
        """The line a client needs to trust the *current* host key."""
        kind, key = self.host_key.with_name(self.host_key.name + ".pub").read_text().split()[:2]
        return f"[{self.host}]:{self.port} {kind} {key}"

    def write_known_hosts(self) -> None:
        """(Re)write known_hosts with the current host key."""
        self.known_hosts.write_text(self.known_hosts_line + "\n")

    def _new_host_key(self) -> None:
        _keygen(self.host_key, f"nvq-test-host-{self.port}")
        self.host_key.chmod(0o600)

    def _write_config(self) -> None:
        lines = [
            f"Port {self.port}",
            f"ListenAddress {self.host}",
            f"HostKey {self.host_key}",
            f"PidFile {self.pid_file}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin yes",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "LogLevel ERROR",
            "MaxSessions 100",
            "MaxStartups 100:30:200",
            "ClientAliveInterval 0",
            *(["Subsystem sftp internal-sftp"] if self.sftp else []),
            *_one_set_env(self.extra_config),
        ]
        self.config_file.write_text("\n".join(lines) + "\n")

    def configure(self, *lines: str) -> None:
        """Add sshd_config lines (e.g. ``SetEnv PATH=…`` for a node whose login PATH
        finds another python3) and restart the listener if it runs."""
        self.extra_config.extend(lines)
        self._write_config()
        if self.running:
            self.stop()
            self.start()

    def _argv(self) -> list[str]:
        sshd = [SSHD, "-D", "-e", "-f", str(self.config_file)]
        if not self.private:
            return sshd
        # A mount namespace of its own, with an empty tmpfs over each private directory:
        # a login node that does not share them with the compute nodes (this host).
        mounts = "; ".join(f"mount -t tmpfs nvq-private {shlex.quote(str(d))} || exit 1"
                           for d in self.private)
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f"{mounts}; exec {shlex.join(sshd)}"]

    def without_sharing(self, *directories: Path) -> None:
        """Its sessions see `directories` empty and private (made here if missing);
        restarts."""
        for d in directories:
            d.mkdir(parents=True, exist_ok=True)
        self.private.extend(directories)
        self.configure()

    def without_sftp(self) -> None:
        """Serve no SFTP (what nvq read over it must come another way); restarts."""
        self.sftp = False
        self.configure()

    # ---------------------------------------------------------- NodeConfig

    def node_config(
        self,
        name: str,
        *,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        gpus: list[int] | None = None,
        home: str | None = None,
        owner: str | None = None,
    ) -> NodeConfig:
        return NodeConfig(
            name=name,
            host=self.host,
            port=self.port,
            user=self.user,
            identity=str(self.identity),
            known_hosts=str(self.known_hosts),
            home=home if home is not None else str(self.home),
            python=python,
            gpus=gpus,
            env=dict(env or {}),
            owner=owner,
        )

    # ---------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running and self.proc is not None else None

    def start(self, timeout: float = 60.0) -> None:
        """Start sshd (again) on the same port with the same keys; wait until it listens
        (the deadline only catches one that never does: a loaded machine is slow)."""
        if self.running:
            return
        _ensure_privsep_dir()
        self._paused = []
        log = self.log_file.open("ab")
        try:
            inside = ["ip", "netns", "exec", self.netns] if self.netns else []
            self.proc = subprocess.Popen(
                [*inside, *self._argv()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise SshdError(
                    f"sshd on port {self.port} exited with {self.proc.returncode}: "
                    f"{self.log_file.read_text(errors='replace')[-2000:]}"
                )
            if self._answers():
                return
            if time.monotonic() > deadline:
                self.kill_all()
                raise SshdError(
                    f"sshd on port {self.port} did not accept connections in {timeout}s"
                )
            time.sleep(0.02)

    def _answers(self) -> bool:
        """Does sshd greet a client (from inside its namespace, if it has one)?"""
        if self.netns:
            probe = (f"import socket; s = socket.create_connection(({self.host!r}, {self.port}),"
                     " timeout=0.5); s.settimeout(2.0); assert s.recv(4).startswith(b'SSH-')")
            return subprocess.run(["ip", "netns", "exec", self.netns, sys.executable, "-c",
                                   probe], capture_output=True).returncode == 0
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.settimeout(2.0)
                return s.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    def _wait(self, timeout: float = 5.0) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        """SIGTERM the listener and wait for it. Open connections survive."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            if self._paused:
                self.resume()
            self.proc.terminate()
        self._wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the listener only. Open connections (forked children) survive."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self._wait()
        self.proc = None

    def session_pids(self) -> list[int]:
        """The listener, its per-connection sshds and what their sessions run directly
        (detached runners and jobs excluded)."""
        roots = _pids_holding_port(self.port)
        if self.proc is not None and self.proc.poll() is None:
            roots.append(self.proc.pid)
        pids: dict[int, None] = {}
        for root in roots:
            if root != os.getpid():
                pids.update(dict.fromkeys(_node_tree(root)))
        return list(pids)

    def kill_all(self) -> None:
        """The node goes down: SIGKILL the listener, every per-connection sshd and the
        processes their sessions started (not the detached runner and its jobs)."""
        pids = self.session_pids()
        _signal_all(pids, signal.SIGKILL)
        # Stopped processes take a SIGKILL without a SIGCONT.
        self._paused = []
        self._wait()
        self.proc = None
        deadline = time.monotonic() + 5
        while _pids_holding_port(self.port) and time.monotonic() < deadline:
            time.sleep(0.01)

    def pause(self) -> None:
        """A hung node: SIGSTOP the listener, its per-connection sshds and sessions."""
        pids = self.session_pids()
        _signal_all(pids, signal.SIGSTOP)
        self._paused = pids

    def resume(self) -> None:
        """SIGCONT whatever `pause()` stopped (plus the current tree, to be sure)."""
        pids = list(dict.fromkeys([*self._paused, *self.session_pids()]))
        _signal_all(pids, signal.SIGCONT)
        self._paused = []

    def rotate_host_key(self) -> None:
        """Give the node a new host key and restart it on the same port; known_hosts
        is left stale, so a client sees a changed host key."""
        was_running = self.running
        self.stop()
        self._new_host_key()
        if was_running:
            self.start()

    def close(self) -> None:
        """Teardown: everything of this node goes, including stray processes whose
        command line names the node's directory (runners, attach)."""
        if self._paused:
            self.resume()
        with contextlib.suppress(Exception):
            self.kill_all()
        self.kill_strays()

    def kill_strays(self) -> None:
        """SIGKILL processes whose command line or cwd mentions this node's directory
        (a runner started with `--home <dir>/home`, jobs running there)."""
        needle = str(self.dir).encode()
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                cwd = os.readlink(f"/proc/{entry}/cwd").encode()
            except OSError:
                continue
            if needle in cmdline or cwd.startswith(needle):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry), signal.SIGKILL)

    def __repr__(self) -> str:
        return f"SshdNode({self.host}:{self.port}, dir={self.dir})"


def clear_stale_shell_locks(max_age: float = 120.0) -> None:
    """Every SSH session here runs the login user's shell start-up, which on machines
    with pyenv runs `pyenv rehash` under a lock file. A session killed mid-rehash (as
    node-failure tests do) leaves the lock behind, and every later SSH command waits
    60 s for it. A lock older than any rehash is stale: remove it."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    lock = root / "shims" / ".pyenv-shim"
    try:
        if time.time() - lock.stat().st_mtime > max_age:
            lock.unlink()
            print(f"removed a stale pyenv lock {lock} left by a killed SSH session")
    except OSError:
        pass


def start_sshd_nodes(
    tmp_path: Path, n: int, *, client_key: ClientKey | None = None, prefix: str = "node"
) -> list[SshdNode]:
    """Start `n` nodes under `tmp_path/<prefix>N` (N continues past existing ones)."""
    clear_stale_shell_locks()
    key = client_key or make_client_key(tmp_path / "client")
    nodes: list[SshdNode] = []
    try:
        i = 0
        while len(nodes) < n:
            d = tmp_path / f"{prefix}{i}"
            i += 1
            if d.exists():
                continue
            node = SshdNode(d, key)
            nodes.append(node)
            node.start()
    except BaseException:
        for node in nodes:
            node.close()
        raise
    return nodes


def _one_set_env(lines: list[str]) -> list[str]:
    """`lines` with every `SetEnv` joined into the first: sshd takes a keyword's first
    line only, so a second `SetEnv` (a Slurm login node that also needs its own PATH)
    would be dropped without a word."""
    values = [line.split(None, 1)[1] for line in lines if line.startswith("SetEnv ")]
    rest = [line for line in lines if not line.startswith("SetEnv ")]
    return [*rest, *([f"SetEnv {' '.join(values)}"] if values else [])]

