"""The resident runner: one Unix socket, one daemon connection at a time, the job
manager, the journal and the sampler, all on one asyncio loop. A new connection
replaces the old one (a daemon reconnecting after a half-dead SSH link must win). Each
connection gets `Hello`, then every unacknowledged journaled event in seq order, then
live traffic, all written in one synchronous step: nothing live overtakes the replay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import __version__, container, owner, procfs, vram_peaks
from . import protocol as p
from .allocation import allocated_gpus
from .blobcache import BlobCache
from .blobfetch import BlobFetcher
from .conn import Conn
from .daemon_messages import DAEMON_MESSAGES
from .gpu import GpuBackend, GpuFacts, Watched, open_backend
from .identity import QueueMemory
from .image_stage import ImageStager
from .job_artifacts import JobArtifacts
from .job_socket import JobSockets
from .jobs import JobManager
from .jobworld import JobWorld
from .journal import Journal
from .lease import Lease, fence, keep
from .outframes import fit_event
from .sampling import worth_sending

log = logging.getLogger("nvq_runner")
SOCKET = "runner.sock"
JOURNAL_RETRY = 1.0  # seconds between tries to journal held events


class Runner:
    def __init__(self, home: Path, job_umask: int = 0o022) -> None:
        self.home = home
        self.conn: Conn | None = None
        self._wake = asyncio.Event()
        self._last_sent: p.Sample | None = None  # and on which connection (a new daemon
        self._sampled_for: Conn | None = None  # gets a sample at once)
        self._peaks = vram_peaks.PeakRecorder()
        self._stop = asyncio.Event()
        self.interval = _float_env("NVQ_SAMPLE_INTERVAL", 2.0)
        self.backend: GpuBackend = Watched(open_backend(os.environ), os.environ)
        self._facts = GpuFacts()
        self.journal = Journal(home / "journal")
        self._held: list[p.JournaledEvent] = []  # made but not yet journaled, in seq order
        self._retry: asyncio.TimerHandle | None = None
        self.queue = QueueMemory(home)
        self.fetcher = BlobFetcher(BlobCache(home / "cache"), self._send_now)
        self.job_artifacts = JobArtifacts(self.fetcher)
        self.world = JobWorld(home, self.fetcher.cache, self.fetcher, self.job_artifacts)
        self.jobs = JobManager(home, self._record, self._wake.set, job_umask, self.world)
        self.jobs.sockets = JobSockets(self._send_now)  # jobs' $NVQ_SOCKET, relayed
        self.images = ImageStager(home, self.fetcher.cache, self.fetcher, self._send_now)
        self.world.on_image_loaded = self.images.report
        self.owner: p.Owner | None = None  # set by the daemon on each connection
        self.lease = Lease()
        self._busy: p.Busy | None = None  # last reported

    # ------------------------------------------------------------ events

    def _record(self, build: Callable[[int], p.JournaledEvent]) -> None:
        """Journal (durably) and then send one event."""
        seq = (self._held[-1].seq if self._held else self.journal.head) + 1
        self._held.append(fit_event(build(seq)))
        self._journal_held()

    def _journal_held(self) -> None:
        """Journal and send held events in seq order. An event the journal cannot
        write (disk full) is never sent: it waits in memory, with those after it, and
        is retried every second; until then the daemon learns nothing it could lose."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        while self._held:
            event = self._held[0]
            try:
                self.journal.append(event)
            except OSError as exc:
                log.error("journal write failed (%s); holding %d event(s) from seq %s",
                          exc, len(self._held), event.seq)
                if self._retry is None:
                    self._retry = asyncio.get_running_loop().call_later(
                        JOURNAL_RETRY, self._journal_held)
                return
            self._held.pop(0)
            log.debug("event %s", event)
            if self.conn is not None:
                self.conn.send(event)

    def _send_now(self, msg: p.RunnerMsg) -> bool:
        """Send an unjournaled frame; False when no daemon is connected."""
        if self.conn is None or self.conn.closed:
            return False
        self.conn.send(msg)
        return not self.conn.closed

    def facts(self) -> GpuFacts:
        try:
            self._facts = self.backend.facts()
        except Exception as exc:  # a fake gpus.toml mid-edit: keep the last good facts
            log.warning("GPU facts unavailable: %s", exc)
        return self._facts

    def hello(self) -> p.Hello:
        facts = self.facts()
        return p.Hello(
            hostname=socket.gethostname(),
            runner_version=__version__,
            protocol=p.PROTOCOL_VERSION,
            backend=self.backend.name,
            cuda=facts.cuda,
            driver=facts.driver,
            mem_total_mb=procfs.meminfo_mb("MemTotal"),
            cpus=procfs.cpu_count(),
            gpus=facts.gpus,
            active=self.jobs.active(),
            journal_head=self.journal.head,
            boot_id=procfs.boot_id(), pid=os.getpid(),
            journal_id=self.journal.id,
            features=["owner", "world", "chunked_artifacts", "lease", "recover",
                      "relay", "inputs", "chunk_reads", "images"],
            queue_id=self.queue.mark.queue_id,
            max_job_id=self.queue.mark.max_job_id,
            allocated=allocated_gpus(os.environ, len(facts.gpus)),
            started_at=procfs.STARTED_AT, runtimes=container.found_runtimes(),
        )

    # ------------------------------------------------------------ connections

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.conn is not None:
            log.info("new daemon connection replaces the old one")
            self.conn.close()
        conn = Conn(reader, writer)
        self.conn = conn
        self.lease.renew()  # `attach` connects only for a daemon that reached us
        conn.send(self.hello())
        for event in self.journal.unacked():
            conn.send(event)
        self._wake.set()
        frames = p.FrameReader()
        try:
            while not conn.closed:
                data = await reader.read(65536)
                if not data:
                    break
                for payload in frames.feed(data):
                    if conn is self.conn:
                        self.lease.renew()
                    self._dispatch(conn, p.decode_daemon_payload(payload))
        except p.FrameError as exc:
            log.warning("dropping daemon connection: %s", exc)
        except ConnectionError:
            pass
        except asyncio.CancelledError:
            # Shutting down. Not re-raised: asyncio's stream server (3.11) logs a
            # cancelled handler task as an error.
            pass
        finally:
            conn.close()
            if self.conn is conn:
                self.conn = None
                self.fetcher.connection_lost()
                self.jobs.sockets.connection_lost()

    def _dispatch(self, conn: Conn, msg: p.DaemonMsg) -> None:
        answer = DAEMON_MESSAGES.get(type(msg))
        if answer is None:  # a union member without a row: tests/runner/test_daemon_messages.py
            raise TypeError(f"no answer registered for daemon message {type(msg).__name__}")
        try:
            answer(self, conn, msg)
        except Exception:
            log.exception("handling %s failed", msg)

    def wake(self) -> None:
        """Sample (and report) now, not at the next interval."""
        self._wake.set()

    def set_owner(self, msg: p.Owner) -> None:
        self.owner = msg
        self._busy = None  # report afresh on this connection
        self._wake.set()

    async def _sync_requests(self, conn: Conn) -> None:
        """Jobs that touched `$NVQ_ARTIFACTS/.sync`: the daemon syncs them now."""
        runs = list(self.jobs.running.values())
        wanted = await asyncio.to_thread(
            lambda: [r for r in runs if JobArtifacts.sync_wanted(r.dir.artifacts)])
        for run in wanted:
            conn.send(p.SyncWanted(job_id=run.rec.job_id, attempt=run.rec.attempt))

    def _report_busy(self) -> None:
        """Tell the daemon when the owner's activity changes (checked every sample)."""
        if self.owner is None or self.conn is None:
            return
        if self.owner.user is None:
            now = p.Busy(busy=False)
        else:
            act = owner.activity(self.owner.user, self.owner.idle)
            now = p.Busy(busy=act.busy, sessions=act.sessions, idle=act.idle)
        if self._busy is None or now.busy != self._busy.busy:
            self._busy = now
            self.conn.send(now)

    # ------------------------------------------------------------ sampling

    async def _sampler(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()
            # Jobs running while the daemon is away still have their peaks taken.
            if self.conn is None and not self.jobs.running:
                continue
            try:
                self._report_busy()
            except Exception as exc:
                log.warning("owner activity check failed: %s", exc)
            runs = {job: (r.rec.attempt, r.dir) for job, r in self.jobs.running.items()}
            try:
                sample = await asyncio.to_thread(
                    self._peaks.sample, self.backend, self.jobs.sessions(), runs
                )
            except Exception as exc:
                log.warning("sample failed: %s", exc)
                continue
            conn = self.conn
            if conn is not None and (
                conn is not self._sampled_for or worth_sending(self._last_sent, sample)
            ):
                conn.send(sample)
                self._last_sent, self._sampled_for = sample, conn
            if conn is not None:
                try:
                    await self._sync_requests(conn)
                except Exception as exc:
                    log.warning("artifacts sync request check failed: %s", exc)

    async def _log_keeper(self) -> None:
        interval = _float_env("NVQ_LOG_CHECK_INTERVAL", 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.jobs.cap_logs()
            except Exception:
                log.exception("log size check failed")

    # ------------------------------------------------------------ lifetime

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        journaled = {
            (str(type(e).__struct_config__.tag), e.job_id, e.attempt)
            for e in self.journal.unacked()
        }
        # A runner killed with artifacts mounted left them dead ("Transport endpoint
        # is not connected"): take them down before anything looks at job dirs.
        await asyncio.to_thread(JobArtifacts.clean_stale, self.jobs.root)
        self.jobs.adopt_all(journaled)
        await asyncio.gather(*(self.job_artifacts.remount(job_id, run.dir.artifacts)
                               for job_id, run in list(self.jobs.running.items())))
        self.world.inputs.remount_all({i: r.dir.inputs for i, r in self.jobs.running.items()})
        # Bound relative to the home (our cwd): socket paths are limited to ~107 bytes.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SOCKET)
        # Made under the runner's umask 077, so it is never open to others.
        server = await asyncio.start_unix_server(self._on_connect, path=SOCKET)
        os.chmod(SOCKET, 0o600)
        sampler = asyncio.create_task(self._sampler())
        log_keeper = asyncio.create_task(self._log_keeper())
        lease_keeper = asyncio.create_task(
            keep(self.lease, partial(fence, self.jobs, self._record)))
        log.info("runner %s serving on %s (backend %s)",
                 os.getpid(), self.home / SOCKET, self.backend.name)
        try:
            await self._stop.wait()
        finally:
            log.info("runner stopping; jobs keep running")
            if self._held:
                log.error("stopping with %d event(s) never journaled", len(self._held))
            for task in (sampler, log_keeper, lease_keeper):
                task.cancel()
            server.close()
            if self.conn is not None:
                self.conn.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SOCKET)
            self.jobs.close()
            self.journal.close()
            self.queue.flush()
            self.backend.close()


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default

