"""Launching, watching, killing and adopting job attempts. Each attempt runs as `/bin/sh
wrapper.sh <jobdir>` in its own session (see wrapper.sh). Exits are learnt at once, without
polling: every watched wrapper has a pidfd registered with the event loop, readable when the
process ends; the status comes from waitpid (the runner's own children) or the exit record."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import container, early_signal, exits, logcap, memlimit, ports, procfs, write_order
from .adoption import attempts, is_wrapper, reopen
from .job_socket import JobSockets
from .jobfiles import AttemptRecord, JobDir, new_record
from .jobworld import JobWorld, Prepared, PrepareError, SetupFailed, setup_reporter
from .protocol import ActiveJob, JobLost, JobStarted, JournaledEvent, Kill, LaunchFailed, Start
from .recovery import write_start
from .spawn import LaunchError, launch

log = logging.getLogger(__name__)

# Builds a journaled event from the seq the journal assigns; the sink journals and sends.
EventSink = Callable[[Callable[[int], JournaledEvent]], None]


@dataclass(eq=False)
class Running:
    rec: AttemptRecord
    dir: JobDir
    pidfd: int
    popen: Optional[subprocess.Popen[bytes]]  # None for an adopted attempt
    ended: asyncio.Future[None]
    timers: list[asyncio.TimerHandle] = field(default_factory=list)


class JobManager:
    def __init__(
        self, home: Path, emit: EventSink, changed: Callable[[], None] | None = None,
        job_umask: int = 0o022, world: JobWorld | None = None,
    ) -> None:
        self.root = home / "jobs"
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._job_umask = job_umask
        self._world = world
        self._emit = emit
        self._changed = changed or (lambda: None)
        self.running: dict[int, Running] = {}
        # job id → (directory, attempt) of a start waiting for an older one to end
        self._starting: dict[int, tuple[Path, int]] = {}
        self._dirs: dict[int, JobDir] = {}  # job id → directory of its latest Start
        self._boot_id = procfs.boot_id()
        self._last_port: int | None = ports.round_start(*ports.port_range())
        self._loop = asyncio.get_running_loop()
        # Each attempt's $NVQ_SOCKET; relays nothing until the runner gives it its link.
        self.sockets = JobSockets(lambda msg: False)
        self.order = write_order.OrderWatch()  # which stream each job wrote first

    # ------------------------------------------------------------ queries

    def active(self) -> list[ActiveJob]:
        return [ActiveJob(job_id=r.rec.job_id, attempt=r.rec.attempt, pid=r.rec.pid or 0,
                          started_at=r.rec.started_at) for r in self.running.values()]

    def sessions(self) -> dict[int, int]:
        """Wrapper pid (= session id of the job's processes) → job id."""
        return {r.rec.pid: job for job, r in self.running.items() if r.rec.pid}

    def progress(self) -> dict[int, str]:
        lines = {job: r.dir.progress() for job, r in self.running.items()}
        return {job: line for job, line in lines.items() if line is not None}

    def job_dir(self, job_id: int) -> JobDir:
        """The directory of the latest attempt prepared (`logs --setup`), started or killed."""
        return self._dirs.get(job_id) or JobDir(self.root, job_id)

    def _dir_of(self, job_id: int, queue_id: str, nonce: str) -> JobDir:
        if not queue_id and not nonce:
            return self.job_dir(job_id)
        return JobDir(self.root, job_id, queue_id, nonce)

    def _waiting(self, d: JobDir, attempt: int) -> bool:
        """True when this attempt (or a later one) of `d` waits for an older to end."""
        path, waiting = self._starting.get(d.job_id, (None, 0))
        return path == d.path and waiting >= attempt

    # ------------------------------------------------------------ start

    def _seen(self, d: JobDir, attempt: int) -> bool:
        """True when this attempt (or a later one) was already started or killed."""
        run = self.running.get(d.job_id)
        if run is not None and run.dir.path == d.path and run.rec.attempt >= attempt:
            return True
        if not os.path.isdir(d.path):
            return False  # a new directory (every first attempt): one stat, not two opens
        rec = d.read_record()
        if rec is not None and rec.attempt >= attempt:
            return True
        return d.read_tombstone() >= attempt

    def start(self, msg: Start) -> None:
        d = JobDir(self.root, msg.job_id, msg.queue_id, msg.nonce)
        if self._waiting(d, msg.attempt) or self._seen(d, msg.attempt):
            log.info("start of job %s attempt %s: already seen", msg.job_id, msg.attempt)
            return
        old = self.running.get(msg.job_id)
        if old is None:
            if self._world is not None and JobWorld.needed(msg):
                self._starting[msg.job_id], self._dirs[msg.job_id] = (d.path, msg.attempt), d
                self._loop.create_task(self._prepare_then_launch(self._world, msg, d))
                return
            self._launch(msg, d)
            return
        # An older attempt still runs (the daemon gave up on it): end it first, so
        # two attempts of one job never run at once.
        log.warning("job %s: ending attempt %s before starting %s",
                    msg.job_id, old.rec.attempt, msg.attempt)
        self._starting[msg.job_id] = (d.path, msg.attempt)
        self.terminate(old, "killed", msg.kill_grace)
        self._loop.create_task(self._start_after(msg, d, old))

    async def _start_after(self, msg: Start, d: JobDir, old: Running) -> None:
        try:
            await asyncio.shield(old.ended)
        finally:
            if self._starting.get(msg.job_id) == (d.path, msg.attempt):
                del self._starting[msg.job_id]
        if not self._seen(d, msg.attempt):
            self.start(msg)

    async def _prepare_then_launch(self, world: JobWorld, msg: Start, d: JobDir) -> None:
        """Build the job's world off the loop's back; launch it unless a Kill came."""
        error: str | None = None
        prepared, phase = Prepared(), ""
        try:
            prepared = await world.prepare(msg, d, setup_reporter(self._emit, msg))
        except PrepareError as exc:
            error, phase = str(exc), "setup" if isinstance(exc, SetupFailed) else ""
        except Exception as exc:
            log.exception("job %s: preparing its world failed", msg.job_id)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            if self._starting.get(msg.job_id) == (d.path, msg.attempt):
                del self._starting[msg.job_id]
        if self._seen(d, msg.attempt):
            return
        if error is not None:
            self._fail_launch(msg, d, new_record(msg, self._boot_id), error, phase)
            return
        self._launch(msg, d, prepared)

    def _fail_launch(self, msg: Start, d: JobDir, rec: AttemptRecord, error: str,
                     phase: str = "") -> None:
        log.warning("job %s attempt %s: launch failed: %s", msg.job_id, msg.attempt, error)
        self.sockets.close(msg.job_id)
        if self._world is not None:
            self._world.attempt_ended(msg.job_id)  # no artifacts mount left behind
        self._dirs[msg.job_id] = d
        self._emit(lambda seq: LaunchFailed(seq=seq, job_id=msg.job_id, attempt=msg.attempt,
                                            error=error, at=time.time(), phase=phase))
        rec.done = True
        with contextlib.suppress(OSError):
            d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            d.write_record(rec)

    def _next_port(self) -> int | None:
        """A port free here that no live attempt holds (None: run without one)."""
        taken = {r.rec.port for r in self.running.values() if r.rec.port is not None}
        port = ports.pick(taken, self._last_port, *ports.port_range())
        self._last_port = self._last_port if port is None else port
        return port

    def _launch(self, msg: Start, d: JobDir, prepared: Prepared | None = None) -> None:
        rec = new_record(msg, self._boot_id)
        rec.port = self._next_port()
        self._dirs[msg.job_id] = d
        write_start(d, msg)  # so a queue that forgets the job can know it again
        self.order.watch(d.path, msg.attempt, cap=msg.max_log_size)  # before the job can write
        try:
            popen, pidfd = launch(msg, d, rec, self._job_umask, prepared, self.sockets.offer)
        except LaunchError as exc:
            self.order.unwatch(d.path)
            self._fail_launch(msg, d, rec, str(exc))
            return
        dropped = list(prepared.dropped) if prepared is not None else []
        run = Running(rec=rec, dir=d, pidfd=pidfd, popen=popen,
                      ended=self._loop.create_future())
        self._watch(run)
        self._emit(lambda seq: JobStarted(seq=seq, job_id=msg.job_id, attempt=msg.attempt,
                                          pid=popen.pid, started_at=rec.started_at,
                                          env_dropped=dropped, port=rec.port))
        # Written after JobStarted is journaled: a record with a pid always means the
        # start was announced (see adopt_all for the record without one).
        self._save(run)
        self._changed()

    async def cap_logs(self) -> None:
        """Cut the middle out of running jobs' logs that passed their cap."""
        runs = list(self.running.values())
        cut = await asyncio.to_thread(logcap.cut_logs, [(r.dir, r.rec.max_log_size) for r in runs])
        assert len(runs) == len(cut)  # zip(strict=) is 3.10+; the runner runs on 3.9
        for run, was_cut in zip(runs, cut):
            if was_cut and not run.rec.log_truncated and not run.rec.done:
                run.rec.log_truncated = True
                self._save(run)

    # ------------------------------------------------------------ watching

    def _watch(self, run: Running) -> None:
        self.running[run.rec.job_id] = run
        self._loop.add_reader(run.pidfd, self._on_exit, run)
        rec = run.rec
        if rec.kill_reason is not None:
            if rec.killed_hard:
                self._signal(run, signal.SIGKILL)
            else:
                self._at(run, rec.kill_at or time.time(), self._kill_hard, run)
        elif rec.deadline is not None:
            if rec.signal_at is not None and not rec.signalled:
                self._at(run, rec.signal_at, early_signal.send, self, run)
            self._at(run, rec.deadline, self.terminate, run, "timeout", rec.kill_grace)

    def _at(self, run: Running, when: float, fn: Callable[..., object], *args: object) -> None:
        run.timers.append(self._loop.call_later(max(0.0, when - time.time()), fn, *args))

    def _save(self, run: Running) -> None:
        self._try_save(run.dir, run.rec)

    def _on_exit(self, run: Running) -> None:
        self._loop.remove_reader(run.pidfd)
        os.close(run.pidfd)
        for t in run.timers:
            t.cancel()
        rec, d = run.rec, run.dir
        if rec.kill_reason is not None and rec.pid:
            # Stragglers of a killed job would keep holding its GPUs. The wrapper is
            # not reaped yet, so the group id cannot have been reused.
            self._signal(run, signal.SIGKILL)
        status = run.popen.wait() if run.popen is not None else None
        if self._world is not None:
            self._world.attempt_ended(rec.job_id)
        self._finish(rec, d, status)  # before the cgroup goes: it reads its OOM count
        memlimit.remove_cgroup(f"nvq-{rec.job_id}-{rec.attempt}")
        if rec.container:
            container.remove(rec.runtime, rec.container)
        del self.running[rec.job_id]
        self.order.unwatch(d.path)
        self.sockets.close(rec.job_id)
        if not run.ended.done():
            run.ended.set_result(None)
        self._changed()

    def _finish(self, rec: AttemptRecord, d: JobDir, status: int | None) -> None:
        """Journal how an attempt ended, from the wrapper's record or waitpid status."""
        ended = exits.exit_status(rec, d, status)
        if ended is None:
            self._lost(rec, d, "process gone without an exit record "
                                "(killed outside its wrapper, or the node rebooted)")
            return
        over = [p for p in (d.stdout, d.stderr) if logcap.over_cap(p, rec.max_log_size)]
        oom = memlimit.oom_kills(f"nvq-{rec.job_id}-{rec.attempt}") > 0
        event = exits.exited(rec, d, *ended, waited=status is not None,
                             truncated=rec.log_truncated or bool(over), oom_killed=oom)
        for path in over:  # written since the last check: cut it off the event loop
            self._loop.run_in_executor(None, logcap.cut_log, path, rec.max_log_size)
        self._emit(event)
        rec.done = True
        self._try_save(d, rec)

    def _lost(self, rec: AttemptRecord, d: JobDir, reason: str) -> None:
        self._emit(lambda seq: JobLost(seq=seq, job_id=rec.job_id, attempt=rec.attempt,
                                       reason=reason, at=time.time()))
        rec.done = True
        self._try_save(d, rec)

    def _try_save(self, d: JobDir, rec: AttemptRecord) -> None:
        try:
            d.write_record(rec)
        except OSError as exc:
            log.error("job %s: cannot write attempt.json: %s", rec.job_id, exc)

    # ------------------------------------------------------------ killing

    def _signal(self, run: Running, sig: signal.Signals) -> None:
        if run.rec.container:  # the container's processes are not the wrapper's children
            container.signal(run.rec.runtime, run.rec.container, sig)
        if not run.rec.pid:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.rec.pid, sig)

    def terminate(self, run: Running, reason: str, grace: float, sig: int = 0) -> None:
        rec = run.rec
        kill_at = time.time() + max(0.0, grace)
        if rec.kill_reason is not None:
            if rec.killed_hard or (rec.kill_at is not None and rec.kill_at <= kill_at):
                return  # already ending at least as fast
        else:
            rec.kill_reason = reason
        rec.kill_at = kill_at
        self._save(run)
        self._signal(run, signal.Signals(sig or signal.SIGTERM))
        self._at(run, kill_at, self._kill_hard, run)

    def _kill_hard(self, run: Running) -> None:
        if run.rec.killed_hard or run.rec.job_id not in self.running:
            return
        run.rec.killed_hard = True
        self._save(run)
        self._signal(run, signal.SIGKILL)

    def kill(self, msg: Kill) -> None:
        d = self._dir_of(msg.job_id, msg.queue_id, msg.nonce)
        run = self.running.get(msg.job_id)
        if run is not None and run.dir.path == d.path and run.rec.attempt == msg.attempt:
            self.terminate(run, "killed", msg.grace, msg.signal)
            return
        if self._starting.get(msg.job_id) != (d.path, msg.attempt) and self._seen(d, msg.attempt):
            return  # older than what runs, already ended, or already tombstoned
        # Never started: make sure it never will be, and say so.
        d.write_tombstone(msg.attempt)
        self._dirs[msg.job_id] = d
        self._emit(lambda seq: JobLost(seq=seq, job_id=msg.job_id, attempt=msg.attempt,
                                       reason="killed before start", at=time.time()))

    # ------------------------------------------------------------ adoption

    def adopt_all(self, journaled: set[tuple[str, int, int]]) -> None:
        """After a runner restart: take over attempts whose wrappers still run, and
        report those that ended (or vanished) while no runner was watching.
        `journaled` holds (tag, job, attempt) of unacknowledged journal events, so
        nothing already journaled is journaled twice."""
        latest: dict[int, float] = {}
        for rec, d in attempts(self.root):
            job_id = rec.job_id
            if rec.started_at >= latest.get(job_id, -1.0):
                latest[job_id] = rec.started_at
                self._dirs[job_id] = d
            if rec.done:
                continue
            key = (rec.job_id, rec.attempt)
            if ("exited", *key) in journaled or ("lost", *key) in journaled \
                    or ("launch_failed", *key) in journaled:
                rec.done = True
                self._try_save(d, rec)
                continue
            try:
                self._adopt(rec, d, journaled)
            except Exception:
                log.exception("job %s: adoption failed", job_id)

    def _adopt(self, rec: AttemptRecord, d: JobDir, journaled: set[tuple[str, int, int]]) -> None:
        same_boot = rec.boot_id == self._boot_id
        if rec.pid is None:
            # The runner died between writing the record and announcing the start.
            pid = d.read_wrapper_pid()
            if pid is None and d.read_exit() is None:
                self._emit(lambda seq: LaunchFailed(
                    seq=seq, job_id=rec.job_id, attempt=rec.attempt,
                    error="the runner stopped while launching", at=time.time()))
                rec.done = True
                self._try_save(d, rec)
                return
            rec.pid = pid
            if pid is not None and same_boot and is_wrapper(pid, d):
                rec.start_ticks = procfs.start_ticks(pid)
            if ("started", rec.job_id, rec.attempt) not in journaled:
                self._emit(lambda seq: JobStarted(seq=seq, job_id=rec.job_id,
                                                  attempt=rec.attempt, pid=pid or 0,
                                                  started_at=rec.started_at))
            self._try_save(d, rec)
        pidfd = reopen(rec) if same_boot else None
        if pidfd is None:
            self._finish(rec, d, None)
            return
        log.info("adopting job %s attempt %s (pid %s)", rec.job_id, rec.attempt, rec.pid)
        self.sockets.reopen(rec.job_id, rec.attempt, d)
        self.order.watch(d.path, rec.attempt, adopted=True, cap=rec.max_log_size)
        self._watch(Running(rec=rec, dir=d, pidfd=pidfd, popen=None,
                            ended=self._loop.create_future()))

    def close(self) -> None:
        """Stop watching (the runner is exiting); the jobs themselves run on."""
        for run in self.running.values():
            self._loop.remove_reader(run.pidfd)
            os.close(run.pidfd)
            for t in run.timers:
                t.cancel()
        self.running.clear()

