"""A real one-host Slurm cluster on loopback: munged, slurmctld and slurmd (Debian's
packages), each in the foreground under this process, all state in one scratch
directory, nothing under /etc touched.

    cluster = SlurmCluster.start()      # waits until `sinfo` shows the node idle
    cluster.run("sbatch", "--parsable", "--wrap", "sleep 60")
    cluster.close()                     # cancels every job, stops the daemons

`SlurmCluster.start(private_compute=True)` runs slurmd in a mount namespace of its
own in which `cluster.shared` (the login node's side of a directory a site would
share, or not) is another, empty directory: batch scripts and `srun` steps do not see
what the login node keeps there, as on a site whose compute nodes do not mount the
login node's home. `sbatch_calls()` and `job_steps()` count what the cluster was
asked (from slurmctld's and slurmd's logs), the figures a site's admins watch.

The scratch directory is short and under /tmp on purpose: munge's Unix socket path
must fit in sockaddr_un (108 bytes), which a pytest tmp_path can exceed.

Every Slurm command needs `SLURM_CONF` (`cluster.env`). For commands run over SSH on
the "login node" (an `SshdNode`), `login_node_env(node)` adds `SetEnv SLURM_CONF=...`
to that node's sshd_config before it starts.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from tests.harness.sshd import SshdNode

MUNGED = os.environ.get("NVQ_TEST_MUNGED", "/usr/sbin/munged")
SLURMCTLD = os.environ.get("NVQ_TEST_SLURMCTLD", "/usr/sbin/slurmctld")
SLURMD = os.environ.get("NVQ_TEST_SLURMD", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "srun", "scancel")
PARTITION = "debug"
CLUSTER_NAME = "nvqtest"


class SlurmUnavailable(RuntimeError):
    """The daemons cannot run here (the message says why); tests skip on it."""


def missing_programs() -> list[str]:
    """Slurm and munge programs this machine lacks (`make parts` installs them)."""
    out = [p for p in (MUNGED, SLURMCTLD, SLURMD) if not os.access(p, os.X_OK)]
    return out + [c for c in CLIENTS if shutil.which(c) is None]


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _slurm_conf(w: Path, host: str, ctld_port: int, slurmd_port: int, cpus: int, gpus: int) -> str:
    gres = f" Gres=gpu:{gpus}" if gpus else ""
    return f"""\
