"""Soak: a queue of three sshd nodes under concurrent submitters and a random fault
loop, then the invariants checked from the jobs' own ledger.

Faults (one at a time, each kind in turn in a shuffled round, random durations):
`daemon_kill9`, `runner_kill9`, `link_freeze` (the node's sshd listener, sessions and
`attach` SIGSTOPped: a partition, nothing dies), `sshd_down` (sshd and its sessions
killed, restarted later; the runner and jobs live on), `runner_sigstop`, `disk_full`
(the queue host's NVQ_HOME is a small tmpfs this script mounts; a filler file takes
all of it), `cancel_running`, `job_lost` (a running `--retries` job's process group
SIGKILLed: no exit record, so it is lost and retried), `planned_stop` (`nvq daemon
stop` for longer than the lease, then `nvq daemon start`), `reload_freeze` (a link
frozen while `daemon reload` shortens or lengthens `node_grace` and the lease),
`host_reboot` (the queue host's orderly reboot: the daemon SIGTERMed, then every
node's sshd and sessions gone with it, for longer than the lease; all back, then the
daemon). Submitters hold off while a planned stop or a reboot lasts (a submit would
start the daemon again).

Every job appends `start JOB ATTEMPT TIME -` and `end JOB ATTEMPT TIME CODE` to a
ledger file (a SIGTERM writes its end too; a `job_lost` kill is written by this
script after the kill). At the end, with every fault healed and the queue drained:

* every acknowledged job exists and is finished (`wedged` otherwise, after `--drain`);
* no attempt started twice, and no two attempts of one job overlapped;
* no job ran to a successful end twice;
* every recorded exit (completed/failed) equals its attempt's ledger end;
* no job was killed by a planned stop or reboot (no `attempt_fenced` whose runner
  fenced it while one lasted: `killed_by_planned_stop`);
* `nvq queue check` is clean.

Prints ONE JSON line: counts (jobs, faults by kind, final states) and every violation.
Traffic stays on loopback; everything it made is removed at the end.

    cd bench && ../.venv/bin/python soak.py --minutes 5
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import ROOT, emit, machine

from nvq_runner.launcher import runner_pid
from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode, start_sshd_nodes

TWO_CARDS = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\nname = "Soak card {i}"\nmemory = "24GiB"\n' for i in range(2)
)
# lease 3s + kill_grace 2s + margin 2s <= node_grace 10s (nvq.config.lease)
TIMES = {
    'node_grace = "2s"': 'node_grace = "10s"',
    'lease = "off"': 'lease = "3s"',
    'kill_grace = "2s"': 'kill_grace = "2s"',
}
# What `reload_freeze` switches between: (node_grace, lease), each within the rule.
GRACES = {"base": ("10s", "3s"), "short": ("7s", "2s"), "long": ("20s", "14s")}
LONGEST_LEASE = 14.0  # a planned stop outlasts it (and kill_grace) to prove the grant
KINDS = [
    "daemon_kill9", "runner_kill9", "link_freeze", "sshd_down", "runner_sigstop",
    "disk_full", "cancel_running", "job_lost", "planned_stop", "reload_freeze",
    "host_reboot",
]
FINISHED = {"completed", "failed", "cancelled", "timeout", "lost"}
ENDINGS = {"job_completed", "job_failed", "job_cancelled", "job_timeout", "job_lost"}
TOLD = {"node_down", "job_reassigned", "attempt_fenced", "owed_kill", "job_found",
        "job_retried", "attempt_superseded", "job_lost"}
MAX_OUTSTANDING = 40  # submitters wait while this many acknowledged jobs are unfinished


class Gate:
    """Submitters and the watcher pass one at a time or together; a planned stop
    closes it, waits for those inside to leave, and keeps the rest out (their CLI
    would start the daemon it stopped)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._inside = 0
        self._closed = False

    @contextlib.contextmanager
    def passing(self) -> Any:
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._inside += 1
        try:
            yield
        finally:
            with self._cond:
                self._inside -= 1
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.wait_for(lambda: self._inside == 0)

    def open(self) -> None:
        with self._cond:
            self._closed = False
            self._cond.notify_all()


