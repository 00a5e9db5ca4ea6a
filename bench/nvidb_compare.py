"""nvq side by side with nvidb 1.9.2 on the same sshd nodes, CPU-only jobs (`--gpus 0`).

nvidb is installed from PyPI into its own venv (`bench/.nvidb-venv`, git-ignored; never
vendored) and configured through its own files in a throw-away HOME (`queue.yml`,
`~/.ssh/known_hosts` holding the harness nodes' host keys), so it never touches the
real ~/.nvidb. It is driven by `nvidb queue tick --watch 1`: a forced scheduler pass,
then a 1 s sleep, forever. That is the smallest interval nvidb accepts anywhere
(`queue daemon --interval` is the same loop clamped to >= 2 s; lane runners poll at
`lane_poll_interval` >= 1 s but lanes exist only on GPUs, so CPU jobs never get one).

Figures, for both tools in one run (ratio = nvidb / nvq):

1. exit -> next start: one sshd node, a per-node CPU job limit of 1 on both sides
   (nvq `[queue] max_cpu_jobs_per_node = 1`, nvidb `queue.max_cpu_jobs_per_node: 1`),
   a chain of jobs pinned to that node queued behind a blocker. Each job stamps bash's
   $EPOCHREALTIME as its first and last instruction; the gap is the next job's first
   stamp minus the previous job's last one.
2. submit -> running: on the idle node, from the moment the CLI submit call returns
   (and from the moment it was called) to the job's first instruction.
3. throughput: N `true` jobs over 4 sshd nodes (default limit of 4 CPU jobs per node on
   both sides), queued with `--after` behind a blocker; from the moment the blocker is
   released to the moment the queue has recorded the last completion.

Set-up submissions (the chain, the throughput jobs) do not count in any figure: nvq's go
through its CLI, nvidb's through `nvidb.sched.Scheduler.submit` in one process (what its
CLI calls, without a ~1 s interpreter start per job). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from common import ONE_CARD, emit, machine, summary_ms, wait_nodes_up

from tests.cluster import Nvq, kill_processes_under, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode, start_sshd_nodes

HERE = Path(__file__).resolve().parent
NVIDB_VERSION = "1.9.2"
NVIDB_VENV = Path(os.environ.get("NVIDB_VENV", HERE / ".nvidb-venv"))
NVIDB_PY = NVIDB_VENV / "bin" / "python"
NVIDB_BIN = NVIDB_VENV / "bin" / "nvidb"
WATCH_S = 1  # `nvidb queue tick --watch N`: N >= 1 (cli.py: time.sleep(max(1, int(N))))
NVIDB_DRIVER = f"nvidb queue tick --watch {WATCH_S}"

# The job's first and last instruction: a bash builtin, no fork.
STAMP = 'printf "%s {tag} ${var}\\n" "$EPOCHREALTIME" >> {log}'


def stamp(tag: str, var: str, log: Path) -> str:
    return STAMP.format(tag=tag, var=var, log=log)


def read_stamps(log: Path) -> dict[tuple[str, int], float]:
    out: dict[tuple[str, int], float] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out[(parts[1], int(parts[2]))] = float(parts[0])
    return out


def ratio(a: float, b: float) -> float | None:
    return float(f"{a / b:.3g}") if b else None


# ------------------------------------------------------------------ nvidb install


def ensure_nvidb() -> str:
    """`bench/.nvidb-venv` with nvidb==1.9.2 from PyPI (pip resolves its dependencies)."""
    def installed() -> str | None:
        if not NVIDB_PY.exists():
            return None
        r = subprocess.run([str(NVIDB_PY), "-c", "import nvidb.config as c; print(c.VERSION)"],
                           capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    if installed() != NVIDB_VERSION:
        if not NVIDB_PY.exists():
            subprocess.run([sys.executable, "-m", "venv", str(NVIDB_VENV)], check=True)
        subprocess.run([str(NVIDB_PY), "-m", "pip", "install", "-q", f"nvidb=={NVIDB_VERSION}"],
                       check=True, stdout=subprocess.DEVNULL)
    version = installed()
    if version != NVIDB_VERSION:
        raise RuntimeError(f"nvidb {NVIDB_VERSION} not importable from {NVIDB_VENV} ({version})")
    return version


# ------------------------------------------------------------------ nvq side


@contextlib.contextmanager
def nvq_queue(tmp: Path, nodes: list[SshdNode], queue_extra: str = "") -> Iterator[Nvq]:
    nvq = make_nvq(tmp, gpus=ONE_CARD, sample_interval=2.0)
    try:
        write_mesh_config(nvq, nodes, gpus=ONE_CARD, sample_interval=2.0, queue_extra=queue_extra)
        pp = os.environ.get("PYTHONPATH")
        if pp:
            # A run against a clean worktree (PYTHONPATH=...): the node runners import
            # the same nvq as the daemon.
            cfg = nvq.home / "config.toml"
            cfg.write_text(cfg.read_text().replace("[nodes.env]\n", f"[nodes.env]\nPYTHONPATH = {json.dumps(pp)}\n"))
        nvq.ok("queue", "status")
        wait_nodes_up(nvq)
        yield nvq
    finally:
        nvq.shutdown()


def nvq_chain(tmp: Path, node: SshdNode, pairs: int, runs: int) -> dict[str, Any]:
    with nvq_queue(tmp, [node], "max_cpu_jobs_per_node = 1") as nvq:
        log = tmp / "stamps.log"
        body = f"{stamp('start', 'NVQ_JOB_ID', log)}; {stamp('end', 'NVQ_JOB_ID', log)}"
        gate = tmp / "gate"
        blocker = nvq.submit("--gpus", "0", "--node", "n0", "--",
                             f"while [ ! -e {gate} ]; do sleep 0.01; done")["id"]
        ids = [nvq.submit("--gpus", "0", "--node", "n0", "--", body)["id"] for _ in range(pairs + 1)]
        gate.touch()
        code, _ = nvq.wait(blocker, *ids, timeout=300)
        assert code == 0, code
        st = read_stamps(log)
        gaps = [st[("start", b)] - st[("end", a)] for a, b in pairwise(ids)]

        # submit -> running on the (now idle) node.
        log2 = tmp / "submit.log"
        after_return, from_call = [], []
        for _ in range(runs):
            called = time.time()
            r = nvq.ok("job", "submit", "--json", "--gpus", "0", "--node", "n0", "--",
                       stamp("start", "NVQ_JOB_ID", log2))
            returned = time.time()
            job_id = r.json()["id"]
            nvq.wait(job_id)
            started = read_stamps(log2)[("start", job_id)]
            after_return.append(started - returned)
            from_call.append(started - called)
        return {
            "exit_to_next_start": summary_ms(gaps),
            "submit_to_running": {"after_return": summary_ms(after_return),
                                  "after_call_start": summary_ms(from_call)},
        }


def nvq_throughput(tmp: Path, nodes: list[SshdNode], n: int) -> dict[str, Any]:
    with nvq_queue(tmp, nodes) as nvq:
        gate = tmp / "gate"
        blocker = nvq.submit("--gpus", "0", "--node", "n0", "--",
                             f"while [ ! -e {gate} ]; do sleep 0.01; done")["id"]
        ids = [nvq.submit("--gpus", "0", "--after", str(blocker), "--", "true")["id"]
               for _ in range(n)]
        nvq.wait_for(blocker, lambda j: j["state"] == "running")
        t0 = time.time()
        gate.touch()
        code, jobs = nvq.wait(blocker, *ids, timeout=300)
        t1 = time.time()
        assert code == 0, code
        per_node: dict[str, int] = {}
        for j in jobs:
            if j["id"] != blocker:
                per_node[str(j.get("node"))] = per_node.get(str(j.get("node")), 0) + 1
        return {"n": n, "nodes": len(nodes), "seconds": round(t1 - t0, 3),
                "jobs_per_s": round(n / (t1 - t0), 1), "per_node": per_node,
                "done_when": "`nvq job wait` on all N returned"}


# ------------------------------------------------------------------ nvidb side


class Nvidb:
    """nvidb in a throw-away HOME, configured through its own files."""

    TERMINAL = ("completed", "failed", "cancelled", "lost", "timeout")

    def __init__(self, tmp: Path, nodes: list[SshdNode], queue: dict[str, Any]):
        self.tmp = tmp
        self.home = tmp / "home"
        self.dir = self.home / ".nvidb"
        self.dir.mkdir(parents=True)
        ssh = self.home / ".ssh"
        ssh.mkdir()
        # paramiko: AutoAddPolicy after load_system_host_keys() (~/.ssh/known_hosts), so
        # the harness's host keys are put there and a changed key would be refused.
        (ssh / "known_hosts").write_text("".join(Path(n.known_hosts).read_text() for n in nodes))
        servers = [
            {
                "hostname": n.host,
                "port": n.port,
                "username": n.user,
                "nickname": f"n{i}",
                "auth": "key",
                "identityfile": str(n.identity),
            }
            for i, n in enumerate(nodes)
        ]
        settings = {
            "include_local": False,
            # Job directories on the nodes, outside the remote $HOME (the nodes log in
            # as this machine's user, whose real ~/.nvidb must stay untouched).
            "job_root": str(tmp / "jobs"),
            "min_disk_free_mb": 0,
            "notify": {"enabled": False, "desktop": False},
            **queue,
        }
        (self.dir / "queue.yml").write_text(json.dumps({"servers": servers, "queue": settings}, indent=1))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("NVIDB_", "NVQ_", "PYTHON", "VIRTUAL_ENV"))}
        self.env.update(HOME=str(self.home), NVIDB_HOME=str(self.dir),
                        NVIDB_SUBMITTER="nvq-bench", PYTHONDONTWRITEBYTECODE="1")
        self.driver: subprocess.Popen[bytes] | None = None
        self.db = self.dir / "queue.db"

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([str(NVIDB_BIN), *args], env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"nvidb {' '.join(args)} exited {r.returncode}: {r.stderr or r.stdout}")
        return r

    def submit_many(self, specs: list[dict[str, Any]]) -> list[int]:
        """Queue jobs in one process through nvidb's own Scheduler.submit (set-up only)."""
        code = (
            "import json, sys\n"
            "from nvidb.sched import db as dbm\n"
            "from nvidb.sched.scheduler import Scheduler\n"
            "s = Scheduler(dbm.open_db()); s.sync_nodes_from_config()\n"
            "ids = []\n"
            "for spec in json.load(sys.stdin):\n"
            "    after = [ids[i] for i in spec.pop('after_index', [])]\n"
            "    ids.append(s.submit(depends_on=after or None, **spec))\n"
            "print(json.dumps(ids))\n"
        )
        r = subprocess.run([str(NVIDB_PY), "-c", code], env=self.env, input=json.dumps(specs),
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"nvidb submit failed: {r.stderr[-2000:]}")
        return list(json.loads(r.stdout.strip().splitlines()[-1]))

    def start_driver(self) -> None:
        log = (self.tmp / "driver.log").open("ab")
        self.driver = subprocess.Popen(
            [str(NVIDB_BIN), "queue", "tick", "--watch", str(WATCH_S), "--json"],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()

    def states(self, ids: list[int]) -> dict[int, str]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        try:
            q = f"SELECT id, state FROM jobs WHERE id IN ({','.join('?' * len(ids))})"
            return {int(i): str(s) for i, s in conn.execute(q, ids)}
        finally:
            conn.close()

    def wait_done(self, ids: list[int], timeout: float, poll: float = 0.02) -> float:
        """Poll the queue database until every job is terminal; returns when seen."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                st = self.states(ids)
            except sqlite3.OperationalError:
                st = {}
            if len(st) == len(ids) and all(s in self.TERMINAL for s in st.values()):
                bad = {i: s for i, s in st.items() if s != "completed"}
                if bad:
                    raise RuntimeError(f"nvidb jobs did not complete: {bad}")
                return time.time()
            if time.monotonic() > deadline:
                raise TimeoutError(f"nvidb jobs still active: {st}")
            time.sleep(poll)

    def wait_nodes_up(self, names: list[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
                up = {r[0] for r in conn.execute("SELECT name FROM nodes WHERE state = 'up'")}
                conn.close()
                if set(names) <= up:
                    return
            except sqlite3.OperationalError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"nvidb nodes not up: {(self.tmp / 'driver.log').read_text()[-2000:]}")

    def close(self) -> None:
        if self.driver is not None and self.driver.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.driver.pid, signal.SIGTERM)
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.driver.pid, signal.SIGKILL)
                self.driver.wait()
        kill_processes_under(self.tmp)


def nvidb_chain(tmp: Path, node: SshdNode, pairs: int, runs: int) -> dict[str, Any]:
    nv = Nvidb(tmp, [node], {"max_cpu_jobs_per_node": 1})
    try:
        log = tmp / "stamps.log"
        gate = tmp / "gate"
        body = f"{stamp('start', 'NVIDB_JOB_ID', log)}; {stamp('end', 'NVIDB_JOB_ID', log)}"
        specs = [{"command": f"while [ ! -e {gate} ]; do sleep 0.01; done", "gpus": 0, "node": "n0"}]
        specs += [{"command": body, "gpus": 0, "node": "n0"} for _ in range(pairs + 1)]
        ids = nv.submit_many(specs)
        nv.start_driver()
        nv.wait_nodes_up(["n0"])
        gate.touch()
        nv.wait_done(ids, timeout=600)
        st = read_stamps(log)
        chain = ids[1:]
        gaps = [st[("start", b)] - st[("end", a)] for a, b in pairwise(chain)]

        log2 = tmp / "submit.log"
        after_return, from_call, call_s = [], [], []
        submit_tick = {"ran": 0, "locked": 0, "other": 0}
        for _ in range(runs):
            called = time.time()
            r = nv.cli("job", "submit", "--json", "--gpus", "0", "--node", "n0", "--",
                       stamp("start", "NVIDB_JOB_ID", log2))
            returned = time.time()
            doc = json.loads(r.stdout)
            job_id = int(doc["job"]["id"])
            tick = doc.get("tick") or {}
            key = "ran" if tick.get("ran") else ("locked" if tick.get("skipped") == "locked" else "other")
            submit_tick[key] += 1
            nv.wait_done([job_id], timeout=120)
            started = read_stamps(log2)[("start", job_id)]
            after_return.append(started - returned)
            from_call.append(started - called)
            call_s.append(returned - called)
        return {
            "exit_to_next_start": summary_ms(gaps),
            "submit_to_running": {"after_return": summary_ms(after_return),
                                  "after_call_start": summary_ms(from_call),
                                  "submit_call": summary_ms(call_s),
                                  "submit_own_tick": submit_tick},
        }
    finally:
        nv.close()


def nvidb_throughput(tmp: Path, nodes: list[SshdNode], n: int) -> dict[str, Any]:
    nv = Nvidb(tmp, nodes, {})
    try:
        gate = tmp / "gate"
        specs = [{"command": f"while [ ! -e {gate} ]; do sleep 0.01; done", "gpus": 0, "node": "n0"}]
        specs += [{"command": "true", "gpus": 0, "after_index": [0]} for _ in range(n)]
        ids = nv.submit_many(specs)
        nv.start_driver()
        nv.wait_nodes_up([f"n{i}" for i in range(len(nodes))])
        # Let the blocker start, so the window below is the drain alone.
        deadline = time.monotonic() + 60
        while nv.states(ids[:1]).get(ids[0]) != "running":
            if time.monotonic() > deadline:
                raise RuntimeError("nvidb blocker never started")
            time.sleep(0.05)
        t0 = time.time()
        gate.touch()
        t1 = nv.wait_done(ids, timeout=600, poll=0.05)
        conn = sqlite3.connect(f"file:{nv.db}?mode=ro", uri=True)
        per_node = {str(node): int(c) for node, c in conn.execute(
            "SELECT node, COUNT(*) FROM jobs WHERE id != ? GROUP BY node", (ids[0],))}
        conn.close()
        return {"n": n, "nodes": len(nodes), "seconds": round(t1 - t0, 3),
                "jobs_per_s": round(n / (t1 - t0), 2), "per_node": per_node,
                "done_when": "queue.db shows all N completed (polled every 50 ms)"}
    finally:
        nv.close()


# ------------------------------------------------------------------ main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=50, help="nvq exit->start pairs")
    ap.add_argument("--nvidb-pairs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=20, help="nvq submit->running runs")
    ap.add_argument("--nvidb-runs", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=100, help="nvq throughput jobs")
    ap.add_argument("--nvidb-jobs", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=4, help="sshd nodes for throughput")
    args = ap.parse_args()

    started = time.monotonic()
    version = ensure_nvidb()
    root = Path(tempfile.mkdtemp(prefix="nvq-bench-nvidb-"))
    nodes: list[SshdNode] = []
    try:
        nodes = start_sshd_nodes(root / "sshd", 1 + args.nodes)
        one, many = nodes[0], nodes[1:]
        q_chain = nvq_chain(root / "nvq-chain", one, args.pairs, args.runs)
        d_chain = nvidb_chain(root / "nvidb-chain", one, args.nvidb_pairs, args.nvidb_runs)
        q_tp = nvq_throughput(root / "nvq-tp", many, args.jobs)
        d_tp = nvidb_throughput(root / "nvidb-tp", many, args.nvidb_jobs)
    finally:
        for node in nodes:
            node.close()
        kill_processes_under(root)
        shutil.rmtree(root, ignore_errors=True)

    def p50(doc: dict[str, Any], *path: str) -> float:
        for key in path:
            doc = doc[key]
        return float(doc)  # type: ignore[arg-type]

    emit({
        "bench": "nvidb_compare",
        "machine": machine(),
        "setup": {
            "nvidb_version": version,
            "nvidb_setting": f"`{NVIDB_DRIVER}` (forced scheduler pass, then {WATCH_S} s sleep; the "
                       "smallest interval nvidb allows: `queue daemon --interval` is clamped to >= 2 s)",
            "nvidb_config": "queue.yml in a throw-away HOME/NVIDB_HOME: servers (127.0.0.1, port, "
                      "username, auth: key, identityfile), host keys in HOME/.ssh/known_hosts; "
                      "queue: include_local false, absolute job_root, notify off",
            "sequencing": "per-node CPU job limit of 1 on both sides (nvq [queue] "
                      "max_cpu_jobs_per_node = 1, nvidb queue.max_cpu_jobs_per_node: 1), jobs "
                      "pinned to one sshd node; nvidb lanes exist only on GPUs",
            "nvidb_submissions": "set-up jobs through nvidb.sched.Scheduler.submit in one "
                                 "process, measured submits through `nvidb job submit --json`",
        },
        "nvq": {**q_chain, "throughput": q_tp},
        "nvidb": {**d_chain, "throughput": d_tp},
        "ratio_nvidb_over_nvq": {
            "exit_to_next_start_p50": ratio(p50(d_chain, "exit_to_next_start", "p50_ms"),
                                            p50(q_chain, "exit_to_next_start", "p50_ms")),
            "exit_to_next_start_p99": ratio(p50(d_chain, "exit_to_next_start", "p99_ms"),
                                            p50(q_chain, "exit_to_next_start", "p99_ms")),
            "submit_to_running_from_call_p50": ratio(
                p50(d_chain, "submit_to_running", "after_call_start", "p50_ms"),
                p50(q_chain, "submit_to_running", "after_call_start", "p50_ms")),
            "throughput_jobs_per_s": ratio(d_tp["jobs_per_s"], q_tp["jobs_per_s"]),
        },
        "wall_s": round(time.monotonic() - started, 1),
    })


if __name__ == "__main__":
    main()