ClusterName={CLUSTER_NAME}
GresTypes=gpu
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={w}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={w}/state
SlurmdSpoolDir={w}/spool
SlurmctldPidFile={w}/slurmctld.pid
SlurmdPidFile={w}/slurmd.pid
SlurmctldLogFile={w}/log/slurmctld.log
SlurmdLogFile={w}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmdUser=root
MpiDefault=none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4000{gres} State=UNKNOWN
PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """One controller and one compute node on 127.0.0.1 with ports of their own."""

    def __init__(self, directory: Path, gpus: int = 0, private_compute: bool = False) -> None:
        self.dir = directory
        self.gpus = gpus  # fake GRES gpus of the node (`--gres=gpu:N` works up to it)
        self.private_compute = private_compute
        # Seen by the login node (and tests); the compute node sees `compute_view` here.
        self.shared = directory / "cluster"
        self.compute_view = directory / "compute-view"
        self.conf = directory / "slurm.conf"
        self.host = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def env(self) -> dict[str, str]:
        """The environment a Slurm client command needs."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # ---------------------------------------------------------- lifecycle

    @classmethod
    def start(
        cls,
        *,
        cpus: int = 2,
        gpus: int = 0,
        private_compute: bool = False,
        timeout: float = 30.0,
    ) -> SlurmCluster:
        """Start a cluster whose node has `cpus` CPUs and `gpus` fake GRES GPUs: device
        nodes that are /dev/null underneath, enough for Slurm to count and hand out
        (the runner's cards come from NVQ_FAKE_GPUS, not from these). With
        `private_compute`, slurmd does not see what the login node keeps in `shared`."""
        missing = missing_programs()
        if missing:
            raise SlurmUnavailable(
                f"Slurm is not installed ({', '.join(missing)} missing; "
                "`make parts` installs slurmctld slurmd slurm-client munge)"
            )
        cluster = cls(
            Path(tempfile.mkdtemp(prefix="nvqslurm-", dir="/tmp")), gpus, private_compute
        )
        try:
            cluster._start(cpus, timeout)
        except BaseException:
            cluster.close()
            raise
        return cluster

    def _start(self, cpus: int, timeout: float) -> None:
        w = self.dir
        for sub in ("state", "spool", "log", "munge", "cluster", "compute-view"):
            (w / sub).mkdir()
        self.shared.chmod(0o755)
        self.compute_view.chmod(0o777 | stat.S_ISVTX)  # like /tmp: anyone's pilots
        key = w / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        ctld_port, slurmd_port = _free_ports(2)
        self._fake_gpus()
        self.conf.write_text(_slurm_conf(w, self.host, ctld_port, slurmd_port, cpus, self.gpus))
        self._spawn(
            "munged",
            [
                MUNGED,
                "--foreground",
                f"--key-file={key}",
                f"--socket={w}/munge/munge.socket",
                f"--pid-file={w}/munge/munged.pid",
                f"--seed-file={w}/munge/seed",
                f"--log-file={w}/log/munged.log",
                "--force",
            ],
        )
        self._wait_for(lambda: (w / "munge" / "munge.socket").exists(), "munged", timeout)
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-f", str(self.conf)])
        slurmd = [SLURMD, "-D", "-f", str(self.conf)]
        if self.private_compute:
            self._check_unshare()
            # The bind mount lives only in slurmd's namespace (and its jobs' and
            # steps'): the login node, an sshd outside it, keeps the host's view.
            slurmd = [
                "unshare", "-m", "--propagation", "private", "sh", "-c",
                f"mount --bind {self.compute_view} {self.shared} && exec {shlex.join(slurmd)}",
            ]
        self._spawn("slurmd", slurmd)
        self._wait_for(self._node_idle, "the node to be idle in sinfo", timeout)

    def _check_unshare(self) -> None:
        probe = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "true"],
            capture_output=True, text=True, check=False,
        )
        if probe.returncode != 0:
            raise SlurmUnavailable(
                f"no mount namespace for a private compute node: {probe.stderr.strip()}"
            )

    def _fake_gpus(self) -> None:
        lines = ["AutoDetect=off"]
        for i in range(self.gpus):
            dev = self.dir / f"fakegpu{i}"
            try:
                os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            except OSError as exc:
                raise SlurmUnavailable(f"cannot make fake GPU device {dev}: {exc}") from None
            lines.append(f"NodeName={self.host} Name=gpu File={dev}")
        (self.dir / "gres.conf").write_text("\n".join(lines) + "\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.dir / "log" / f"{name}.stderr").open("ab") as log:
            # SLURM_CONF in the daemons' environment reaches every slurmstepd and job,
            # which is how close() finds what they leave behind.
            self.procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=self.env,
            )

    def _wait_for(self, ready: object, what: str, timeout: float) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout
        while not ready():
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SlurmUnavailable(
                        f"{name} exited with {proc.returncode} while waiting for {what}:\n"
                        + self.logs()
                    )
            if time.monotonic() > deadline:
                raise SlurmUnavailable(
                    f"timed out after {timeout:g}s waiting for {what}:\n" + self.logs()
                )
            time.sleep(0.1)

    def _node_idle(self) -> bool:
        r = self.run("sinfo", "-h", "-o", "%t", check=False)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def logs(self) -> str:
        """The tail of every daemon log, for failure messages."""
        parts = []
        for f in sorted((self.dir / "log").glob("*")):
            with contextlib.suppress(OSError):
                parts.append(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}")
        return "\n".join(parts)

    def close(self) -> None:
        """Cancel every job, stop the daemons and sweep what jobs left behind."""
        if self.procs.get("slurmctld") is not None and self.procs["slurmctld"].poll() is None:
            self.run("scancel", "--user", getpass.getuser(), check=False)
            deadline = time.monotonic() + 10
            while (
                time.monotonic() < deadline
                and self.run("squeue", "-h", "-o", "%i", check=False).stdout.strip()
            ):
                time.sleep(0.1)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._kill_strays()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_strays(self) -> None:
        """SIGKILL slurmstepds and job processes that still carry this cluster's
        SLURM_CONF (an scancel that did not finish in time)."""
        needle = f"SLURM_CONF={self.conf}".encode()
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry), signal.SIGKILL)

    # ---------------------------------------------------------- commands

    def run(
        self, *argv: str, check: bool = True, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster, from its scratch directory
        (where batch jobs' output files then land)."""
        r = subprocess.run(
            list(argv),
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def job_state(self, job_id: str) -> str:
        """squeue's state for the job ("" once it left the queue)."""
        return self.run("squeue", "-h", "-j", job_id, "-o", "%T", check=False).stdout.strip()

    def wait_state(self, job_id: str, state: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while (now := self.job_state(job_id)) != state:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"job {job_id} is {now or 'gone'}, not {state}:\n" + self.logs()
                )
            time.sleep(0.1)

    def _log_lines(self, name: str, needle: str) -> int:
        try:
            text = (self.dir / "log" / name).read_text(errors="replace")
        except FileNotFoundError:
            return 0
        return sum(1 for line in text.splitlines() if needle in line)

    def sbatch_calls(self) -> int:
        """Batch jobs submitted so far (accepted or refused), from slurmctld's log."""
        return self._log_lines("slurmctld.log", "_slurm_rpc_submit_batch_job")

    def job_steps(self) -> int:
        """Job steps (`srun` into an allocation) launched so far, from slurmd's log."""
        return self._log_lines("slurmd.log", "launch task StepId=")

    def reset_jobs(self, timeout: float = 30.0) -> None:
        """Cancel every job and wait until the node is idle again: a cluster shared by
        tests is handed to the next one empty."""
        self.run("scancel", "--user", getpass.getuser(), check=False)
        self._wait_for(
            lambda: not self.run("squeue", "-h", "-o", "%i", check=False).stdout.strip()
            and self._node_idle(),
            "every job to leave the queue",
            timeout,
        )

    def login_node_env(self, node: SshdNode) -> None:
        """Make SSH sessions on `node` see this cluster, as a real login node's shell
        profile would; call before `node.start()`."""
        node.extra_config.append(f"SetEnv SLURM_CONF={self.conf}")
        node.configure()

    def __repr__(self) -> str:
        return f"SlurmCluster({self.dir})"