class Soak:
    def __init__(self, root: Path, nvq: Nvq, nodes: list[SshdNode], rng: random.Random,
                 fs: Path) -> None:
        self.root = root
        self.nvq = nvq
        self.nodes = nodes
        self.rng = rng
        self.fs = fs
        self.ledger = root / "ledger"
        self.ledger.touch()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked: set[int] = set()
        self.finished: set[int] = set()
        self.submit_errors: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.fault_errors: list[str] = []
        self.with_retries: set[int] = set()
        self.told: Counter[str] = Counter()
        self.exits: dict[tuple[int, int], int] = {}  # (job, attempt) → exit its events record
        self.gate = Gate()
        self.planned: list[tuple[float, float]] = []  # planned stops and reboots (wall clock)
        self.fenced_in_planned: list[str] = []
        self.grace = "base"
        self.at_least: dict[str, int] = {}  # kind (or "total") → faults it must have
        self.spent: dict[str, list[float]] = {}  # kind → seconds each of its faults took
        self.overran = 0.0

    # ------------------------------------------------------------ the CLI

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nvq", *args], env=self.nvq.env, cwd=self.nvq.cwd,
            capture_output=True, text=True, timeout=timeout,
        )

    def jobs(self) -> list[dict[str, Any]]:
        r = self.cli("job", "ls", "--all", "--json", timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"job ls: {r.stderr.strip() or r.stdout.strip()}")
        doc = json.loads(r.stdout)
        return doc["jobs"] if isinstance(doc, dict) else doc  # type: ignore[no-any-return]

    # ------------------------------------------------------------ submitters

    def body(self, seconds: float, code: int) -> str:
        mark = f'echo "$1 $NVQ_JOB_ID $NVQ_ATTEMPT $(date +%s.%N) $2" >> {self.ledger}'
        return (
            f"mark() {{ {mark}; }}; mark start -; "
            "trap 'mark end 143; exit 143' TERM; "
            f"sleep {seconds:.2f}; trap '' TERM; mark end {code}; exit {code}"
        )

    def submitter(self) -> None:
        rng = random.Random(self.rng.random())
        while not self.stop.is_set():
            with self.lock:
                busy = len(self.acked - self.finished)
            if busy >= MAX_OUTSTANDING:
                time.sleep(0.5)
                continue
            long = rng.random() < 0.25
            seconds = rng.uniform(6, 15) if long else rng.uniform(0.2, 3)
            code = 3 if rng.random() < 0.1 else 0
            flags = ["--gpus", rng.choice(["0", "1", "1"]), "--name", "soak"]
            retries = rng.random() < 0.3
            if retries:
                flags += ["--retries", "2"]
            elif rng.random() < 0.1:
                flags.append("--no-reassign")
            try:
                with self.gate.passing():
                    r = self.cli("job", "submit", *flags, "--json", "--",
                                 self.body(seconds, code))
            except subprocess.TimeoutExpired:
                self.submit_errors["timeout"] += 1
                continue
            if r.returncode == 0:
                job_id = int(json.loads(r.stdout)["id"])
                with self.lock:
                    self.acked.add(job_id)
                    if retries:
                        self.with_retries.add(job_id)
            else:
                self.submit_errors[_error(r)[:80]] += 1
            time.sleep(rng.uniform(0.2, 1.0))

    def watcher(self) -> None:
        """Which acknowledged jobs have finished (for the outstanding limit)."""
        while not self.stop.is_set():
            with contextlib.suppress(Exception), self.gate.passing():
                done = {j["id"] for j in self.jobs() if j["state"] in FINISHED}
                with self.lock:
                    self.finished |= done
            self.stop.wait(3)

    # ------------------------------------------------------------ faults

    def daemon_pid(self) -> int | None:
        try:
            return int((self.nvq.home / "daemon.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def _runner_or_none(self, node: SshdNode) -> int | None:
        try:
            return self.runner(node)
        except RuntimeError:
            return None

    def runner(self, node: SshdNode) -> int:
        """The node's runner: `serve --home <its home>` (runner.pid may be stale)."""
        needle = b"\0".join([b"nvq_runner", b"serve", b"--home", str(node.home).encode()])
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                        return int(entry)
        pid = runner_pid(node.home)
        if pid is None:
            raise RuntimeError(f"no runner on {node.home}")
        return pid

    def running(self) -> list[dict[str, Any]]:
        return [j for j in self.jobs() if j["state"] == "running"]

    def fault(self, kind: str) -> None:
        rng = self.rng
        node = rng.choice(self.nodes)
        if kind in ("runner_kill9", "runner_sigstop"):  # one may be restarting
            node = next((n for n in rng.sample(self.nodes, len(self.nodes))
                         if self._runner_or_none(n) is not None), node)
        if kind == "daemon_kill9":
            pid = self.daemon_pid()
            if pid is None:
                raise RuntimeError("no daemon pid")
            os.kill(pid, signal.SIGKILL)
            time.sleep(rng.uniform(0, 4))
            self.cli("queue", "status")  # the CLI starts the next one (submitters do too)
        elif kind == "runner_kill9":
            os.kill(self.runner(node), signal.SIGKILL)
        elif kind == "link_freeze":
            node.pause()
            try:
                time.sleep(rng.uniform(2, 25))
            finally:
                node.resume()
        elif kind == "sshd_down":
            node.kill_all()
            try:
                time.sleep(rng.uniform(5, 30))
            finally:
                node.start()
        elif kind == "runner_sigstop":
            pid = self.runner(node)
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(rng.uniform(2, 12))
            finally:
                os.kill(pid, signal.SIGCONT)
        elif kind == "disk_full":
            filler = self.fs / "filler"
            try:
                with open(filler, "wb") as f, contextlib.suppress(OSError):
                    while True:
                        f.write(b"\0" * (1 << 20))
                time.sleep(rng.uniform(3, 12))
            finally:
                filler.unlink(missing_ok=True)
        elif kind == "cancel_running":
            for _ in range(5):  # a short job may end between the listing and the cancel
                running = self.running()
                if not running:
                    time.sleep(1)
                    continue
                job = rng.choice(running)
                r = self.cli("job", "cancel", str(job["id"]))
                if r.returncode == 0:
                    return
            raise RuntimeError("no running job could be cancelled")
        elif kind == "planned_stop":
            self.planned_stop(lambda: self.cli("daemon", "stop", timeout=120), [])
        elif kind == "host_reboot":
            def sigterm() -> None:
                pid = self.daemon_pid()
                if pid is None:
                    raise RuntimeError("no daemon pid")
                os.kill(pid, signal.SIGTERM)  # the service manager, at shutdown
            self.planned_stop(sigterm, self.nodes)
        elif kind == "reload_freeze":
            node.pause()
            try:
                self.reload_to(rng.choice([g for g in GRACES if g != self.grace]))
                time.sleep(rng.uniform(2, 25))
            finally:
                node.resume()
        elif kind == "job_lost":
            # Lost, as a job is when its node reboots: its process group SIGKILLed
            # while no runner watches (a runner's own child would show exit 137), so
            # the restarted runner finds it gone without an exit record.
            with self.lock:
                retried = set(self.with_retries)
            running = [j for j in self.running() if j["id"] in retried and j.get("pid")]
            job = rng.choice(running) if running else self.own_retried_job()
            host = self.nodes[int(str(job["node"])[1:])]
            os.kill(self.runner(host), signal.SIGKILL)
            os.killpg(int(job["pid"]), signal.SIGKILL)
            with open(self.ledger, "a") as out:  # its own end line could not be written
                out.write(f"end {job['id']} {job['attempt']} {time.time():.6f} lost\n")

    def planned_stop(self, stop: Any, links: list[SshdNode]) -> None:
        """Stop the daemon as planned (`stop`), wait until it is gone, cut `links`
        (a reboot takes the network down after the services), stay away longer than
        any lease, then bring all back: no job may be fenced meanwhile."""
        self.gate.close()
        began = time.time()
        try:
            pid = self.daemon_pid()
            stop()
            deadline = time.monotonic() + 60
            while pid is not None and _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            for node in links:
                node.kill_all()
            time.sleep(self.rng.uniform(LONGEST_LEASE + 4, LONGEST_LEASE + 14))
            for node in links:
                node.start()
            r = self.cli("daemon", "start", timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"daemon start: {_error(r)[:100]}")
        finally:
            self.planned.append((began, time.time() + 2))
            self.gate.open()

    def reload_to(self, grace: str) -> None:
        node_grace, lease = GRACES[grace]
        config = (self.nvq.home / "config.toml").read_text()
        config = re.sub(r'node_grace = "\w+"', f'node_grace = "{node_grace}"', config)
        config = re.sub(r'lease = "\w+"', f'lease = "{lease}"', config)
        self.nvq.write_config(config)
        r = self.cli("daemon", "reload")
        if r.returncode != 0:
            raise RuntimeError(f"reload: {_error(r)[:100]}")
        self.grace = grace

    def own_retried_job(self) -> dict[str, Any]:
        """A `--retries` job of the fault loop's own, once it runs (none was running)."""
        r = self.cli("job", "submit", "--gpus", "0", "--retries", "2", "--name", "soak",
                     "--json", "--", self.body(12.0, 0))
        if r.returncode != 0:
            raise RuntimeError(f"submit: {_error(r)[:100]}")
        job_id = int(json.loads(r.stdout)["id"])
        with self.lock:
            self.acked.add(job_id)
            self.with_retries.add(job_id)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = [j for j in self.running() if j["id"] == job_id and j.get("pid")]
            if found:
                return found[0]
            time.sleep(0.5)
        raise RuntimeError(f"job {job_id} did not start")

    def owed(self) -> dict[str, int]:
        """Faults still owed to `--at-least` (`total` for all kinds together)."""
        made = Counter(self.faults)
        made["total"] = sum(self.faults.values())
        return {k: n - made[k] for k, n in self.at_least.items() if n > made[k]}

    def cost(self, kind: str) -> float:
        """Seconds one fault of `kind` has taken here (with its gap): the mean so far,
        or a guess before the first (about a long frozen link's)."""
        spent = self.spent.get(kind, [])
        return sum(spent) / len(spent) if spent else 25.0

    def next_kind(self, until: float, round_: list[str]) -> str:
        """The shuffled round's next kind, unless what `--at-least` still owes would
        not fit in the time left (or the time is up): then an owed kind, so the
        minimums hold however the durations fall."""
        owed = self.owed()
        kinds = {k: n for k, n in owed.items() if k != "total"}
        need = sum(n * self.cost(k) for k, n in kinds.items())
        if kinds and until - time.monotonic() <= 1.5 * need + 60:
            return self.rng.choice(sorted(kinds))
        if not round_:
            round_ += KINDS
            self.rng.shuffle(round_)
        return round_.pop()

    def fault_loop(self, until: float) -> None:
        round_: list[str] = []
        cap = until + 15 * 60  # faults owed past the time given: at most this far
        while time.monotonic() < until or (self.owed() and time.monotonic() < cap):
            kind = self.next_kind(until, round_)
            began = time.monotonic()
            try:
                self.fault(kind)
                self.faults[kind] += 1
            except Exception as exc:  # a fault that could not be made is not counted
                self.fault_errors.append(f"{kind}: {exc}"[:200])
            time.sleep(self.rng.uniform(2, 6))
            self.spent.setdefault(kind, []).append(time.monotonic() - began)
        self.overran = max(0.0, time.monotonic() - until)

    def heal(self) -> None:
        (self.fs / "filler").unlink(missing_ok=True)
        for node in self.nodes:
            node.resume()
            if not node.running:
                node.start()
            with contextlib.suppress(Exception):
                os.kill(self.runner(node), signal.SIGCONT)
        self.cli("queue", "status")

    # ------------------------------------------------------------ the verdict

    def verdict(self, drain: float) -> dict[str, Any]:
        violations: list[str] = []
        deadline = time.monotonic() + drain
        jobs: dict[int, dict[str, Any]] = {}
        while True:
            try:
                jobs = {j["id"]: j for j in self.jobs()}
            except Exception as exc:
                if not any(v.startswith("job ls failed") for v in violations):
                    violations.append(f"job ls failed while draining: {exc}")
                jobs = {}
            open_ = [i for i in self.acked if jobs.get(i, {}).get("state") not in FINISHED]
            if not open_ or time.monotonic() > deadline:
                break
            time.sleep(2)
        for i in sorted(self.acked):
            if i not in jobs:
                violations.append(f"job {i}: acknowledged, not in the queue")
            elif jobs[i]["state"] not in FINISHED:
                violations.append(f"job {i}: wedged in {jobs[i]['state']} after {drain:g}s drain "
                                  f"({jobs[i].get('reason')})")

        starts: dict[tuple[int, int], float] = {}
        ends: dict[tuple[int, int], tuple[float, str]] = {}
        for line in self.ledger.read_text().splitlines():
            what, job_no, attempt, at, code = line.split()
            key = (int(job_no), int(attempt))
            if what == "start":
                if key in starts:
                    violations.append(f"job {key[0]}: attempt {key[1]} started twice")
                starts[key] = float(at)
            elif key not in ends:  # the first end counts (a kill may write another)
                ends[key] = (float(at), code)
        unproven: list[str] = []
        reran: list[int] = []
        by_job: dict[int, list[int]] = {}
        for job_id, n in starts:
            by_job.setdefault(job_id, []).append(n)
        for job_id, attempts in by_job.items():
            spans = sorted((starts[(job_id, a)], a) for a in attempts)
            for (_, a1), (s2, a2) in itertools.pairwise(spans):
                end = ends.get((job_id, a1))
                if end is None:
                    unproven.append(f"job {job_id}: attempt {a1} has no end line, "
                                    f"attempt {a2} started after it")
                elif end[0] > s2:
                    violations.append(f"job {job_id}: attempts {a1} and {a2} overlapped "
                                      f"({end[0] - s2:.3f}s)")
            good = [a for a in attempts if ends.get((job_id, a), (0, ""))[1] == "0"]
            if len(good) > 1:
                # At least once, by design, for a reassignable job: an attempt that ends
                # while its node is cut off is not known to have ended, and past
                # node_grace the job runs again. Counted; the records must still agree.
                reran.append(job_id)
        violations += self.ended_once(jobs)
        violations += self.fenced_in_planned
        # Every exit the queue recorded for an attempt is the one its ledger wrote...
        for (job_id, n), recorded in sorted(self.exits.items()):
            end = ends.get((job_id, n))
            if end is None:
                if (job_id, n) in starts:
                    unproven.append(f"job {job_id}: attempt {n} recorded exit {recorded}, "
                                    "wrote no end line")
            elif end[1] not in ("lost", str(recorded)):
                violations.append(f"job {job_id}: attempt {n} recorded exit {recorded}, "
                                  f"its ledger says {end[1]}")
        # ...and the job's own exit is one of its attempts' (the one that stands).
        for job_id, job in jobs.items():
            if job["state"] in ("completed", "failed") and job.get("exit_code") is not None:
                codes = {c for (j, _), c in self.exits.items() if j == job_id}
                if job["exit_code"] not in codes:
                    violations.append(f"job {job_id}: {job['state']} with exit "
                                      f"{job['exit_code']}, no attempt recorded it {sorted(codes)}")
        violations += self.tracebacks()
        check = self.cli("queue", "check", "--json", timeout=300)
        if check.returncode != 0:
            violations.append(f"queue check: {(check.stdout or check.stderr).strip()[:2000]}")
        states = Counter(j["state"] for j in jobs.values())
        return {
            "jobs": {"acknowledged": len(self.acked), "in_queue": len(jobs),
                     "attempts_run": len(starts), "states": dict(states)},
            "submit_errors": dict(self.submit_errors),
            "violations": violations,
            "unproven": unproven,
            "reran_after_unreported_success": reran,
            "events": dict(self.told),
            "planned_stops": len(self.planned),
            "killed_by_planned_stop": len(self.fenced_in_planned),
        }


    def tracebacks(self) -> list[str]:
        """Nothing crashed: no traceback in daemon.log or a runner's log."""
        logs = [self.nvq.home / "daemon.log", *(n.home / "runner.log" for n in self.nodes)]
        out = []
        for log in logs:
            with contextlib.suppress(OSError):
                text = log.read_text(errors="replace")
                if "Traceback" in text:
                    last = [ln for ln in text.splitlines() if ln and not ln[0].isspace()
                            and "Error" in ln]
                    out.append(f"{log.name} of {log.parent.name}: {text.count('Traceback')} "
                               f"traceback(s), e.g. {(last or ['?'])[-1][:200]}")
        return out

    def ended_once(self, jobs: dict[int, dict[str, Any]]) -> list[str]:
        """Each job's event log ends it once: a second ending only as an exit that
        overrides a guess (`lost`, `reassigned`). Counts the events that tell of
        faults on the way (`self.told`)."""
        r = self.cli("queue", "events", "--since", "0", "--json", timeout=300)
        if r.returncode != 0:
            return [f"queue events: {_error(r)[:200]}"]
        endings: Counter[int] = Counter()
        for ev in json.loads(r.stdout)["events"]:
            if ev["kind"] in TOLD:
                self.told[ev["kind"]] += 1
            at = (ev.get("data") or {}).get("fenced_at")
            if ev["kind"] == "attempt_fenced" and isinstance(at, float | int) and any(
                    a <= at <= b for a, b in self.planned):
                self.fenced_in_planned.append(
                    f"job {ev['job_id']}: attempt {(ev.get('data') or {}).get('attempt')} "
                    f"fenced during a planned stop")
            data = ev.get("data") or {}
            if ev.get("job_id") is not None and data.get("exit_code") is not None \
                    and data.get("attempt") is not None:
                self.exits[(ev["job_id"], int(data["attempt"]))] = int(data["exit_code"])
            if ev["kind"] in ENDINGS and ev.get("job_id") is not None \
                    and "overrides" not in (ev.get("data") or {}):
                endings[ev["job_id"]] += 1
        return [f"job {i}: ended {endings[i]} times in its event log"
                for i in sorted(jobs) if endings[i] > 1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _minimum(text: str) -> tuple[str, int]:
    """`KIND=N` of `--at-least`."""
    kind, _, n = text.partition("=")
    if kind not in [*KINDS, "total"] or not n.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r}: want KIND=N, KIND one of {', '.join(KINDS)}, total")
    return kind, int(n)


def _error(r: subprocess.CompletedProcess[str]) -> str:
    """A failed call's error: its JSON error document's, else its last line."""
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(r.stdout)["error"])
    lines = (r.stderr.strip() or r.stdout.strip()).splitlines()
    return lines[-1] if lines else f"exit {r.returncode}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="how long faults are made")
    ap.add_argument("--drain", type=float, default=180.0, help="seconds allowed to finish")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--submitters", type=int, default=3)
    ap.add_argument("--at-least", action="append", default=[], metavar="KIND=N",
                    type=_minimum,
                    help="make at least N faults of KIND (or `total`), however the random "
                         "durations fall: owed kinds come first once the time left is "
                         "short, and the loop runs on (15 min at most) until they are made")
    ap.add_argument("--keep", action="store_true",
                    help="keep the ledger, queue.db and logs (copied to a directory named in the output)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="nvq-soak-"))
    fs = root / "qfs"
    fs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,mode=0700", "tmpfs", str(fs)],
                   check=True)
    nodes: list[SshdNode] = []
    nvq: Nvq | None = None
    doc: dict[str, Any] = {"bench": "soak", "machine": machine(), "seed": seed,
                           "minutes": args.minutes}
    try:
        nodes = start_sshd_nodes(root / "sshd", 3)
        nvq = make_nvq(fs, gpus=TWO_CARDS, sample_interval=1.0)
        write_mesh_config(nvq, nodes, gpus=TWO_CARDS, sample_interval=1.0, keepalive="1s")
        config = (nvq.home / "config.toml").read_text()
        for old, new in TIMES.items():
            config = config.replace(old, new)
        nvq.write_config(config)
        nvq.ok("queue", "status")
        soak = Soak(root, nvq, nodes, rng, fs)
        soak.at_least = dict(args.at_least)
        threads = [threading.Thread(target=soak.submitter, daemon=True)
                   for _ in range(args.submitters)]
        threads.append(threading.Thread(target=soak.watcher, daemon=True))
        for t in threads:
            t.start()
        soak.fault_loop(time.monotonic() + args.minutes * 60)
        soak.stop.set()
        for t in threads:
            t.join(timeout=120)
        soak.heal()
        doc |= soak.verdict(args.drain)
        doc["faults"] = dict(soak.faults) | {"total": sum(soak.faults.values())}
        doc["faults_not_made"] = soak.fault_errors
        doc["at_least"] = soak.at_least
        doc["faults_owed"] = soak.owed()
        doc["fault_loop_overran_s"] = round(soak.overran, 1)
    finally:
        if nvq is not None:
            with contextlib.suppress(Exception):
                nvq.shutdown()
        if args.keep:
            kept = Path(tempfile.mkdtemp(prefix="nvq-soak-kept-"))
            (root / "qfs" / "filler").unlink(missing_ok=True)
            subprocess.run(["cp", "-a", str(root), str(kept / "soak")], check=False,
                           capture_output=True)
            doc["kept"] = str(kept)
        for node in nodes:
            with contextlib.suppress(Exception):
                node.close()
        subprocess.run(["umount", "-l", str(fs)], check=False)
        shutil.rmtree(root, ignore_errors=True)
    doc["seconds"] = round(time.monotonic() - began, 1)
    emit(doc)


if __name__ == "__main__":
    os.chdir(ROOT / "bench")
    main()
